"""Parquet logs aggregated by one compiled scan (pyarrow record batches, numba kernels) instead of SQL.

The DuckDB engine's two SQL passes cost about 90 CPU-seconds for 100M impressions with text ids
(grouping (query, document) as text, then (pair hash, position) cells). Here pyarrow decodes batches
of rows (on a reader thread, one batch ahead) and kernels that release the GIL hash the two ids from
Arrow's string buffers (two 64-bit multiply-rotate streams, finished by murmur3's mixer: a 128-bit pair
key, which two of 2M pairs share with probability about 1e-26), find the pair in an open-addressing
table and add the impression to a dense ``pair x position`` block. A first pass over the small columns
checks every rule and finds the window's newest ``ts`` (the decay's reference).

It takes Parquet with native types (integer or text ids, numeric positions and clicks, numeric or
timestamp ``ts``) for models that need no served lists (not the DBN). :func:`aggregate` returns None
where it does not apply (another type, a missing column, a bad row or id, cells beyond
:data:`MAX_CELL_BYTES`); the DuckDB engine then does the work and names a bad row exactly. Its result is
the DuckDB engine's (pairs in the text order of their ids, cells by (pair, position)):
``tests/engines/test_parquet_scan.py`` compares the two, and pandas, on logs built to reach the edges.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from ndcg_labeling import _jit
from ndcg_labeling.behavior.counts import CellCounts, narrow_positions
from ndcg_labeling.engines import base as rules  # the log schema's limits and the id check
from ndcg_labeling.engines.base import REQUIRED_COLUMNS, LogAggregates, LogRequest

BATCH_ROWS = 1 << 18
#: the DuckDB engine takes this path for Parquet logs of this many rows and more: below, DuckDB's SQL
#: is as fast (``bench_implicit.py --sql-models``: even at 5M and 10M rows, twice as fast at 100M)
MIN_ROWS = 20_000_000
#: the most bytes the dense ``pair x position`` cells may take; a log with more pairs (or wider lists)
#: goes to DuckDB. The block is reserved at once but, zero pages being mapped on first touch, only the
#: cells of pairs met so far take memory (so it never grows by copying)
MAX_CELL_BYTES = 1_000_000_000
#: one cell: impressions, clicks, weight, weighted clicks (24 bytes: one cache line per row)
CELL = np.dtype([("n", np.int32), ("c", np.int32), ("w", np.float64), ("cw", np.float64)])
_U64 = np.uint64


def rows(files: list[str]) -> int:
    """The rows of Parquet ``files``, from their footers (0 where one cannot be read: DuckDB says why)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return sum(pq.read_metadata(f).num_rows for f in files)
    except (pa.ArrowException, OSError):
        return 0


def _kind(arrow_type: Any) -> str | None:
    """``int``, ``float``, ``text``, ``time`` or ``bool`` for the types this path reads; None otherwise."""
    import pyarrow as pa

    t, is_ = (arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type), pa.types
    kinds = {"int": is_.is_integer(t), "float": is_.is_floating(t), "text": is_.is_string(t) or is_.is_large_string(t),
             "time": is_.is_timestamp(t) or is_.is_date(t), "bool": is_.is_boolean(t)}
    return next((kind for kind, yes in kinds.items() if yes), None)


def _plan(request: LogRequest, files: list[str]) -> dict[str, str] | None:
    """Our column -> its kind, when every file has every required column in one readable kind."""
    import pyarrow.parquet as pq

    names = request.source_names()
    kinds: dict[str, str] = {}
    for path in files:
        schema = pq.read_schema(path)
        for col in REQUIRED_COLUMNS + ("watch_ratio", "converted", "dwell_ms"):
            if names[col] not in schema.names:
                if col in REQUIRED_COLUMNS or (col == "watch_ratio" and request.watch):
                    return None
                continue
            kind = _kind(schema.field(names[col]).type) or "other"
            allowed = ("int", "text") if col in ("request_id", "query_id", "doc_id") else \
                ("int", "float", "time") if col == "ts" else ("int", "float", "bool")
            if kind not in allowed or kinds.setdefault(col, kind) != kind:
                return None
    return kinds


def _batches(files: list[str], columns: list[str], names: dict[str, str]) -> Iterator[dict[str, Any]]:
    """Each record batch of every file as ``our column -> Arrow array`` (None for a column the file lacks)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for path in files:
        pa.default_memory_pool().release_unused()  # the allocator keeps the last file's pages otherwise
        handle = pq.ParquetFile(path)
        present = [c for c in columns if names[c] in handle.schema_arrow.names]
        for batch in handle.iter_batches(batch_size=BATCH_ROWS, columns=[names[c] for c in present], use_threads=True):
            out: dict[str, Any] = dict.fromkeys(columns)
            for c in present:
                col = batch.column(names[c])
                out[c] = col.dictionary_decode() if hasattr(col, "dictionary_decode") else col
            yield out


def _prefetched(items: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """``items`` produced by a reader thread one step ahead of the consumer (pyarrow decodes the next
    batch while a kernel, without the GIL, works on this one); the thread stops when the consumer does."""
    slots: queue.Queue[Any] = queue.Queue(maxsize=1)
    stop, done = threading.Event(), object()

    def offer(item: Any) -> bool:
        while not stop.is_set():
            try:
                slots.put(item, timeout=0.1)
                return True
            except queue.Full:
                pass
        return False

    def read() -> None:
        try:
            for item in items:
                if not offer(item):
                    return
            offer(done)
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
            offer(exc)

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    try:
        while (item := slots.get()) is not done:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        worker.join()


def _numbers(array: Any, kind: str) -> np.ndarray:
    """A numeric column as float64 (nulls: NaN); ``time``: epoch seconds."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if kind == "time":
        if pa.types.is_date(array.type):
            array = array.cast(pa.timestamp("s"))
        unit = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}[array.type.unit]
        seconds = pc.multiply(array.cast(pa.int64()).cast(pa.float64()), unit)
        return np.asarray(seconds.to_numpy(zero_copy_only=False), dtype=np.float64)
    return np.asarray(array.cast(pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)


def _bad_row(batch: dict[str, Any], kinds: dict[str, str], watch: bool, position: np.ndarray, ts: np.ndarray) -> bool:
    """Whether a row of pass 1's ``batch`` (``position`` and ``ts`` already as numbers) breaks a rule of the
    log schema; the ids of pass 2 are checked for blankness by their hashing kernel."""
    import pyarrow.compute as pc

    if any(batch[c].null_count for c in ("request_id", "position", "clicked", "ts")):
        return True
    clicked = _numbers(batch["clicked"], kinds["clicked"])
    if not (np.isfinite(position).all() and (position >= 1).all() and (position == np.floor(position)).all()
            and (position <= rules.MAX_POSITION).all() and ((clicked == 0) | (clicked == 1)).all()
            and np.isfinite(ts).all() and (ts >= rules.TS_MIN).all() and (ts <= rules.TS_MAX).all()):
        return True
    rid = batch["request_id"]  # blank: spaces only (TRIM's set), all of which sort before '!'
    if kinds["request_id"] == "text" and pc.any(pc.less(rid, "!")).as_py() and \
            pc.any(pc.equal(pc.utf8_length(pc.utf8_trim(rid.filter(pc.less(rid, "!")), " ")), 0)).as_py():
        return True
    for col in ("watch_ratio", "converted", "dwell_ms"):
        if batch.get(col) is None:
            continue
        present = np.asarray(batch[col].is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        if col == "watch_ratio" and watch and not present.all():
            return True
        v = _numbers(batch[col], kinds[col])[present]
        high = {"watch_ratio": rules.WATCH_RATIO_MAX, "dwell_ms": rules.DWELL_MS_MAX}.get(col, 1.0)
        ok = ((v == 0) | (v == 1)) if col == "converted" else (np.isfinite(v) & (v >= 0) & (v <= high))
        if not ok.all():
            return True
    return False


# --- the compiled kernels (plain Python bodies, compiled by numba on first use) ------------------
_FNV_PRIME = 0x100000001B3
_SEED_A, _SEED_B = 0xCBF29CE484222325, 0x84222325CBF29CE4


def _fmix(h: Any) -> Any:  # pragma: no cover - compiled by numba
    """murmur3's 64-bit finalizer: every input bit reaches every output bit."""
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xFF51AFD7ED558CCD)
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xC4CEB9FE1A85EC53)
    h ^= h >> np.uint64(33)
    return h


def _rotl(h: Any, r: int) -> Any:  # pragma: no cover - compiled by numba
    return (h << np.uint64(r)) | (h >> np.uint64(64 - r))


def _hash_text(offsets: Any, data: Any, out_a: Any, out_b: Any) -> int:  # pragma: no cover - compiled by numba
    """Two 64-bit hashes of each string, 8 bytes at a time (two multiply-rotate streams with their own
    constants, each finished with the length by :func:`_fmix`); returns the number of blank strings
    (empty or spaces only: what DuckDB's TRIM leaves empty)."""
    blank = 0
    k1, k2 = np.uint64(0x87C37B91114253D5), np.uint64(0x4CF5AD432745937F)
    spaces8 = np.uint64(0x2020202020202020)
    for i in range(out_a.size):
        a, b = np.uint64(_SEED_A), np.uint64(_SEED_B)
        j, hi = offsets[i], offsets[i + 1]
        spaces = True
        while j < hi:
            w = np.uint64(0)
            n = min(8, hi - j)
            for t in range(n):
                w |= np.uint64(data[j + t]) << np.uint64(8 * t)
            if w != (spaces8 >> np.uint64(8 * (8 - n))):
                spaces = False
            a = rotl((a ^ w) * k1, 31) * k2
            b = rotl((b + w) * k2, 27) ^ (b * k1)
            j += n
        if spaces:
            blank += 1
        length = np.uint64(hi - offsets[i])
        out_a[i] = fmix(a ^ length)
        out_b[i] = fmix(b + length * k1)
    return blank


def _hash_ints(values: Any, out_a: Any, out_b: Any) -> None:  # pragma: no cover - compiled by numba
    for i in range(values.size):
        v = np.uint64(values[i])
        out_a[i] = fmix(v ^ np.uint64(_SEED_A))
        out_b[i] = fmix((v + np.uint64(_SEED_B)) * np.uint64(_FNV_PRIME))


def _accumulate(qa: Any, qb: Any, da: Any, db: Any, pos: Any, clicked: Any, ts: Any, wr: Any, bounds: Any,
                table: Any, new_rows: Any, state: Any, cells: Any, watch: Any, start: int) -> int:  # pragma: no cover - compiled by numba
    """Add rows ``start..`` of a batch to the cells; returns the row to resume at (``qa.size``: done).

    ``bounds``: (low, high) of the window's ``ts``, ``as_of`` and the half-life in seconds (0: no
    decay). ``table[slot]``: open addressing on the two hashes of (query, document), then the pair + 1
    (0: a free slot), one cache line per look-up. ``state``: [pairs, capacity in pairs, positions per
    pair, pairs at the batch's start]. ``cells[cell]``: impressions, clicks, weight, weighted clicks
    (and, with a ``watch_ratio`` column, the weighted watch and 1.0 where a row of the cell had one),
    with ``cell = pair * positions + position - 1``. It stops before a new pair would pass the
    capacity or fill the table beyond half."""
    low, high, as_of, half_life = bounds[0], bounds[1], bounds[2], bounds[3]
    mask = np.uint64(table.shape[0] - 1)
    n_pairs, capacity, width = state[0], state[1], state[2]
    watched = watch.shape[0] > 1
    for i in range(start, qa.size):
        t = ts[i]
        if t < low or t > high:
            continue
        ka = fmix(qa[i] * np.uint64(_FNV_PRIME) ^ da[i])
        kb = fmix(qb[i] ^ (db[i] * np.uint64(0x9E3779B97F4A7C15)))
        slot = ka & mask
        while True:
            if table[slot, 2] == 0:
                if n_pairs >= capacity or 2 * (n_pairs + 1) > table.shape[0]:
                    state[0] = n_pairs
                    return i
                table[slot, 0] = ka
                table[slot, 1] = kb
                table[slot, 2] = n_pairs + 1
                new_rows[n_pairs - state[3]] = i
                n_pairs += 1
                break
            if table[slot, 0] == ka and table[slot, 1] == kb:
                break
            slot = (slot + np.uint64(1)) & mask
        cell = (np.int64(table[slot, 2]) - 1) * width + pos[i] - 1
        w = 0.5 ** ((as_of - t) / half_life) if half_life > 0 else 1.0
        c = clicked[i]
        record = cells[cell]
        record.n += 1
        record.c += c
        record.w += w
        record.cw += w * c
        if watched and not np.isnan(wr[i]):
            watch[cell, 0] += w * wr[i]
            watch[cell, 1] = 1.0
    state[0] = n_pairs
    return int(qa.size)


def _rehash(old: Any, table: Any) -> None:  # pragma: no cover - compiled by numba
    mask = np.uint64(table.shape[0] - 1)
    for s in range(old.shape[0]):
        if old[s, 2] == 0:
            continue
        slot = old[s, 0] & mask
        while table[slot, 2] != 0:
            slot = (slot + np.uint64(1)) & mask
        table[slot, 0] = old[s, 0]
        table[slot, 1] = old[s, 1]
        table[slot, 2] = old[s, 2]


def _extract(order: Any, cells: Any, watch: Any, width: int, pair: Any, position: Any, impressions: Any, clicks: Any,
             weight: Any, weighted_clicks: Any, weighted_watch: Any) -> None:  # pragma: no cover - compiled by numba
    """The shown cells of pairs in their new ``order``, one output entry per cell (``weighted_watch``
    has one entry per cell with a ``watch_ratio`` column, NaN where no row of the cell had one; else one)."""
    k = 0
    for new in range(order.size):
        base = order[new] * width
        for r in range(width):
            record = cells[base + r]
            if record.n == 0:
                continue
            pair[k] = new
            position[k] = r + 1
            impressions[k] = record.n
            clicks[k] = record.c
            weight[k] = record.w
            weighted_clicks[k] = record.cw
            if weighted_watch.size > 1:
                weighted_watch[k] = watch[base + r, 0] if watch[base + r, 1] > 0 else np.nan
            k += 1


fmix, rotl = _fmix, _rotl  # the names the kernel bodies call; the compiled helpers where they are compiled
_compiled: dict[str, Any] = {}


def _kernels() -> dict[str, Any] | None:
    """The compiled kernels by name (None where numba cannot be imported)."""
    if not _compiled:
        if _jit.load_numba() is None:
            return None
        helpers = {"fmix": _jit.compile_kernel(_fmix, {}, "scan_fmix"), "rotl": _jit.compile_kernel(_rotl, {}, "scan_rotl")}
        for fn in (_hash_text, _hash_ints, _accumulate, _rehash, _extract):
            _compiled[fn.__name__] = _jit.compile_kernel(fn, helpers, "scan" + fn.__name__)
    return _compiled


# --- the driver --------------------------------------------------------------------------------
def _ids_hashes(array: Any, kernels: dict[str, Any]) -> tuple[np.ndarray, np.ndarray] | None:
    """The two hashes of each id of a batch (text or integers); None when one is missing or blank."""
    import pyarrow as pa

    if array.null_count:
        return None
    n = len(array)
    out_a, out_b = np.empty(n, dtype=_U64), np.empty(n, dtype=_U64)
    if pa.types.is_integer(array.type):
        kernels["_hash_ints"](np.asarray(array.to_numpy(zero_copy_only=False), dtype=np.int64), out_a, out_b)
        return out_a, out_b
    _, offsets_buf, data_buf = array.buffers()
    wide = pa.types.is_large_string(array.type)
    offsets = np.frombuffer(offsets_buf, dtype=np.int64 if wide else np.int32)[array.offset:array.offset + n + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    if kernels["_hash_text"](offsets, data, out_a, out_b):
        return None
    return out_a, out_b


class _Scan:
    """The growing state of pass 2: the pair table, the dense cells, the new pairs' ids."""

    def __init__(self, width: int, watched: bool) -> None:
        self.width = width
        capacity = MAX_CELL_BYTES // (width * CELL.itemsize)
        self.table = np.zeros((1 << 16, 3), dtype=_U64)
        self.cells = np.zeros(capacity * width, dtype=CELL)  # reserved, not touched: see MAX_CELL_BYTES
        self.watch = np.zeros((capacity * width if watched else 1, 2), dtype=np.float64)
        self.state = np.array([0, capacity, width, 0], dtype=np.int64)
        self.query_ids: list[Any] = []
        self.doc_ids: list[Any] = []

    def grow(self, kernels: dict[str, Any]) -> bool:
        """A table twice as large when it is half full; False when the cells are full."""
        n_pairs, capacity = int(self.state[0]), int(self.state[1])
        if n_pairs >= capacity:
            return False
        if 2 * (n_pairs + 1) > self.table.shape[0]:
            old, self.table = self.table, np.zeros((self.table.shape[0] * 2, 3), dtype=_U64)
            kernels["_rehash"](old, self.table)
        return True

    def add(self, batch: dict[str, Any], kinds: dict[str, str], bounds: np.ndarray, kernels: dict[str, Any]) -> bool:
        """Add one batch; False when the path gives up (a blank id, too many cells)."""
        q, d = _ids_hashes(batch["query_id"], kernels), _ids_hashes(batch["doc_id"], kernels)
        if q is None or d is None:
            return False
        pos = np.asarray(_numbers(batch["position"], kinds["position"]), dtype=np.int64)
        clicked = np.asarray(_numbers(batch["clicked"], kinds["clicked"]), dtype=np.int64)
        ts = _numbers(batch["ts"], kinds["ts"])
        wr = _numbers(batch["watch_ratio"], kinds["watch_ratio"]) if batch.get("watch_ratio") is not None \
            else np.full(len(ts), np.nan)
        new_rows = np.empty(len(ts), dtype=np.int64)
        self.state[3] = self.state[0]
        row = 0
        while True:
            row = kernels["_accumulate"](q[0], q[1], d[0], d[1], pos, clicked, ts, wr, bounds, self.table,
                                         new_rows, self.state, self.cells, self.watch, row)
            if row >= len(ts):
                break
            if not self.grow(kernels):
                return False
        fresh = new_rows[: int(self.state[0] - self.state[3])]
        if fresh.size:
            self.query_ids.append(batch["query_id"].take(fresh))
            self.doc_ids.append(batch["doc_id"].take(fresh))
        return True

    def result(self, kernels: dict[str, Any]) -> tuple[CellCounts, list[str], list[str]]:
        """The cells of pairs numbered in the text order of their ids (as the DuckDB engine numbers them),
        sorted by (pair, position), with the pairs' ids."""
        import pyarrow as pa
        import pyarrow.compute as pc

        n_pairs, width = int(self.state[0]), self.width
        self.table = np.zeros((0, 3), dtype=_U64)
        qs = pa.concat_arrays(self.query_ids).cast(pa.string()) if self.query_ids else pa.array([], pa.string())
        ds = pa.concat_arrays(self.doc_ids).cast(pa.string()) if self.doc_ids else pa.array([], pa.string())
        self.query_ids, self.doc_ids = [], []
        pa.default_memory_pool().release_unused()  # the batches' pages, before the outputs are allocated
        order = pc.sort_indices(pa.table({"q": qs, "d": ds}), sort_keys=[("q", "ascending"), ("d", "ascending")])
        n_cells = int(np.count_nonzero(self.cells["n"][: n_pairs * width]))
        watched = self.watch.shape[0] > 1
        out: dict[str, Any] = {"pair": np.empty(n_cells, np.int32), "position": np.empty(n_cells, np.int16),
               "impressions": np.empty(n_cells, np.int32), "clicks": np.empty(n_cells, np.int32),
               "weight": np.empty(n_cells), "weighted_clicks": np.empty(n_cells),
               "weighted_watch": np.empty(n_cells if watched else 1)}
        kernels["_extract"](np.asarray(order.to_numpy(), dtype=np.int64), self.cells, self.watch, width, *out.values())
        self.cells, self.watch = np.zeros(0, CELL), np.zeros((1, 2))
        if not watched:
            out["weighted_watch"] = np.broadcast_to(np.float64(np.nan), (n_cells,))
        out["position"] = narrow_positions(out["position"])
        query_ids, doc_ids = qs.take(order).to_pylist(), ds.take(order).to_pylist()
        del qs, ds, order
        pa.default_memory_pool().release_unused()
        return CellCounts(n_pairs=n_pairs, **out), query_ids, doc_ids


def _survey(files: list[str], kinds: dict[str, str], request: LogRequest) -> tuple[float | None, float | None, int] | None:
    """Pass 1 over the small columns: every rule but the ids' (None: a bad row), the window's first and
    last ``ts`` and the largest position."""
    names = request.source_names()
    low = -np.inf if request.since is None else float(request.since)
    high = np.inf if request.until is None else float(request.until)
    first, last, width = np.inf, -np.inf, 0
    columns = ["request_id", "position", "clicked", "ts"] + [c for c in ("watch_ratio", "converted", "dwell_ms") if c in kinds]
    for batch in _prefetched(_batches(files, columns, names)):
        position, ts = _numbers(batch["position"], kinds["position"]), _numbers(batch["ts"], kinds["ts"])
        if _bad_row(batch, kinds, request.watch, position, ts):
            return None
        inside = ts[(ts >= low) & (ts <= high)]
        if inside.size:
            first, last = min(first, float(inside.min())), max(last, float(inside.max()))
        if len(ts):
            width = max(width, int(position.max()))
    return (None, None, width) if first > last else (first, last, width)


def aggregate(request: LogRequest, files: list[str]) -> LogAggregates | None:
    """The DuckDB engine's result for Parquet ``files`` by the compiled scan, or None where the scan does
    not apply (the caller then asks DuckDB, which also names a bad row exactly, or a damaged file)."""
    import pyarrow as pa

    try:
        return _aggregate(request, files)
    except (pa.ArrowException, OSError):  # a file pyarrow cannot read: DuckDB's message names it
        return None


def _aggregate(request: LogRequest, files: list[str]) -> LogAggregates | None:
    kernels = _kernels()
    kinds = _plan(request, files) if kernels is not None and not request.sessions else None
    if kinds is None or kernels is None:
        return None
    survey = _survey(files, kinds, request)
    if survey is None:
        return None
    first, last, width = survey
    as_of = request.as_of if request.as_of is not None else last
    high = min(np.inf if request.until is None else float(request.until), np.inf if as_of is None else float(as_of))
    bounds = np.array([-np.inf if request.since is None else float(request.since), high,
                       0.0 if as_of is None else float(as_of),
                       0.0 if request.half_life_s is None or as_of is None else float(request.half_life_s)])
    watched = "watch_ratio" in kinds
    try:
        scan = _Scan(max(width, 1), watched)
    except MemoryError:  # the reservation refused (no overcommit): DuckDB spills to disk instead
        return None
    columns = ["query_id", "doc_id", "position", "clicked", "ts"] + (["watch_ratio"] if watched else [])
    for batch in _prefetched(_batches(files, columns, request.source_names())):
        if not scan.add(batch, kinds, bounds, kernels):
            return None
    cells, query_ids, doc_ids = scan.result(kernels)
    if rules.first_bad_log_id(query_ids, doc_ids, request.source_names()) is not None:
        return None  # an id the importers refuse: DuckDB names its row (the check is on the distinct ids)
    return LogAggregates(query_ids=query_ids, doc_ids=doc_ids, cells=cells, sessions=None, as_of=as_of,
                         n_impressions=int(cells.impressions.sum()), n_requests=None, first_ts=first,
                         last_ts=last, files=list(files))
