"""``serve``: the web workspace (FastAPI under uvicorn) over the same database and pipeline."""

from __future__ import annotations

from typing import Annotated

import typer

from ndcg_labeling.cli.common import DbOption, err_console, handle_errors


def serve(
    host: Annotated[str, typer.Option("--host", help="Interface to listen on; 0.0.0.0 for the team's network.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 8000,
    db: DbOption = None,
) -> None:
    """Serve the web workspace: graders grade in a browser, the lead follows batches and adjudicates."""
    from ndcg_labeling.web.app import create_app, run_server, server_engine

    with handle_errors():
        engine = server_engine(db)

    err_console.print(f"ndcg-labeling workspace on http://{host}:{port}/ (database "
                      f"{engine.url.render_as_string(hide_password=True)}); Ctrl+C stops it", markup=False)
    try:
        run_server(create_app(engine), host=host, port=port)
    finally:
        engine.dispose()


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)
