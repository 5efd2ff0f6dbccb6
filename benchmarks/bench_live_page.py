"""The lead's live report page (``GET /lead/report``) on the demo database, through a served workspace.

    .venv/bin/python benchmarks/bench_live_page.py [--db sqlite:////tmp/demo.db] [--repeat 3]

Without ``--db`` it builds the demo database first (``ndcg-labeling demo``, about half a minute). The
database is copied (SQLite) and a lead ``bench-lead`` is added to the copy; ``ndcg-labeling serve`` runs
on it on a free port, and a client signs in as a person does (link, button). Rows:

* first load: the first request after the server started (scores and draws; the server loads the scoring
  and plotting modules in the background from its start, web/lead.py warm_report_imports);
* cached load: the same page again, labels unchanged (the report cached per labels version);
* other baseline: another baseline and metric (computed: a new cache entry, imports warm);
* after a decision: one adjudication recorded meanwhile, so the labels version moved (computed again).

Target (issue 45): a cached load within 3 s; it is milliseconds. The first computation is not cached.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.web.pages import free_port  # noqa: E402


def cli(db: str, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "ndcg_labeling", *args, "--db", db], capture_output=True, text=True,
                          cwd=ROOT, check=True)
    return done.stdout


def timed(client: httpx.Client, url: str, repeat: int = 1) -> tuple[float, int]:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        page = client.get(url)
        best = min(best, time.perf_counter() - start)
        assert page.status_code == 200, page.text[:500]
    return best, len(page.content)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", help="a demo database (sqlite:///PATH); default: build one")
    parser.add_argument("--repeat", type=int, default=3, help="best of N for the cached load")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "demo.db"
        if args.db:
            shutil.copy(args.db.removeprefix("sqlite:///"), copy)
        else:
            subprocess.run([sys.executable, "-m", "ndcg_labeling", "demo", "--db", f"sqlite:///{copy}", "--out",
                            str(Path(tmp) / "out")], cwd=ROOT, check=True, capture_output=True)
        db = f"sqlite:///{copy}"
        cli(db, "graders", "add", "bench-lead", "--role", "lead")
        link = cli(db, "graders", "token", "bench-lead").strip().split()[-1]
        token = re.search(r"token=([^\s&]+)", link).group(1)
        port = free_port()
        log = (Path(tmp) / "serve.log").open("w")
        server = subprocess.Popen([sys.executable, "-m", "ndcg_labeling", "serve", "--host", "127.0.0.1", "--port",
                                   str(port), "--db", db], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(300):
                try:
                    httpx.get(f"{base}/static/style.css", timeout=1)
                    break
                except httpx.HTTPError:
                    time.sleep(0.2)
            with httpx.Client(base_url=base, timeout=300) as client:
                page = client.get(f"/login?token={token}")
                nonce = re.search(r'name="nonce" value="([^"]+)"', page.text).group(1)
                assert client.post("/login", data={"token": token, "nonce": nonce}).status_code == 303
                rows = [("first load", *timed(client, "/lead/report"))]
                rows.append(("cached load", *timed(client, "/lead/report", args.repeat)))
                other = "/lead/report?metric=mrr@10&baseline=" + cli(db, "report", "--format", "json") \
                    .split('"baseline": "', 1)[1].split('"', 1)[0]
                rows.append(("other baseline", *timed(client, other)))
                rows.append(("other baseline, cached", *timed(client, other, args.repeat)))
                flagged = re.search(r'"query_id": "([^"]+)",\s*"doc_id": "([^"]+)"',
                                    cli(db, "adjudicate", "list", "--format", "json"))
                if flagged:
                    cli(db, "adjudicate", "set", flagged.group(1), flagged.group(2), "1", "--adjudicator", "bench-lead")
                    rows.append(("after a decision", *timed(client, "/lead/report")))
                    rows.append(("after a decision, cached", *timed(client, "/lead/report", args.repeat)))
        finally:
            server.terminate()
            server.wait(timeout=30)
            log.close()
    print(f"live report page on the demo database ({db.rsplit('/', 1)[-1]}), one served workspace")
    print(f"{'request':<28}{'seconds':>10}{'bytes':>10}")
    for name, seconds, size in rows:
        print(f"{name:<28}{seconds:>10.3f}{size:>10}")


if __name__ == "__main__":
    main()
