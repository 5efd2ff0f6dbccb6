"""Who may do what in the served app: sign-in (auth), ingest keys, the grading use cases the web pages
call, and the lead's batch and people pages."""
