# The two set-up commands of the README: `make demo` and `make test`.
# Both use the virtual environment in .venv, made when it is missing (or older than pyproject.toml):
# `make demo` installs only the core package (`pip install -e .`, no extras: about 0.95 GB, ~2 min with a
# warm pip cache; benchmarks/bench_setup.sh); `make test` adds the extras and the test tools (about 3 GB).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CORE_STAMP := $(VENV)/.core-installed
STAMP := $(VENV)/.installed

.PHONY: demo test venv lint bench docs screenshots clean

$(CORE_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -e .
	touch $(CORE_STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# The CPU build of torch that lies on this machine's disk; a plain `torch` pulls a multi-GB CUDA build.
	$(BIN)/python -m pip install -q "torch==2.13.0" || echo "torch 2.13.0 not available: torch tests will be skipped"
	$(BIN)/python -m pip install -q -e ".[dev,postgres,torch,spark]"
	# irrCAC (the peer for Gwet's AC1/AC2 in the tests) pins scipy==1.12 and coverage<7, which would
	# hold numpy below 2 (breaking pyarrow) and break numba's import; its code runs fine on current ones.
	$(BIN)/python -m pip install -q --no-deps "irrCAC==0.4.4"
	# ppi-python (the peer of the PPI++ kernel, tests/test_stats_ppi.py): its other needs (numpy, numba, pandas,
	# statsmodels, scikit-learn) are in the dev extra; gdown only fetches its data sets. Its wheel also installs
	# a top-level `tests` package that would shadow ours (`from tests.conftest import ...`): removed here.
	$(BIN)/python -m pip install -q --no-deps "ppi-python==0.2.3"
	rm -rf $$($(BIN)/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/tests
	# axe-core (npm) for the accessibility check of every page in the browser test (tests/web/test_every_page.py)
	if command -v npm >/dev/null 2>&1; then npm install -q --no-audit --no-fund --prefix $(VENV)/node axe-core@4; \
	else echo "npm not found: the page walk's accessibility check will be skipped"; fi
	touch $(STAMP) $(CORE_STAMP)

venv: $(STAMP)

demo: $(CORE_STAMP)
	rm -rf demo-out
	$(BIN)/ndcg-labeling demo --db sqlite:///demo-out/demo.db --out demo-out

test: $(STAMP)
	$(BIN)/ruff check ndcg_labeling tests benchmarks migrations
	$(BIN)/mypy ndcg_labeling
	# bytecode for the package and the tests up front: where PYTHONDONTWRITEBYTECODE is set (as on these
	# machines) every test's subprocess would otherwise compile the package from source again (~0.4 s each)
	$(BIN)/python -m compileall -q -j 0 ndcg_labeling tests >/dev/null
	$(BIN)/python -m pytest -n 2 --dist loadgroup -q --durations=25 tests

docs: $(STAMP)
	$(BIN)/python -m ndcg_labeling.cli.docgen > docs/cli.md

# One screenshot per page of the web workspace (1280 px wide) into docs/img, shown in docs/web.md.
screenshots: $(STAMP)
	$(BIN)/python -m tests.web.pages docs/img

bench: $(STAMP)
	for f in benchmarks/bench_*.py; do $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) demo-out build dist *.egg-info
