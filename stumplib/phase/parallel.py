"""The thread pool that splits large batches of independent problems over the cores.

One job: :func:`run_parallel` (``STUMPLIB_THREADS`` caps it, :func:`num_threads`). Every problem is
solved on its own, so results do not depend on the number of threads.
"""
from __future__ import annotations

import os
import threading
from typing import Sequence

from stumplib.core.validation import check_int

#: problems per thread below which work runs in the calling thread
PARALLEL_MIN = 2 ** 13
_POOL: list = []  # the lazily created thread pool (one per process)
_LOCAL = threading.local()  # marks the pool's threads while they work (no nested splitting)


def num_threads() -> int:
    """Threads used for large batches of proximal problems: ``STUMPLIB_THREADS`` if set, else the
    cores this process may use; 1 inside a worker thread. Every problem is solved on its own (no
    reduction across problems), so results do not depend on the number of threads (tested).

    Returns
    -------
    int
        The thread count: ``STUMPLIB_THREADS`` (checked, 1 to 256), else the number of CPUs in this
        process's affinity mask (``os.cpu_count()`` where that is unavailable), at least 1; 1 when
        called from one of the pool's worker threads (no nested splitting).

    Raises
    ------
    ValueError
        If ``STUMPLIB_THREADS`` is set but is not an integer in 1 to 256.
    """
    if getattr(_LOCAL, "worker", False):
        return 1
    env = os.environ.get("STUMPLIB_THREADS")
    if env:
        try:
            n = int(env)
        except ValueError:
            raise ValueError(f"STUMPLIB_THREADS must be an integer >= 1; got {env!r}") from None
        return check_int("STUMPLIB_THREADS", n, minimum=1, maximum=256)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover (not Linux)
        return max(1, os.cpu_count() or 1)


def run_parallel(fn, args_list: Sequence[tuple]) -> list:
    """``[fn(*a) for a in args_list]``, in the shared thread pool when there is more than one item
    (numpy releases the GIL in its element-wise kernels, so the items run on separate cores).

    The pool has one thread per item (the caller chooses the split, e.g. ``min(num_threads(), ...)``
    contiguous chunks); it is created on first use and replaced by a larger one when more items
    come. With at most one item, or when called from a worker thread, the items run in the calling
    thread.

    Parameters
    ----------
    fn : callable
        Called as ``fn(*a)`` for each ``a`` of ``args_list``; may write its results in place (into
        views of a shared array) and return ``None``.
    args_list : sequence of tuple, length ``J``
        The positional arguments of each call.

    Returns
    -------
    list, length ``J``
        ``fn(*a)`` for each ``a``, in the order of ``args_list`` (an exception in a call is raised
        here).
    """
    if len(args_list) <= 1 or getattr(_LOCAL, "worker", False):
        return [fn(*a) for a in args_list]
    n = len(args_list)
    if not _POOL or _POOL[0][0] < n:
        from concurrent.futures import ThreadPoolExecutor
        if _POOL:
            _POOL.pop()[1].shutdown(wait=False)
        _POOL.append((n, ThreadPoolExecutor(max_workers=n, thread_name_prefix="stumplib")))

    def call(a):
        _LOCAL.worker = True
        try:
            return fn(*a)
        finally:
            _LOCAL.worker = False

    return list(_POOL[0][1].map(call, args_list))
