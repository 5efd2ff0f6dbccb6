"""Rankings straight from search engines: search configurations, snapshots (stored runs named
``CONFIG@TIMESTAMP``), their differences, and the pool of the documents a snapshot brings unjudged.

Modules: ``engine_kinds`` (pure: per engine kind the endpoint, the default id and score paths, the
credential header, reading a response and an error), ``templates`` (pure: the request template's named
variables, JSON-escaped), ``fetch`` (the concurrent requests, retried by :mod:`ndcg_labeling.io.http`),
and the use cases ``configs``, ``take``, ``diff`` and ``pool``.
"""
