"""Where a sweep's tasks run: in this process, on a local cluster of single-threaded workers, or on
an existing Dask cluster.

- ``workers = 0``: no cluster; the driver runs every task itself, one after the other.
- ``workers = N``: a ``LocalCluster`` of ``N`` worker processes with one thread each, their BLAS,
  OpenMP, torch and ``STUMPLIB_THREADS`` pinned to one thread (:func:`single_thread_environment`),
  so ``N`` tasks run side by side without oversubscribing the cores. With ``gpus = G`` the first
  ``G`` workers each see one GPU (``CUDA_VISIBLE_DEVICES``) and offer the resource ``GPU = 1``,
  which every CUDA task requests.
- ``scheduler = ADDRESS``: the cluster at that address (for example ``dask-jobqueue``'s
  ``SLURMCluster``), started by the user, whose workers should be started with the same
  environment (:func:`single_thread_environment`) and, for CUDA tasks, ``--resources GPU=1``.

Dask's nanny starts its workers with ``MALLOC_TRIM_THRESHOLD_=65536`` (its setting
``distributed.nanny.pre-spawn-environ``). Setting it switches off glibc's dynamic mmap threshold,
so every large numpy temporary is mapped and zeroed afresh: measured on the 2-core machine, a
chapter-5 notebook ran 1.8 times slower under it and a minimiser task 1.07 times
(``scripts/BENCH_sweeps.md``). Local clusters are started without it, a task's own processes
(the audit's notebook kernels) never inherit it (:data:`MALLOC_VARIABLES`), and :func:`connect`
warns when an existing cluster's workers carry it.

Dask and distributed are imported only when a cluster is used.
"""
from __future__ import annotations

import contextlib
import logging
import os
from typing import Any, Callable, Iterator

#: environment variables that cap the threads of BLAS, OpenMP, numexpr and the phase solver
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "STUMPLIB_THREADS")
#: times a task may lose its worker before the scheduler gives up on it (then the driver's retry)
ALLOWED_FAILURES = 2

#: allocator variables Dask's nanny sets by default that a task runs without (see the module's text)
MALLOC_VARIABLES = ("MALLOC_TRIM_THRESHOLD_",)


def single_thread_environment() -> dict[str, str]:
    """The environment of a worker: every thread variable (:data:`THREAD_VARIABLES`) set to 1.

    Returns
    -------
    dict of str
        ``{name: "1"}`` for each variable.
    """
    return {k: "1" for k in THREAD_VARIABLES}


def pin_threads() -> None:
    """Pin this process to one thread: the thread variables (read by the phase solver and by the
    processes it starts) and torch's intra-op threads. BLAS libraries already loaded keep the thread
    count they read at start-up, which is why workers get the variables in their environment."""
    os.environ.update(single_thread_environment())
    try:
        import torch
    except ImportError:  # pragma: no cover (torch is a requirement)
        return
    if torch.get_num_threads() != 1:
        torch.set_num_threads(1)


@contextlib.contextmanager
def single_threaded() -> Iterator[None]:
    """Run a block pinned to one thread (:func:`pin_threads`) and without
    :data:`MALLOC_VARIABLES` (so processes the block starts do not inherit them), then restore the
    environment and torch's thread count (a task run in the driver leaves the driver as it was).

    Yields
    ------
    None
    """
    saved = {k: os.environ.get(k) for k in THREAD_VARIABLES + MALLOC_VARIABLES}
    try:
        import torch

        threads = torch.get_num_threads()
    except ImportError:  # pragma: no cover (torch is a requirement)
        torch, threads = None, 1
    pin_threads()
    for k in MALLOC_VARIABLES:
        os.environ.pop(k, None)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        if torch is not None and torch.get_num_threads() != threads:
            torch.set_num_threads(threads)


def available_cores() -> int:
    """The CPUs this process may use (its affinity mask).

    Returns
    -------
    int
        At least 1.
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover (not Linux)
        return max(1, os.cpu_count() or 1)


def check_workers(workers: Any, scheduler: Any = None) -> int | None:
    """Check ``--workers`` and ``--scheduler`` before any work.

    Parameters
    ----------
    workers : int or None
        Worker processes of a local cluster, 0 (run in the driver) to 1024; ``None``: the cores
        this process may use (:func:`available_cores`), or the remote cluster's when ``scheduler``
        is given.
    scheduler : str or None, optional
        The address of an existing scheduler (``tcp://host:port`` or ``host:port``).

    Returns
    -------
    int or None
        The number of local workers; ``None`` for a remote cluster.

    Raises
    ------
    ValueError
        ``workers`` not an integer in 0 to 1024, a scheduler together with ``workers``, or an
        empty scheduler address; the message names the parameter and the allowed range.
    """
    if scheduler is not None:
        if not isinstance(scheduler, str) or not scheduler.strip():
            raise ValueError(f"scheduler must be an address such as tcp://host:8786; got {scheduler!r}")
        if workers is not None:
            raise ValueError("workers and scheduler: give one (a remote cluster has its own workers)")
        return None
    if workers is None:
        return available_cores()
    if isinstance(workers, bool) or not isinstance(workers, int) or not 0 <= workers <= 1024:
        raise ValueError(f"workers must be an integer in 0 to 1024 (0: run in the driver); got "
                         f"{workers!r}")
    return workers


def _local_cluster(workers: int, gpus: int, dashboard_address: str | None):
    import dask

    # the nannies read their pre-spawn environment when they are made: without the allocator's
    with dask.config.set({f"distributed.nanny.pre-spawn-environ.{k}": None
                          for k in MALLOC_VARIABLES}):
        return _make_local_cluster(workers, gpus, dashboard_address)


def _make_local_cluster(workers: int, gpus: int, dashboard_address: str | None):
    from distributed import LocalCluster, Nanny, Scheduler, SpecCluster

    env = single_thread_environment()
    quiet = logging.CRITICAL  # the driver records every task's error; workers stay silent
    if gpus == 0:
        return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, env=env,
                            dashboard_address=dashboard_address, silence_logs=quiet)
    spec = {}
    for i in range(workers):
        opts: dict[str, Any] = {"nthreads": 1, "silence_logs": quiet,
                                "env": dict(env, CUDA_VISIBLE_DEVICES=str(i) if i < gpus else "")}
        if i < gpus:
            opts["resources"] = {"GPU": 1}
        spec[f"worker-{i}"] = {"cls": Nanny, "options": opts}
    return SpecCluster(workers=spec, silence_logs=quiet, scheduler={
        "cls": Scheduler, "options": {"dashboard_address": dashboard_address}})


@contextlib.contextmanager
def connect(workers: int | None = None, scheduler: str | None = None, *, gpus: int = 0,
            dashboard_address: str | None = ":8787",
            announce: Callable[[str], None] | None = print) -> Iterator[Any]:
    """A Dask client for a sweep (or ``None`` to run in the driver), closed on exit.

    Parameters
    ----------
    workers : int or None, optional
        Local worker processes (:func:`check_workers`; 0: no cluster, ``None``: every core).
    scheduler : str or None, optional
        Address of an existing cluster's scheduler (instead of ``workers``).
    gpus : int, optional
        Local workers that each get one GPU and the resource ``GPU = 1`` (default 0).
    dashboard_address : str or None, optional
        Where a local cluster serves its dashboard (default ``":8787"``; taken: another port).
    announce : callable or None, optional
        Called once with a line naming the cluster and its dashboard (default ``print``).

    Yields
    ------
    distributed.Client or None
        The client; ``None`` for ``workers = 0``.
    """
    n = check_workers(workers, scheduler)
    if n == 0:
        if announce:
            announce("sweep: running every task in this process (--workers 0)")
        yield None
        return
    import dask
    from distributed import Client

    with dask.config.set({"distributed.scheduler.allowed-failures": ALLOWED_FAILURES}):
        with contextlib.ExitStack() as stack:
            if scheduler is not None:
                client = stack.enter_context(Client(scheduler))
            else:
                if gpus and gpus > n:
                    raise ValueError(f"gpus must be at most workers ({n}); got {gpus}")
                cluster = stack.enter_context(_local_cluster(n, gpus, dashboard_address))
                client = stack.enter_context(Client(cluster))
            if announce:
                announce(f"sweep: {describe(client)}")
                if scheduler is not None and (warning := malloc_warning(client)):
                    announce(f"sweep: warning: {warning}")
            yield client


def _malloc_environment() -> dict[str, str]:
    return {k: os.environ[k] for k in MALLOC_VARIABLES if k in os.environ}


def malloc_warning(client: Any) -> str | None:
    """What an existing cluster's workers carry of :data:`MALLOC_VARIABLES`, as a warning.

    Parameters
    ----------
    client : distributed.Client
        A client of the cluster.

    Returns
    -------
    str or None
        A sentence naming the variables, their values and how to start the workers without
        them; ``None`` when no worker has any.
    """
    found = sorted({f"{k}={v}" for env in client.run(_malloc_environment).values()
                    for k, v in env.items()})
    if not found:
        return None
    return (f"the workers run with {', '.join(found)} (Dask's default), which slows numpy-heavy "
            "tasks (1.07x to 1.8x measured); start them with the Dask setting "
            "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_: null (running.md, "
            "\"Heavy runs as sweeps\")")


def describe(client: Any) -> str:
    """The cluster behind a client, in one line.

    Parameters
    ----------
    client : distributed.Client or None
        The sweep's client.

    Returns
    -------
    str
        ``"in the driver"``, or the scheduler's address, its workers and threads now and the
        dashboard's address (or that it has none).
    """
    if client is None:
        return "in the driver (no cluster)"
    info = client.scheduler_info()
    ws = info.get("workers", {})
    threads = sum(w.get("nthreads", 0) for w in ws.values())
    gpus = sum(w.get("resources", {}).get("GPU", 0) for w in ws.values())
    dash = client.dashboard_link if "dashboard" in info.get("services", {}) else "none"
    return (f"scheduler {info.get('address', '?')}, {len(ws)} workers ({threads} threads"
            f"{f', {gpus:g} GPUs' if gpus else ''}) now; dashboard: {dash}")
