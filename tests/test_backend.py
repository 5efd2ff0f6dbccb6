"""The backend policy (ndcg_labeling.backend): the grammar of NDCG_LABELING_BACKEND, the path each
setting makes a call take (checked in fresh processes, by recording which compiled kernels ran),
and the same numbers on every path."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from ndcg_labeling import backend
from ndcg_labeling.backend import Policy
from ndcg_labeling.errors import BackendError, NdcgLabelingError
from ndcg_labeling.metrics import batch_ndcg, compute_metrics, numba_available
from ndcg_labeling.metrics import warm_up as metrics_warm_up

needs_numba = pytest.mark.skipif(not numba_available(), reason="numba not importable")

# A fresh process computes NDCG@10 (fused kernel) and MAP/NDCG (general path) over n x 50 random
# arrays and prints which compiled kernels ran (the compiled table is wrapped to record calls),
# whether numba was imported, and the values.
_PROBE = """
import json, sys
import numpy as np
from ndcg_labeling import backend
from ndcg_labeling.metrics import _kernels, batch_ndcg, compute_metrics, warm_up
calls = set()
real = _kernels._compile
def recording():
    table = real()
    if table is None:
        return None
    def wrap(name, fn):
        def call(*args):
            calls.add(name)
            return fn(*args)
        return call
    return {name: wrap(name, fn) for name, fn in table.items()}
_kernels._compile = recording
n = int(sys.argv[1])
if sys.argv[2] == "warm":
    warm_up(["ndcg@10"])
    calls.clear()
rng = np.random.default_rng(0)
s, l = rng.random((n, 50)), rng.integers(0, 4, (n, 50)).astype(float)
fused = batch_ndcg(s, l, 10)
general = compute_metrics(["map@10", "ndcg"], s, l)
print(json.dumps({"calls": sorted(calls), "numba": "numba" in sys.modules, "policy": str(backend.policy()),
                  "head": [fused[:50].tolist(), general["map@10"][:50].tolist(), general["ndcg"][:50].tolist()]}))
"""


def _probe(setting: str | None, n: int, warm: bool = False) -> dict:
    env = {k: v for k, v in os.environ.items() if k != backend.ENV_VAR}
    if setting is not None:
        env[backend.ENV_VAR] = setting
    proc = subprocess.run([sys.executable, "-c", _PROBE, str(n), "warm" if warm else "cold"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize(("text", "want"), [
    ("", Policy("auto", "auto", "kernels")),
    ("numpy", Policy("numpy", "auto", "kernels")),
    ("numba,parallel=auto", Policy("numba", "auto", "kernels")),
    (" NUMBA , parallel = off ", Policy("numba", "off", "kernels")),
    ("auto,tensors=torch,parallel=load", Policy("auto", "load", "torch")),
    ("numba,parallel=on", Policy("numba", "on", "kernels")),
])
def test_grammar(text, want):
    assert backend.parse(text) == want
    assert backend.parse(str(want)) == want  # str() writes the grammar back


@pytest.mark.parametrize(("text", "fragment"), [
    ("gpu", "unknown backend 'gpu'"),
    ("numba,parallel=maybe", "invalid option 'parallel=maybe'"),
    ("numba,parallel", "invalid option 'parallel'"),
    ("numba,threads=2", "invalid option 'threads=2'"),
    ("numba,parallel=on,parallel=off", "invalid option 'parallel=off'"),
    ("parallel=on", "unknown backend 'parallel=on'"),
])
def test_invalid_settings_are_refused_with_the_grammar(text, fragment):
    with pytest.raises(BackendError) as err:
        backend.parse(text)
    message = str(err.value)
    assert message.startswith("NDCG_LABELING_BACKEND: ") and fragment in message
    assert "KIND[,parallel=MODE][,tensors=ROUTE]" in message and "numpy, numba" in message
    assert isinstance(err.value, NdcgLabelingError) and isinstance(err.value, ValueError)


def test_an_invalid_environment_value_stops_the_first_metric_call():
    env = {**os.environ, backend.ENV_VAR: "numba,parallel=sometimes"}
    code = "import numpy as np\nfrom ndcg_labeling.metrics import batch_ndcg\nbatch_ndcg(np.ones((2, 3)), np.ones((2, 3)), 2)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode != 0
    assert "BackendError: NDCG_LABELING_BACKEND: invalid option 'parallel=sometimes'" in proc.stderr


def test_numba_asked_for_but_not_importable_is_an_error():
    code = ("import sys\nsys.modules['numba'] = None  # makes 'import numba' fail\n"
            "import numpy as np\nfrom ndcg_labeling.metrics import batch_ndcg\n"
            "try:\n    batch_ndcg(np.ones((2, 3)), np.ones((2, 3)), 2)\n"
            "except Exception as exc:\n    print(type(exc).__name__, exc)\n")
    for setting, want in (("numba", "BackendError NDCG_LABELING_BACKEND=numba but numba cannot be imported"),
                          ("auto", "")):
        env = {**os.environ, backend.ENV_VAR: setting}
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip().startswith(want) and (want or out.stdout.strip() == "")


@needs_numba
def test_the_setting_picks_the_path_in_a_fresh_process():
    small, large = 2_000, 100_000  # 100k and 5M array elements
    numpy_small = _probe("numpy", small)
    assert numpy_small["calls"] == [] and not numpy_small["numba"]
    numpy_large = _probe("numpy", large)
    assert numpy_large["calls"] == [] and not numpy_large["numba"]
    # auto: NumPy below NUMBA_MIN_SIZE (numba not even imported), the parallel build from it.
    assert small * 50 < backend.NUMBA_MIN_SIZE <= large * 50
    auto_small = _probe(None, small)
    assert auto_small["calls"] == [] and not auto_small["numba"] and auto_small["policy"].startswith("auto,")
    auto_large = _probe(None, large)
    assert auto_large["calls"] == ["ndcg"]  # the compiled NDCG kernel; MAP and NDCG over the whole list: NumPy
    # numba: the compiled kernels at every size; the serial build below PARALLEL_MIN_SIZE.
    assert small * 50 < backend.PARALLEL_MIN_SIZE
    numba_small = _probe("numba", small)
    assert numba_small["calls"] == ["ndcg_serial"]
    assert _probe("numba,parallel=on", small)["calls"] == ["ndcg"]
    assert _probe("numba,parallel=off", large)["calls"] == auto_small["calls"] + numba_small["calls"]
    # Same numbers on every path.
    for a, b in ((numpy_small, numba_small), (numpy_large, auto_large)):
        for x, y in zip(a["head"], b["head"], strict=True):
            np.testing.assert_allclose(x, y, rtol=0, atol=1e-12)


@needs_numba
def test_warming_up_changes_no_path():
    warmed = _probe(None, 2_000, warm=True)
    assert warmed["numba"]  # warm_up loaded numba ...
    assert warmed["calls"] == []  # ... and the small call still took the NumPy path


def test_the_load_gate_is_opt_in(monkeypatch):
    monkeypatch.setattr(backend.os, "getloadavg", lambda: (99.0, 99.0, 99.0))
    big = backend.PARALLEL_MIN_SIZE
    assert backend.wants_parallel(big, Policy("numba", "auto"))
    assert not backend.wants_parallel(big, Policy("numba", "load"))
    assert not backend.wants_parallel(big - 1, Policy("numba", "auto"))
    monkeypatch.setattr(backend.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert backend.wants_parallel(big, Policy("numba", "load"))
    assert backend.wants_parallel(1, Policy("numba", "on")) and not backend.wants_parallel(10**9, Policy("numba", "off"))


def _messy(n: int = 3000, width: int = 37) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    scores = rng.integers(0, 8, (n, width)).astype(float)
    scores[rng.random(scores.shape) < 0.2] = np.nan
    scores[rng.random(scores.shape) < 0.03] = -np.inf
    labels = rng.integers(0, 5, (n, width)).astype(float)
    labels[rng.random(labels.shape) < 0.2] = np.nan
    labels[::7] += np.round(rng.random((len(labels[::7]), width)), 2)
    ideal = np.where(rng.random((n, 45)) < 0.7, rng.integers(0, 5, (n, 45)), np.nan)
    return scores, labels, ideal


SETTINGS = ["numpy", pytest.param("numba,parallel=off", marks=needs_numba),
            pytest.param("numba,parallel=on", marks=needs_numba)]


@pytest.mark.parametrize("setting", SETTINGS)
def test_every_path_gives_the_same_numbers(setting):
    scores, labels, ideal = _messy()
    names = ["ndcg@5", "ndcg@10", "ndcg", "dcg@10", "map", "mrr@10", "p@10", "recall@20", "judged@10"]
    with backend.using("numpy"):
        want = compute_metrics(names, scores, labels)
        want_fused = batch_ndcg(scores, labels, [1, 10, 64], ideal_labels=ideal)
    with backend.using(setting):
        got = compute_metrics(names, scores, labels)
        got_fused = batch_ndcg(scores, labels, [1, 10, 64], ideal_labels=ideal)
    for name in names:
        np.testing.assert_allclose(got[name], want[name], rtol=0, atol=1e-12, err_msg=name)
    np.testing.assert_allclose(got_fused, want_fused, rtol=0, atol=1e-12)


def test_configure_wins_over_the_environment_and_restores(monkeypatch):
    monkeypatch.setenv(backend.ENV_VAR, "numpy,parallel=off")
    before = backend.configure(None)
    try:
        assert backend.policy() == Policy("numpy", "off")
        with backend.using("numba,parallel=on") as inside:
            assert inside == backend.policy() == Policy("numba", "on")
        assert backend.policy() == Policy("numpy", "off")
        with pytest.raises(BackendError, match="configure: unknown backend 'fast'"):
            backend.configure("fast")
    finally:
        backend.configure(before)


@needs_numba
def test_warm_up_entry_points():
    assert metrics_warm_up(["ndcg@10", "ndcg@3"]) is True
    assert metrics_warm_up() is True
    with backend.using("numpy"):
        assert metrics_warm_up() is False
    with pytest.raises(ValueError, match="unknown metric"):
        metrics_warm_up(["ndgc@10"])
