"""The judges page (``/lead/judges``): each LLM judge's runs, costs, calibration verdicts, the labels it
filled, its PPI estimate and canary results, as :func:`ndcg_labeling.workspace.judges.judges_overview`
reads them. Read only: judges are run and calibrated from the terminal."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ndcg_labeling.web.deps import LeadCaller, SessionDep
from ndcg_labeling.web.render import admin_page
from ndcg_labeling.workspace.judges import judges_overview

router = APIRouter()


@router.get("/judges")
def judges(request: Request, caller: LeadCaller, session: SessionDep) -> Response:
    return admin_page(request, caller, "judges", judges=judges_overview(session=session))
