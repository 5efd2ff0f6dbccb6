"""TREC-COVID round 1 for the budget benchmark: 143 runs over 30 topics and the round-1 qrels (graded 0-2).

The data are NIST's (TREC-COVID, https://ir.nist.gov/trec-covid/, round 1, 2020), as mirrored in the public
repository castorini/TREC-COVID (folder ``round1/``: ``runs/<run>`` and ``qrels/qrels-rnd1.txt``). Nothing of
that repository's code is used; the files are read, checked against the sha256 sums in
``benchmarks/trec_covid_round1.sha256`` (the same files as stored there at commit be3ed3f) and cached.

    .venv/bin/python benchmarks/trec_covid.py --source /path/to/TREC-COVID          # a checkout (round1/ inside)
    .venv/bin/python benchmarks/trec_covid.py --source /path/to/TREC-COVID.git      # a bare clone / mirror
    .venv/bin/python benchmarks/trec_covid.py --source ... --write-slice tests/data/trec_covid

The benchmark needs only each run's top 20 per topic (the depth-20 pool and NDCG@10), so the slice in
``tests/data/trec_covid`` (made by ``--write-slice`` from the checked full runs, in trec_eval's order:
score descending, ties by document id descending) is enough for every figure and needs no network;
:func:`tests.budget.dl_world.covid_world` reads it (provenance and sha256: tests/data/trec_covid/README.md).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUMS = Path(__file__).with_name("trec_covid_round1.sha256")
SLICE = ROOT / "tests" / "data" / "trec_covid"
SLICE_RUNS = "runs-rnd1-top20.tsv.gz"
QRELS = "qrels-rnd1.txt"
DEPTH = 20
CACHE = Path(os.path.expanduser("~/.cache/ndcg-labeling/trec-covid-round1"))


class MissingData(Exception):
    """The TREC-COVID files are not where they were looked for, or do not match their checksums."""


def expected_sums() -> dict[str, str]:
    """``{"round1/runs/<run>" | "round1/qrels/qrels-rnd1.txt": sha256}`` as written in the repository."""
    out = {}
    for line in SUMS.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            digest, name = line.split(maxsplit=1)
            out[name.strip()] = digest
    return out


def _read_from(source: Path, name: str) -> bytes:
    if (source / name).is_file():
        return (source / name).read_bytes()
    if (source / "HEAD").is_file() and (source / "objects").is_dir():  # a bare clone or mirror
        got = subprocess.run(["git", "-C", str(source), "show", f"HEAD:{name}"], capture_output=True)
        if got.returncode == 0:
            return got.stdout
    raise MissingData(f"{source}: no {name} (expected a TREC-COVID checkout or bare clone with round1/ inside)")


def fetch(source: Path | None = None, cache: Path = CACHE) -> Path:
    """Copy round 1's runs and qrels from ``source`` (a checkout or bare clone of castorini/TREC-COVID) into
    ``cache``, every file checked against its sha256; returns ``cache``. Files already cached and matching
    are not read again. Raises :class:`MissingData` with what to do when a file is absent or differs."""
    sums = expected_sums()
    for name, digest in sums.items():
        target = cache / name
        if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == digest:
            continue
        if source is None:
            raise MissingData(f"TREC-COVID round 1 is not cached in {cache} ({name} missing): get it with "
                              "`git clone https://github.com/castorini/TREC-COVID` and run "
                              "`benchmarks/trec_covid.py --source TREC-COVID`")
        data = _read_from(source, name)
        got = hashlib.sha256(data).hexdigest()
        if got != digest:
            raise MissingData(f"{source}/{name}: sha256 {got} differs from the expected {digest} "
                              f"({SUMS.name}); not the published round-1 file")
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".part")
        tmp.write_bytes(data)
        tmp.replace(target)
    return cache


def _trec_order(rows: list[tuple[str, str]]) -> list[tuple[str, str]]:
    # trec_eval: score descending, ties by document id descending (strcmp)
    return sorted(rows, key=lambda r: (float(r[1]), r[0]), reverse=True)


def top_lists(cache: Path, depth: int = DEPTH) -> dict[str, dict[str, list[tuple[str, str]]]]:
    """``{run: {topic: [(doc, score text), ...]}}``: each run's top ``depth`` per topic in trec_eval's order."""
    out: dict[str, dict[str, list[tuple[str, str]]]] = {}
    for name in sorted(expected_sums()):
        if not name.startswith("round1/runs/"):
            continue
        per: dict[str, list[tuple[str, str]]] = {}
        for line in (cache / name).read_text().splitlines():
            parts = line.split()
            if len(parts) >= 5:
                per.setdefault(parts[0], []).append((parts[2], parts[4]))
        out[name.rsplit("/", 1)[1]] = {t: _trec_order(rows)[:depth] for t, rows in per.items()}
    return out


def write_slice(cache: Path, target: Path = SLICE) -> None:
    """Write the qrels and every run's top 20 per topic (``run<TAB>topic<TAB>doc<TAB>score``, trec_eval's
    order, the score text as submitted; gzip without a time stamp) into ``target``."""
    target.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(cache / "round1" / "qrels" / QRELS, target / QRELS)
    lines = []
    for run, per in top_lists(cache).items():
        for topic in sorted(per, key=int):
            lines += [f"{run}\t{topic}\t{doc}\t{score}" for doc, score in per[topic]]
    data = ("\n".join(lines) + "\n").encode()
    with open(target / SLICE_RUNS, "wb") as fh, gzip.GzipFile(fileobj=fh, mode="wb", compresslevel=9, mtime=0,
                                                              filename="") as gz:
        gz.write(data)
    print(f"{target / SLICE_RUNS}: {len(lines)} lines, sha256 of the text {hashlib.sha256(data).hexdigest()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, help="a checkout or bare clone of castorini/TREC-COVID")
    ap.add_argument("--cache", type=Path, default=CACHE)
    ap.add_argument("--write-slice", type=Path, help="write the top-20 slice and the qrels into this folder")
    args = ap.parse_args()
    try:
        cache = fetch(args.source, args.cache)
    except MissingData as exc:
        sys.exit(f"Error: {exc}")
    print(f"TREC-COVID round 1: {len(expected_sums())} files checked in {cache}")
    if args.write_slice:
        write_slice(cache, args.write_slice)


if __name__ == "__main__":
    main()
