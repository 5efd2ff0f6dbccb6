"""``POST /api/events`` under a huge body: the server's peak memory against its idle size.

    .venv/bin/python benchmarks/bench_event_body.py                  # 1 GiB without a key, 1 GiB with one
    .venv/bin/python benchmarks/bench_event_body.py --mib 256

A fresh SQLite database with one ingest key; ``serve``'s app runs under uvicorn as its own process on a
free port of 127.0.0.1. Each post streams ``--mib`` MiB in 1 MiB chunks (``Transfer-Encoding: chunked``,
so no ``Content-Length`` lets the server refuse early) until the server answers or closes: first without
``Authorization`` (answered 401 before a byte of the body is read), then with the key (413 once the
32 MiB limit is passed). Printed per post: MiB sent, the answer, seconds, and the server's peak resident
memory (``VmHWM``) over its idle size (``VmRSS`` after one good post). The goal (issue 46): under 100 MB.
The test suite runs the same check (tests/online/test_event_ingest_limits.py) for at most 8 s per post.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import child_env, cpu_name  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def post(port: int, headers: str, mib: int) -> tuple[int, str, float]:
    chunk = b"[" + b" " * (1024 * 1024 - 2) + b"]"
    frame = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
    sent, t0 = 0, time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(f"POST /api/events HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n{headers}\r\n".encode())
        try:
            for _ in range(mib):
                s.sendall(frame)
                sent += 1
        except OSError:
            pass
        try:
            answer = s.recv(4096).split(b"\r\n", 1)[0].decode()
        except OSError:
            answer = "(closed)"
    return sent, answer or "(closed)", time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=1024)
    args = parser.parse_args()
    from sqlalchemy import create_engine

    from ndcg_labeling.db.migrate import upgrade
    from ndcg_labeling.db.session import session_scope
    from ndcg_labeling.workspace.ingest_keys import add_key

    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/bench.db"
        engine = create_engine(url)
        upgrade(engine)
        with session_scope(engine) as session:
            key = add_key("bench", "ingest", session=session).key
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        code = ("from ndcg_labeling.web.app import create_app, run_server; "
                f"run_server(create_app({url!r}), host='127.0.0.1', port={port}, access_log=False)")
        proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=child_env(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            import httpx

            for _ in range(300):
                try:
                    good = [{"request_id": "r", "query_id": "q", "doc_id": "d", "position": 1, "clicked": 0,
                             "ts": 1_767_000_000, "arm": "a"}]
                    httpx.post(f"http://127.0.0.1:{port}/api/events", content=json.dumps(good),
                               headers={"Authorization": f"Bearer {key}"}, timeout=5).raise_for_status()
                    break
                except httpx.HTTPError:
                    time.sleep(0.2)
            idle = kb(proc.pid, "VmRSS")
            print(f"machine: {cpu_name()}; server idle: {idle / 1024:.0f} MiB resident")
            print(f"{'post':<22} {'MiB sent':>9} {'answer':<40} {'seconds':>8} {'peak over idle':>15}")
            for name, headers in (("no key", ""), ("with key", f"Authorization: Bearer {key}\r\n")):
                sent, answer, secs = post(port, headers, args.mib)
                over = (kb(proc.pid, "VmHWM") - idle) / 1024
                print(f"{name + f' ({args.mib} MiB)':<22} {sent:>9} {answer:<40} {secs:>8.2f} {over:>11.1f} MiB")
        finally:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
