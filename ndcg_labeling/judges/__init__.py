"""LLM judges: grade (query, document) items with any OpenAI-compatible Chat Completions endpoint.

The room holds what needs no database (docs/judges.md):

* :mod:`.prompts`: the prompt templates (``umbrela``, written for this product after the structure of
  UMBRELA, Upadhyay et al. 2024, and Thomas et al. 2024) and templates from a file with documented
  ``{{placeholders}}``; a template's sha256 and version;
* :mod:`.parser`: the strict answer parser, exactly ``{"grade": N}`` with N on the scale;
* :mod:`.client`: the request body, its cache key and the HTTP client (retries with exponential
  backoff on 429/5xx/timeouts honouring ``Retry-After``, a rate limit); the API key never reaches a
  log line, a message or the cache key;
* :mod:`.runner`: many requests at a bounded concurrency, each answer handed to a callback as it
  arrives (the use case :mod:`ndcg_labeling.sources.judge_runs` stores it in a short transaction).

Nothing here imports sqlalchemy, pandas or the pipeline.
"""
