"""docs/flows.md and docs/layout.md check themselves: every module path they name exists, and every arrow
``a → b`` of a flow in docs/flows.md is an import path in the code (``a`` imports ``b``, directly or
through other modules; imports inside functions count)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.test_architecture import PKG, _graph

DOCS = PKG.parent / "docs"
#: a path under ndcg_labeling/ (or the repository) as the docs write it: dir/name.py, dir/name.md, or dir/
PATH = re.compile(r"(?:[A-Za-z_]\w*/)+\w+\.(?:py|md)")


def module_of(path: str) -> str:
    """``labels/tasks/__init__.py`` -> ``ndcg_labeling.labels.tasks``; ``metrics/`` -> ``ndcg_labeling.metrics``."""
    parts = path.rstrip("/").removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(["ndcg_labeling", *parts])


def flow_chains(text: str) -> list[list[str]]:
    """The chains of the flows: on each bullet line, after its first ``: ``, the runs of backticked paths
    joined by ``→`` (``, then``, ``, and`` and ``, with`` start a new chain)."""
    chains = []
    for line in text.splitlines():
        if not line.startswith("- ") or "→" not in line:
            continue
        for part in re.split(r", then |, and |, with ", line.split(": ", 1)[1]):
            chain = re.findall(r"`([^`]+)`", part)
            if chain:
                chains.append(chain)
    return chains


def reaches(graph: dict[str, set[str]], a: str, b: str) -> bool:
    seen, todo = {a}, [a]
    while todo:
        for w in graph.get(todo.pop(), ()):
            if w == b:
                return True
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return False


def broken_arrows(text: str, root: Path = PKG) -> list[str]:
    graph = _graph(root, runtime=False)
    problems = []
    for chain in flow_chains(text):
        for path in chain:
            if not (root / path).exists():
                problems.append(f"{path}: no such module")
        for a, b in zip(chain, chain[1:], strict=False):
            if (root / a).exists() and (root / b).exists() and not reaches(graph, module_of(a), module_of(b)):
                problems.append(f"{a} → {b}: {module_of(a)} does not import {module_of(b)}")
    return problems


def test_every_arrow_of_the_flows_is_an_import_path():
    text = (DOCS / "flows.md").read_text(encoding="utf-8")
    assert len(flow_chains(text)) >= 15 and "flows.md" in (DOCS / "layout.md").read_text(encoding="utf-8")
    assert broken_arrows(text) == []


def test_a_reversed_or_missing_step_is_caught():
    text = ("- a: `cli/report_cmd.py` → `scoring/report.py`, then `scoring/report.py` → `cli/report_cmd.py`\n"
            "- b: `sources/behavior.py` → `sources/gone.py`\n")
    assert broken_arrows(text) == [
        "scoring/report.py → cli/report_cmd.py: ndcg_labeling.scoring.report does not import "
        "ndcg_labeling.cli.report_cmd", "sources/gone.py: no such module"]


def test_every_path_the_layout_and_the_flows_name_exists():
    for page in ("layout.md", "flows.md"):
        text = (DOCS / page).read_text(encoding="utf-8")
        named = set(PATH.findall(text)) | {p for chain in flow_chains(text) for p in chain}
        missing = [p for p in sorted(named) if not any((base / p).exists() for base in (PKG, PKG.parent, DOCS))]
        assert missing == [], f"docs/{page} names paths that do not exist"
