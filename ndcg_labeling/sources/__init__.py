"""Labels that do not come from people: click-model labels from behavior logs, LLM judge runs (and the
answers they store), calibration of a judge or a behavior source against people, and the judge fill that
consensus can apply."""
