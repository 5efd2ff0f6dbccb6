#!/usr/bin/env bash
# `make demo` on a fresh clone: the set-up time (venv + core install), the demo's own time and the size
# of the environment it builds. The pip cache is whatever this machine has (warm after one run).
#   benchmarks/bench_setup.sh [REPO]      REPO: a path or URL to clone (default: this checkout's HEAD)
# Prints one Markdown table row per phase, with the machine and its load, for benchmarks/RESULTS.md.
set -euo pipefail
repo="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
git clone -q "$repo" "$work/clone"
cd "$work/clone"
cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "host: $(nproc) cores, ${cpu:-unknown CPU}; $(python3 --version); load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
t0=$(date +%s.%N)
make -s .venv/.core-installed >"$work/setup.log" 2>&1 || { tail -20 "$work/setup.log"; exit 1; }
t1=$(date +%s.%N)
make -s demo >"$work/demo.log" 2>&1 || { tail -20 "$work/demo.log"; exit 1; }
t2=$(date +%s.%N)
size_mb=$(du -sm .venv | cut -f1)
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| phase | wall | environment |"
echo "| --- | ---: | ---: |"
printf '| set-up (venv + `pip install -e .`) | %.0f s | %s MB (.venv) |\n' "$(echo "$t1 - $t0" | bc)" "$size_mb"
printf '| the demo itself | %.0f s | |\n' "$(echo "$t2 - $t1" | bc)"
printf '| `make demo` in all | %.0f s | |\n' "$(echo "$t2 - $t0" | bc)"
