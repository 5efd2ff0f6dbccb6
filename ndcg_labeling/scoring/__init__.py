"""Numbers from labels: ``report`` (with its caveats, gate, leaders and moved pairs), ``eval`` (trec_eval
measures and preferences), ``plan`` and the inferred (sampled-batch) estimates."""
