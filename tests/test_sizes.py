"""What keeps the code readable: a module is one idea, and no function is over 80 lines.

A module states its one idea in the first line of its docstring (an empty package marker, with no code,
states none and needs none). A module over 800 lines fails: not because 801 is wrong, but to ask for a
look at whether it still holds one idea (never split a thought to meet a number; issue 44). A function
over 80 lines fails, except a numba kernel (one compiled loop is easier to read whole than split into
calls the compiler would have to inline again).

A numba kernel is recognised by how it is compiled, not by a list of names: a function decorated with
``jit``/``njit``/``vectorize``/``guvectorize`` (``numba.njit(...)`` included), or a function handed
by name as the first argument of ``compile_kernel``/``njit``/``jit`` (``_jit.compile_kernel(_scan_py,
...)``, ``numba.njit(...)(body)``), directly or through the loop variable of a loop or comprehension
over a literal tuple of (name, function) pairs. Another name a compiling function merely mentions is
not exempt.
"""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "ndcg_labeling"
LOOK_AT_MODULE_LINES = 800
MAX_FUNCTION_LINES = 80
JIT_NAMES = {"jit", "njit", "vectorize", "guvectorize", "compile_kernel", "stencil"}

# Current violators in modules that other engineers are rewriting on their own branches right now. To be
# removed at merge: the integrator empties this set once every branch is in, and the test then holds for
# the whole package.
KNOWN_OVERSIZE: set[str] = set()


def _callee_name(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        return _callee_name(node.func)
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def _compiled_args(call: ast.Call) -> list[ast.expr]:
    """What a JIT call compiles: ``compile_kernel(fn, ...)`` / ``njit(fn)``, or ``njit(...)(fn)``."""
    if _callee_name(call.func) in JIT_NAMES and call.args:
        return [call.args[0]]
    if isinstance(call.func, ast.Call) and _callee_name(call.func.func) in JIT_NAMES and call.args:
        return [call.args[0]]
    return []


def _loop_sources(fn: ast.AST) -> dict[str, list[str]]:
    """For each loop variable bound by unpacking a literal tuple of tuples, the names it takes."""
    sources: dict[str, list[str]] = {}
    loops = [(n.target, n.iter) for n in ast.walk(fn) if isinstance(n, ast.For | ast.comprehension)]
    for target, source in loops:
        if not isinstance(target, ast.Tuple) or not isinstance(source, ast.Tuple | ast.List):
            continue
        for pos, var in enumerate(target.elts):
            if isinstance(var, ast.Name):
                sources.setdefault(var.id, []).extend(
                    item.elts[pos].id for item in source.elts
                    if isinstance(item, ast.Tuple) and pos < len(item.elts) and isinstance(item.elts[pos], ast.Name))
    return sources


def compiled_kernels(trees: dict[Path, ast.AST]) -> set[str]:
    """Names of the functions that are numba kernels: decorated, or handed to a compiler by name."""
    names: set[str] = set()
    for tree in trees.values():
        for fn in _functions(tree):
            if any(_callee_name(d) in JIT_NAMES for d in fn.decorator_list):
                names.add(fn.name)
            loops = _loop_sources(fn)
            for call in (c for c in ast.walk(fn) if isinstance(c, ast.Call)):
                for arg in _compiled_args(call):
                    if isinstance(arg, ast.Name):
                        names.update(loops.get(arg.id, [arg.id]))
    return names


def size_violations(root: Path = PKG) -> list[str]:
    trees = {p: ast.parse(p.read_text(encoding="utf-8")) for p in sorted(root.rglob("*.py"))}
    kernels = compiled_kernels(trees)
    problems = []
    for path, tree in trees.items():
        rel = path.relative_to(root.parent).as_posix()
        lines = len(path.read_text(encoding="utf-8").splitlines())
        idea = (ast.get_docstring(tree) or "").strip().splitlines()[:1]
        if tree.body and not (idea and idea[0].strip()):
            problems.append(f"{rel}: no docstring whose first line states the module's one idea")
        if lines > LOOK_AT_MODULE_LINES:
            problems.append(f"{rel}: {lines} lines (over {LOOK_AT_MODULE_LINES}: does it still hold one idea? "
                            "split it by idea, never mid-thought)")
        for fn in _functions(tree):
            length = (fn.end_lineno or fn.lineno) - fn.lineno + 1
            if length > MAX_FUNCTION_LINES and fn.name not in kernels:
                problems.append(f"{rel}:{fn.name}: {length} lines (limit {MAX_FUNCTION_LINES})")
    return problems


def _key(problem: str) -> str:
    return problem.split(": ")[0]


def test_modules_and_functions_are_within_the_limits():
    problems = [p for p in size_violations() if _key(p) not in KNOWN_OVERSIZE]
    assert problems == []


def test_known_oversize_lists_only_current_violators():
    # an entry that no longer violates must leave the list, so the list only shrinks
    current = {_key(p) for p in size_violations()}
    assert KNOWN_OVERSIZE <= current, f"no longer oversize, remove: {sorted(KNOWN_OVERSIZE - current)}"


def test_a_long_plain_function_fails_and_a_compiled_kernel_does_not(tmp_path):
    pkg = tmp_path / "ndcg_labeling"
    pkg.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(85))
    (pkg / "a.py").write_text(
        f"def long_plain():\n{body}\n\n\ndef _long_kernel_py():\n{body}\n\n\n"
        f"def _looped_kernel_py():\n{body}\n\n\n"
        f"def _compile():\n    helper = long_plain\n    for name, fn in (('k2', _looped_kernel_py),):\n"
        f"        compile_kernel(fn, {{}}, name)\n    return compile_kernel(_long_kernel_py, {{}}, 'k')\n\n\n"
        f"@numba.njit(cache=True)\ndef long_decorated():\n{body}\n", encoding="utf-8")
    (pkg / "b.py").write_text('"""One idea, said long."""\n' + "\n" * 800, encoding="utf-8")
    (pkg / "c.py").write_text('"""A 700-line module of one idea is fine."""\n' + "\n" * 700, encoding="utf-8")
    (pkg / "d.py").write_text("x = 1\n", encoding="utf-8")
    (pkg / "e.py").write_text('"""\n\n"""\nx = 1\n', encoding="utf-8")
    (pkg / "__init__.py").write_text("", encoding="utf-8")  # an empty package marker needs no docstring
    problems = size_violations(pkg)
    assert problems[0] == "ndcg_labeling/a.py: no docstring whose first line states the module's one idea"
    assert problems[1] == "ndcg_labeling/a.py:long_plain: 86 lines (limit 80)"
    assert problems[2].startswith("ndcg_labeling/b.py: 801 lines (over 800: does it still hold one idea?")
    assert problems[3:] == ["ndcg_labeling/d.py: no docstring whose first line states the module's one idea",
                            "ndcg_labeling/e.py: no docstring whose first line states the module's one idea"]
