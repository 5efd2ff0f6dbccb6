"""The console script registers only the command named on the command line (issue 17): its table of
command -> modules must give each command exactly the tree that full registration gives it."""

from __future__ import annotations

import json
import subprocess
import sys

from ndcg_labeling.cli import COMMAND_MODULES, MODULES, modules_for

# Run in a fresh interpreter: each round re-imports ndcg_labeling.cli and its command modules, so the
# sub-apps they share (the ``graders`` group) start empty, as in a new process.
_SCRIPT = """
import importlib, json, sys
from typer.main import get_command

def fresh():
    for name in [m for m in sys.modules if m == "ndcg_labeling.cli" or m.startswith("ndcg_labeling.cli.")]:
        del sys.modules[name]
    return importlib.import_module("ndcg_labeling.cli"), importlib.import_module("ndcg_labeling.cli.docgen")

def tree(docgen, command, name):
    paths = [p for p in docgen.command_paths(command) if p[0] == name]
    return {" ".join(p): docgen.help_text(command, p) for p in paths}

cli, docgen = fresh()
cli.register()
command = get_command(cli._app)  # built once: the tree of every command
full = {p[0] for p in docgen.command_paths(command)}
out = {"names": sorted(full), "same": {}}
full_trees = {name: tree(docgen, command, name) for name in full}
for name in sorted(full):
    cli, docgen = fresh()
    cli.register(cli.modules_for([name, "--help"]))
    out["same"][name] = tree(docgen, get_command(cli._app), name) == full_trees[name]
print(json.dumps(out))
"""


def test_the_command_table_matches_full_registration() -> None:
    proc = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["names"] == sorted(COMMAND_MODULES)
    assert [name for name, same in result["same"].items() if not same] == []


def test_help_and_unknown_names_register_every_module() -> None:
    for argv in ([], ["--help"], ["--version"], ["--help", "status"], ["statsu"], ["-x"]):
        assert modules_for(argv) == MODULES, argv
    assert modules_for(["graders", "list", "--db", "sqlite:///x.db"]) == COMMAND_MODULES["graders"]
    assert modules_for(["status", "--help"]) == ("db_cmds",)
    assert all(set(mods) <= set(MODULES) for mods in COMMAND_MODULES.values())
