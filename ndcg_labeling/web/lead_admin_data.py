"""Uploads (``/lead/data``): queries, documents, graders, runs, judgments and gold items, each through
the importer its ``import ...`` / ``gold import`` command uses. A bad file is shown as the importer's
one line (``Error: queries.csv:3: problem``) and nothing is stored (the transaction rolls back)."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, File, Form, Request, UploadFile
from fastapi.responses import RedirectResponse, Response

from ndcg_labeling.errors import NdcgLabelingError
from ndcg_labeling.scales import SCALES
from ndcg_labeling.web.deps import LeadCaller, SessionDep, WriterDep, check_form_csrf, status_of
from ndcg_labeling.web.render import admin_page
from ndcg_labeling.workspace import lead as admin

router = APIRouter()


def _data_page(request: Request, caller: LeadCaller, session: Any, status_code: int = 200, **values: Any) -> Response:
    values.setdefault("kind", "")
    return admin_page(request, caller, "data", status_code, kinds=admin.upload_kinds(), scales=tuple(SCALES),
                      systems=admin.system_names(session=session), **values)


@router.get("/data")
def data(request: Request, caller: LeadCaller, session: SessionDep, done: str | None = None) -> Response:
    return _data_page(request, caller, session, done=done)


@router.post("/data/{kind}")
def upload(request: Request, kind: str, caller: LeadCaller, writer: WriterDep, session: SessionDep,
           file: Annotated[UploadFile, File()], scale: Annotated[str, Form()] = "",
           system: Annotated[str, Form()] = "", grader: Annotated[str, Form()] = "",
           fmt: Annotated[str, Form()] = "", replace: Annotated[bool, Form()] = False,
           create_graders: Annotated[bool, Form()] = False, description: Annotated[str, Form()] = "",
           grader_kind: Annotated[str, Form()] = "human", csrf: Annotated[str | None, Form()] = None) -> Response:
    """Import the uploaded file as ``kind`` with the CLI's importer and options."""
    check_form_csrf(request, csrf)
    options: dict[str, Any] = {"scale": scale, "system": system, "grader": grader, "fmt": fmt, "replace": replace,
               "create_graders": create_graders, "description": description, "grader_kind": grader_kind}
    try:
        with admin.saved_upload(file.file, file.filename) as saved:
            summary = writer(lambda s: admin.import_upload(kind, saved, session=s, **options))
    except NdcgLabelingError as exc:
        return _data_page(request, caller, session, status_of(exc), kind=kind, error=f"Error: {exc}")
    return RedirectResponse(f"/lead/data?{urlencode({'done': summary})}", status_code=303)
