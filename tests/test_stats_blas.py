"""stats._one_blas_thread under threads: the process-wide BLAS limit is set by the first holder and
restored only when the last one leaves (the web server answers reports in several threads at once)."""

from __future__ import annotations

import threading

from threadpoolctl import threadpool_info, threadpool_limits

from ndcg_labeling import stats

N_THREADS = 4


def _blas_threads() -> list[int]:
    return [int(info["num_threads"]) for info in threadpool_info() if info["user_api"] == "blas"]


def test_overlapping_holders_keep_one_thread_and_restore_the_original() -> None:
    # (stats imports NumPy, so threadpoolctl sees its BLAS.) An original that is not 1, so a restore too early or a restore to 1 shows.
    with threadpool_limits(3, user_api="blas"):
        original = _blas_threads()
        assert original and set(original) == {3}
        barrier = threading.Barrier(N_THREADS)
        # Each thread enters after the one before it and leaves in the same order (first in, first
        # out): the order under which a stack of threadpoolctl contexts restores while others still run.
        entered = [threading.Event() for _ in range(N_THREADS)]
        left = [threading.Event() for _ in range(N_THREADS)]
        seen: list[tuple[int, str, list[int]]] = []
        errors: list[BaseException] = []

        def holder(i: int) -> None:
            try:
                if i > 0:
                    entered[i - 1].wait(5)
                with stats._one_blas_thread():
                    entered[i].set()
                    barrier.wait(5)  # all holders are inside at once
                    seen.append((i, "all in", _blas_threads()))
                    if i > 0:
                        left[i - 1].wait(5)
                        seen.append((i, "after an earlier holder left", _blas_threads()))
                left[i].set()
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)

        threads = [threading.Thread(target=holder, args=(i,)) for i in range(N_THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert not errors
        assert len(seen) == 2 * N_THREADS - 1
        assert [(i, when, limit) for i, when, limit in seen if set(limit) != {1}] == []
        assert _blas_threads() == original
        assert stats._blas_holders == 0


def test_a_holder_that_raises_still_restores() -> None:
    with threadpool_limits(3, user_api="blas"):
        try:
            with stats._one_blas_thread():
                assert set(_blas_threads()) == {1}
                raise RuntimeError("boom")
        except RuntimeError:
            pass
        assert set(_blas_threads()) == {3}
