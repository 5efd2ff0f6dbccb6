"""The served workspace (``ndcg-labeling serve``): FastAPI routers, Jinja2 templates, sign-in.

Handlers are thin: inputs -> a database session -> one call of :mod:`ndcg_labeling.workspace.grading`
(or :mod:`ndcg_labeling.workspace.auth`) -> a template or a JSON body. :func:`create_app` builds the
application for an engine or a database URL; nothing is created at import time.
"""
