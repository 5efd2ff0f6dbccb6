"""What differs between search engines, as data: per kind the endpoint, the default id and score paths,
how the credential is sent, and how a result list and an error are read from a response.

| kind | request | id path | score path | credential |
|---|---|---|---|---|
| elasticsearch, opensearch | POST ``{url}/{index}/_search`` | ``hits.hits[]._id`` | ``hits.hits[]._score`` | ``ApiKey`` (Basic when the value is ``user:password``) |
| solr | POST ``{url}/{index}/select`` (JSON Request API) | ``response.docs[].id`` | ``response.docs[].score`` | Basic (``user:password``) |
| vespa | POST ``{url}/search/`` | ``root.children[].fields.id`` | ``root.children[].relevance`` | Bearer |
| http-json | POST ``{url}`` | (required) | (optional) | Bearer |

A path is dotted names with one ``[]`` marking the list of results: ``hits.hits[]._id`` is the field
``_id`` of every element of ``hits.hits``. The id and the score path share the list (checked when a
configuration is added), so each result's id and score come from the same element.

Reading a list (:func:`read_hits`): an id that repeats is kept at its first rank and counted; a result
without an id is skipped and counted; when any result of a list has no numeric score, the list's scores
are replaced by descending pseudo-scores from its rank order (n, n-1, ..., 1) and that is counted.
"""

from __future__ import annotations

import base64
import json
import math
from dataclasses import dataclass, field
from typing import Any

from ndcg_labeling.choices import SearchKind
from ndcg_labeling.errors import NdcgLabelingError

KINDS = tuple(k.value for k in SearchKind)
DEFAULT_PATHS: dict[str, tuple[str | None, str | None]] = {
    "elasticsearch": ("hits.hits[]._id", "hits.hits[]._score"),
    "opensearch": ("hits.hits[]._id", "hits.hits[]._score"),
    "solr": ("response.docs[].id", "response.docs[].score"),
    "vespa": ("root.children[].fields.id", "root.children[].relevance"),
    "http-json": (None, None),
}
NEEDS_INDEX = ("elasticsearch", "opensearch", "solr")


@dataclass(frozen=True)
class ResultPath:
    """A path split at its ``[]``: the list's keys, then the keys inside each element."""

    to_list: tuple[str, ...]
    in_item: tuple[str, ...]

    @property
    def text(self) -> str:
        return ".".join(self.to_list) + "[]" + ("." + ".".join(self.in_item) if self.in_item else "")


def parse_path(path: str, what: str) -> ResultPath:
    """``hits.hits[]._id`` -> ResultPath(("hits", "hits"), ("_id",)); exactly one ``[]``, no empty name."""
    if path.count("[]") != 1:
        raise NdcgLabelingError(f"{what} {path!r} must mark the list of results with one '[]' "
                                "(e.g. hits.hits[]._id)")
    head, tail = path.split("[]")
    to_list = tuple(head.split(".")) if head else ()
    in_item = tuple(tail[1:].split(".")) if tail.startswith(".") else (() if not tail else ("",))
    if not to_list or any(not k for k in to_list + in_item):
        raise NdcgLabelingError(f"{what} {path!r} is not a dotted path with one '[]' (e.g. hits.hits[]._id)")
    return ResultPath(to_list, in_item)


def resolve_paths(kind: str, id_path: str | None, score_path: str | None) -> tuple[str, str | None]:
    """The id and score paths of a configuration: the ones given, else the kind's defaults; checked."""
    if kind not in KINDS:
        raise NdcgLabelingError(f"--kind must be one of {', '.join(KINDS)}, got {kind!r}")
    default_id, default_score = DEFAULT_PATHS[kind]
    id_path, score_path = id_path or default_id, score_path or default_score
    if id_path is None:
        raise NdcgLabelingError(f"--kind {kind} needs --id-path (e.g. results[].doc_id)")
    ids = parse_path(id_path, "--id-path")
    if score_path is not None and parse_path(score_path, "--score-path").to_list != ids.to_list:
        raise NdcgLabelingError(f"--score-path {score_path!r} must read the same list as --id-path {id_path!r}")
    return id_path, score_path


def endpoint(kind: str, url: str, index: str | None) -> str:
    """Where a kind's search request goes."""
    base = url.rstrip("/")
    if kind in NEEDS_INDEX:
        if not index:
            raise NdcgLabelingError(f"--kind {kind} needs --index (the index or collection to search)")
        return f"{base}/{index}/{'select' if kind == 'solr' else '_search'}"
    if kind == "vespa":
        return f"{base}/search/"
    return base


def auth_header(kind: str, secret: str | None, key_env: str | None, header: str | None = None) -> dict[str, str]:
    """The header carrying the credential, as the engine expects it (``header``: a header of the API's own,
    the value sent bare, for vespa and http-json); none without a credential."""
    if not secret:
        return {}
    if header:
        return {header: secret}
    if kind in ("elasticsearch", "opensearch", "solr") and ":" in secret:
        return {"Authorization": "Basic " + base64.b64encode(secret.encode()).decode()}
    if kind == "solr":
        raise NdcgLabelingError(f"Solr takes Basic authentication: ${key_env} must hold user:password")
    if kind in ("elasticsearch", "opensearch"):
        return {"Authorization": f"ApiKey {secret}"}
    return {"Authorization": f"Bearer {secret}"}


@dataclass
class Hits:
    """One query's result list: ids in rank order, their scores, and what was odd."""

    ids: list[str]
    scores: list[float]
    duplicates: int = 0
    without_id: int = 0
    pseudo_scores: bool = False
    notes: list[str] = field(default_factory=list)


def _walk(data: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def read_hits(body: Any, id_path: str, score_path: str | None, depth: int) -> Hits:
    """The first ``depth`` results of a parsed response body, as the module docstring says. A body
    without the list is an error naming the path."""
    ids_at = parse_path(id_path, "--id-path")
    items = _walk(body, ids_at.to_list)
    if not isinstance(items, list):
        raise NdcgLabelingError(f"the response has no list at {'.'.join(ids_at.to_list)} (the --id-path "
                                f"{id_path!r}); it starts {json.dumps(body)[:120]!r}")
    score_in = parse_path(score_path, "--score-path").in_item if score_path else None
    out = Hits([], [])
    seen: set[str] = set()
    raw_scores: list[float | None] = []
    for item in items:
        if len(out.ids) >= depth:
            break
        value = _walk(item, ids_at.in_item)
        if value is None or isinstance(value, dict | list) or value == "":
            out.without_id += 1
            continue
        doc = str(value)
        if doc in seen:
            out.duplicates += 1
            continue
        seen.add(doc)
        out.ids.append(doc)
        raw_scores.append(_number(_walk(item, score_in)) if score_in is not None else None)
    if any(s is None for s in raw_scores):
        out.pseudo_scores = bool(raw_scores)
        out.scores = [float(len(raw_scores) - i) for i in range(len(raw_scores))]
    else:
        out.scores = [float(s) for s in raw_scores if s is not None]
    return out


def error_detail(text: str) -> str:
    """What an engine's error body says, from the shapes they really send: Elasticsearch/OpenSearch
    ``error.type`` + ``error.reason``; Solr ``error.msg``; Vespa ``root.errors[].message``; else
    ``error.message``, ``message``, a string ``error``, or the text itself. One line, at most 300 characters."""
    try:
        data = json.loads(text)
    except ValueError:
        return " ".join(text.split())[:300]
    detail: Any = None
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict):
            if "type" in err or "reason" in err:
                detail = ": ".join(str(err[k]) for k in ("type", "reason") if err.get(k))
            else:
                detail = err.get("msg") or err.get("message")
        elif isinstance(err, str):
            detail = err
        errors = _walk(data, ("root", "errors"))
        if detail is None and isinstance(errors, list) and errors and isinstance(errors[0], dict):
            detail = ": ".join(str(errors[0][k]) for k in ("summary", "message") if errors[0].get(k))
        detail = detail or data.get("message")
    return " ".join(str(detail if detail else text).split())[:300]
