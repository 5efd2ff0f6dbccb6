"""The compiled reader and join for large TREC files: bytes in, ranked relevance lists out.

The kernel bodies are plain Python compiled by numba through :mod:`ndcg_labeling._jit` (they are never
run uncompiled: without numba, or for small files, :mod:`ndcg_labeling.trec.files` and
:mod:`ndcg_labeling.trec.join` do the same work line by line). No string is made per line: query ids
go through a hash table to small codes, document ids stay byte ranges of the file with a 32-bit
FNV-1a hash, and bytes are compared wherever two hashes meet, so a hash collision never merges two
ids. Scores of the plain form ``[-]digits[.digits]`` with at most 15 significant digits are parsed
here exactly (mantissa and power of ten are exact doubles, their quotient is correctly rounded, as
``strtod`` rounds); other numbers are marked and parsed by NumPy afterwards. Anything else unusual
(a short line, a rank that is not plain digits, a byte >= 0x80 or one of 0x1C-0x1F, which Python's
``str.split`` takes for blanks, a word for a score) returns a status
that sends the caller to the line reader, whose messages name the line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ndcg_labeling import _jit

OK, FALLBACK = 0, 1
_compiled: dict[str, Callable[..., Any]] = {}


def _blank(c: int) -> bool:  # pragma: no cover - compiled
    return c == 32 or c == 9 or c == 13 or c == 11 or c == 12


def _fnv(buf: Any, start: Any, end: Any) -> Any:  # pragma: no cover - compiled
    h = np.uint64(14695981039346656037)
    for i in range(start, end):
        h = (h ^ np.uint64(buf[i])) * np.uint64(1099511628211)
    return h


def _fnv32(buf: Any, start: Any, end: Any) -> Any:  # pragma: no cover - compiled
    return np.uint32(_fnv(buf, start, end) & np.uint64(0xFFFFFFFF))


def _cmp(a: Any, sa: int, la: int, b: Any, sb: int, lb: int) -> int:  # pragma: no cover - compiled
    """Byte order of two byte ranges (strcmp's order): -1, 0, 1."""
    n = min(la, lb)
    for i in range(n):
        x, y = a[sa + i], b[sb + i]
        if x != y:
            return -1 if x < y else 1
    return 0 if la == lb else (-1 if la < lb else 1)


def _number(buf: Any, s: int, e: int) -> tuple[int, float]:  # pragma: no cover - compiled
    """``(status, value)``: 0 parsed exactly, 1 a number NumPy must parse, 2 not a plain number."""
    i, neg = s, False
    if i < e and (buf[i] == 45 or buf[i] == 43):
        neg = buf[i] == 45
        i += 1
    mant, digits, frac, seen_dot, any_digit = 0, 0, 0, False, False
    while i < e:
        c = buf[i]
        if 48 <= c <= 57:
            any_digit = True
            if mant > 0 or c != 48:
                digits += 1
            if digits <= 18:
                mant = mant * 10 + (c - 48)
            if seen_dot:
                frac += 1
        elif c == 46 and not seen_dot:
            seen_dot = True
        elif c == 101 or c == 69:
            return (1, 0.0) if any_digit else (2, 0.0)
        else:
            return 2, 0.0
        i += 1
    if not any_digit:
        return 2, 0.0
    if digits > 15 or frac > 22:
        return 1, 0.0
    value = mant / 10.0**frac
    return 0, -value if neg else value


def _scan_py(buf: Any, run: bool, qtable: Any, qbufs: Any, which: int) -> Any:  # pragma: no cover
    """Tokenise every line: query code, document range and hash, score (run) or label (qrels).

    ``qtable`` maps a query id's hash to ``(code, file, start, length)`` of its first occurrence
    (shared by both files; bytes are compared on every hit). Returns ``(status, qcode, dstart, dlen, dhash, value, slow,
    tag_start, tag_len, n)``.
    """
    n_bytes = buf.shape[0]
    cap = 1024
    for i in range(n_bytes):
        if buf[i] == 10:
            cap += 1
    qcode = np.empty(cap, np.int32)
    dstart = np.empty(cap, np.uint32)  # offsets: fast.py leaves files of 4 GiB and more to the other readers
    dlen = np.empty(cap, np.uint16)  # ids of 64 KiB and more go to the line reader
    dhash = np.empty(cap, np.uint32)  # 32 bits: every match is confirmed on the bytes anyway
    value = np.empty(cap, np.float64)
    slow = np.zeros(cap, np.bool_)
    fs = np.zeros(7, np.int64)
    fe = np.zeros(7, np.int64)
    tag_s, tag_l = 0, 0
    prev_s, prev_l = 0, 0
    n, pos = 0, 0
    while pos < n_bytes:
        i = pos
        while i < n_bytes and buf[i] != 10 and _blank(buf[i]):
            i += 1
        if i >= n_bytes or buf[i] == 10:
            pos = i + 1
            continue
        if buf[i] == 35:
            while i < n_bytes and buf[i] != 10:
                i += 1
            pos = i + 1
            continue
        nf = 0
        while i < n_bytes and buf[i] != 10:
            s = i
            while i < n_bytes and buf[i] != 10 and not _blank(buf[i]):
                if buf[i] >= 128 or buf[i] == 0 or 28 <= buf[i] <= 31:  # 0x1C-0x1F: blanks to str.split
                    return (FALLBACK, qcode, dstart, dlen, dhash, value, slow, 0, 0, 0)
                i += 1
            if nf < 7:
                fs[nf] = s
                fe[nf] = i
            nf += 1
            if i - s > 65535:
                return (FALLBACK, qcode, dstart, dlen, dhash, value, slow, 0, 0, 0)
            while i < n_bytes and buf[i] != 10 and _blank(buf[i]):
                i += 1
        pos = i + 1
        if (run and nf < 6) or (not run and nf != 4):
            return (FALLBACK, qcode, dstart, dlen, dhash, value, slow, 0, 0, 0)
        # the rank (run) / the label (qrels): plain digits only, else the line reader decides
        f = 3
        st, v = _number(buf, fs[f], fe[f])
        if st != 0 or v != np.floor(v):
            return (FALLBACK, qcode, dstart, dlen, dhash, value, slow, 0, 0, 0)
        if run:
            st, v = _number(buf, fs[4], fe[4])
            if st == 2:
                return (FALLBACK, qcode, dstart, dlen, dhash, value, slow, 0, 0, 0)
            slow[n] = st == 1
            tag_s, tag_l = fs[5], fe[5] - fs[5]
        value[n] = v
        if n > 0 and _cmp(buf, fs[0], fe[0] - fs[0], buf, prev_s, prev_l) == 0:
            qcode[n] = qcode[n - 1]  # files list a query's lines together: no hashing for those
            dstart[n] = fs[2]
            dlen[n] = fe[2] - fs[2]
            dhash[n] = _fnv32(buf, fs[2], fe[2])
            n += 1
            continue
        prev_s, prev_l = fs[0], fe[0] - fs[0]
        h = _fnv(buf, fs[0], fe[0])
        if h not in qtable:
            code = len(qtable)
            qtable[h] = (code, which, fs[0], fe[0] - fs[0])
        else:
            first = qtable[h]
            code = first[0]
            if _cmp(buf, fs[0], fe[0] - fs[0], qbufs[first[1]], first[2], first[3]) != 0:
                return (FALLBACK, qcode, dstart, dlen, dhash, value, slow, 0, 0, 0)  # a 64-bit collision
        qcode[n] = code
        dstart[n] = fs[2]
        dlen[n] = fe[2] - fs[2]
        dhash[n] = _fnv32(buf, fs[2], fe[2])
        n += 1
    return (OK, qcode[:n], dstart[:n], dlen[:n], dhash[:n], value[:n], slow[:n], tag_s, tag_l, n)


def _scan_both_py(qbuf: Any, rbuf: Any) -> Any:  # pragma: no cover - compiled
    """Both files scanned with one query table; returns ``(q, r, first)`` with ``first[code] =
    (file, start, length)`` of each query id's first occurrence (status FALLBACK in q or r: give up)."""
    zero = np.uint64(0)
    qtable = {zero: (np.int64(0), np.int64(0), np.int64(0), np.int64(0))}  # typed by this entry
    qtable.pop(zero)
    qbufs = (qbuf, rbuf)
    q = _scan(qbuf, False, qtable, qbufs, 0)
    if q[0] != OK:
        return q, q, np.zeros((0, 3), np.int64)
    r = _scan(rbuf, True, qtable, qbufs, 1)
    first = np.zeros((len(qtable), 3), np.int64)
    for v in qtable.values():
        first[v[0], 0] = v[1]
        first[v[0], 1] = v[2]
        first[v[0], 2] = v[3]
    return q, r, first


_scan = _scan_py


def _sort_desc_py(idx: Any, buf: Any, dstart: Any, dlen: Any, tmp: Any) -> None:  # pragma: no cover - compiled
    """Sort run line numbers ``idx`` in place by document id descending (byte order); merge sort."""
    n = idx.shape[0]
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid, hi = min(lo + width, n), min(lo + 2 * width, n)
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                a, b = idx[i], idx[j]
                if _cmp(buf, dstart[a], dlen[a], buf, dstart[b], dlen[b]) >= 0:
                    tmp[k] = a
                    i += 1
                else:
                    tmp[k] = b
                    j += 1
                k += 1
            tmp[k:k + mid - i] = idx[i:mid]  # what is left of one half (the other is empty)
            k += mid - i
            tmp[k:k + hi - j] = idx[j:hi]
        idx[:] = tmp[:n]
        width *= 2


_sort_desc = _sort_desc_py  # the compiled build binds the compiled helper under this name


def _lookup(table: Any, mask: int, qcode: int, h: Any, buf: Any, s: int, ln: int, q_qcode: Any, q_dhash: Any,
            qbuf: Any, q_dstart: Any, q_dlen: Any) -> int:  # pragma: no cover - compiled
    """The qrels line judging (query, document), -1 if none: open addressing over ``table``."""
    slot = np.int64((h ^ (np.uint64(qcode) * np.uint64(0x9E3779B97F4A7C15))) & np.uint64(mask))
    while table[slot] >= 0:
        t = table[slot]
        if q_qcode[t] == qcode and q_dhash[t] == h and _cmp(buf, s, ln, qbuf, q_dstart[t], q_dlen[t]) == 0:
            return int(t)
        slot = (slot + 1) & mask
    return -1


def _join_py(qbuf: Any, q_qcode: Any, q_dstart: Any, q_dlen: Any, q_dhash: Any, q_rel: Any,
             rbuf: Any, r_qcode: Any, r_dstart: Any, r_dlen: Any, r_dhash: Any, r_score: Any,
             n_codes: int, rows_code: Any, max_docs: int, judged_only: bool) -> Any:  # pragma: no cover - compiled
    """Ranked relevance lists of the queries ``rows_code`` (see :mod:`ndcg_labeling.trec.join`).

    Returns ``(rel, num_ret, duplicate qrels line index, duplicate run line index)`` (-1: none).
    """
    nq = q_qcode.shape[0]
    size = 1
    while size < nq + nq // 2 + 1:  # load factor at most 2/3
        size *= 2
    mask = size - 1
    table = np.full(size, -1, np.int32)
    dup_q = -1
    for t in range(nq):
        h = q_dhash[t]
        found = _lookup(table, mask, q_qcode[t], h, qbuf, q_dstart[t], q_dlen[t], q_qcode, q_dhash, qbuf,
                        q_dstart, q_dlen)
        if found >= 0:
            if dup_q < 0:
                dup_q = t
            continue
        slot = np.int64((h ^ (np.uint64(q_qcode[t]) * np.uint64(0x9E3779B97F4A7C15))) & np.uint64(mask))
        while table[slot] >= 0:
            slot = (slot + 1) & mask
        table[slot] = t
    # Run lines grouped by query code, file order kept: where each query's lines are together in the
    # file (as retrieval tools write runs) the lines of code c are first[c]..first[c] + count - 1;
    # otherwise a counting sort (4 bytes a line more).
    nr = r_qcode.shape[0]
    start = np.zeros(n_codes + 1, np.int64)
    first = np.full(n_codes, -1, np.int64)
    together = True
    for i in range(nr):
        c = r_qcode[i]
        start[c + 1] += 1
        if first[c] < 0:
            first[c] = i
        elif r_qcode[i - 1] != c:
            together = False
    for c in range(n_codes):
        start[c + 1] += start[c]
    perm = np.empty(0 if together else nr, np.int32)
    if not together:
        fill = start[:-1].copy()
        for i in range(nr):
            c = r_qcode[i]
            perm[fill[c]] = i
            fill[c] += 1
    n_rows = rows_code.shape[0]
    width = 0
    for row in range(n_rows):
        c = rows_code[row]
        m = start[c + 1] - start[c]
        if max_docs >= 0:  # -1: no -M (-M 0 evaluates empty lists, as trec_eval)
            m = min(m, max_docs)
        width = max(width, m)
    rel = np.full((n_rows, width), np.nan)
    num_ret = np.zeros(n_rows, np.int64)
    dup_r = -1
    for row in range(n_rows):
        c = rows_code[row]
        m = start[c + 1] - start[c]
        if m == 0:
            continue
        lines = np.arange(first[c], first[c] + m).astype(np.int32) if together else perm[start[c]:start[c + 1]]
        order = lines[np.argsort(-r_score[lines], kind="mergesort")]
        label = np.empty(m, np.int64)
        doc_hash = np.empty(m, np.uint32)  # of the document at each rank
        for j in range(m):
            i = order[j]
            doc_hash[j] = r_dhash[i]
            label[j] = _lookup(table, mask, c, doc_hash[j], rbuf, r_dstart[i], r_dlen[i], q_qcode, q_dhash, qbuf,
                               q_dstart, q_dlen)
        keep = m if max_docs < 0 else min(m, max_docs)
        # Equal scores: by document id descending - needed only where a judged document is in the group
        # (unjudged documents are interchangeable) or the group straddles the -M cut.
        g = 0
        while g < m:
            e = g + 1
            while e < m and r_score[order[e]] == r_score[order[g]]:
                e += 1
            if e - g > 1:
                judged = False
                for j in range(g, e):
                    if label[j] >= 0:
                        judged = True
                if judged or (g < keep < e):
                    part = order[g:e].copy()
                    _sort_desc(part, rbuf, r_dstart, r_dlen, np.empty(e - g, part.dtype))
                    order[g:e] = part
                    for j in range(g, e):
                        i = order[j]
                        doc_hash[j] = r_dhash[i]
                        label[j] = _lookup(table, mask, c, doc_hash[j], rbuf, r_dstart[i], r_dlen[i], q_qcode,
                                           q_dhash, qbuf, q_dstart, q_dlen)
            g = e
        # The same document twice among the kept ones: the later line of the first such pair in file order
        # (every pair of equal hashes is compared, so their order does not matter).
        kept, hs = order[:keep], doc_hash[:keep]
        by_hash = np.argsort(hs)
        g = 0
        while g < keep:  # every pair within a run of equal hashes (runs of 2 or more are rare)
            e = g + 1
            while e < keep and hs[by_hash[e]] == hs[by_hash[g]]:
                e += 1
            for x in range(g, e):
                for y in range(x + 1, e):
                    a, b = kept[by_hash[x]], kept[by_hash[y]]
                    if _cmp(rbuf, r_dstart[a], r_dlen[a], rbuf, r_dstart[b], r_dlen[b]) == 0:
                        later = max(a, b)
                        if dup_r < 0 or later < dup_r:
                            dup_r = later
            g = e
        n = 0
        for j in range(keep):
            t = label[j]
            if t < 0:
                if not judged_only:
                    rel[row, n] = -1.0
                    n += 1
            elif q_rel[t] < 0:
                if not judged_only:
                    rel[row, n] = -2.0
                    n += 1
            else:
                rel[row, n] = q_rel[t]
                n += 1
        num_ret[row] = n
    return rel, num_ret, dup_q, dup_r


def _joined_py(buf: Any, start: Any, length: Any) -> Any:  # pragma: no cover - compiled
    """The byte ranges ``start[i]:start[i] + length[i]`` of ``buf`` one after the other: the data of an
    Arrow string array of every line's id (its offsets are the running sum of ``length``)."""
    total = 0
    for i in range(start.shape[0]):
        total += length[i]
    out = np.empty(total, np.uint8)
    k = 0
    for i in range(start.shape[0]):
        out[k:k + length[i]] = buf[start[i]:start[i] + length[i]]
        k += length[i]
    return out


def kernels() -> dict[str, Callable[..., Any]] | None:
    """The compiled scanner and join (None without numba)."""
    if _compiled:
        return _compiled
    if _jit.load_numba() is None:
        return None
    helpers = {name: _jit.compile_kernel(fn, {}, name) for name, fn in
               (("_blank", _blank), ("_fnv", _fnv), ("_cmp", _cmp), ("_number", _number))}
    helpers["_fnv32"] = _jit.compile_kernel(_fnv32, helpers, "_fnv32")
    helpers["_lookup"] = _jit.compile_kernel(_lookup, helpers, "_lookup")
    helpers["_sort_desc"] = _jit.compile_kernel(_sort_desc_py, helpers, "_sort_desc_py")
    helpers["_scan"] = _jit.compile_kernel(_scan_py, helpers, "_scan_py")
    _compiled["scan"] = _jit.compile_kernel(_scan_both_py, helpers, "_scan_both_py")
    _compiled["join"] = _jit.compile_kernel(_join_py, helpers, "_join_py")
    _compiled["joined"] = _jit.compile_kernel(_joined_py, {}, "_joined_py")
    return _compiled
