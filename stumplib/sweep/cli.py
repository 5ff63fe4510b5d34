"""What every sweep script shares: the ``--workers``/``--scheduler`` options, their checks, and the
run itself (open the store, start or join the cluster, run, report, exit status).

Exit status of :func:`run`: 0 when every task is done, 1 when some failed (they are recorded with
their errors; a rerun retries them), 2 when the run is refused before any work (another driver
holds the store, the store records other parameters, or it is not a store of this kind), 130 when
it was interrupted (Ctrl-C: one line says how many tasks the store holds; the same command resumes).
A run that finds tasks already done in its store says so before any work (``resuming: ...``).
"""
from __future__ import annotations

import argparse
import sys
from typing import Any, Callable, Sequence

from stumplib.sweep.cluster import check_workers, connect, describe
from stumplib.sweep.driver import Task, run_sweep
from stumplib.sweep.files import StoreLocked
from stumplib.sweep.params import ParameterMismatch
from stumplib.sweep.store import Store, StoreError

#: exit status when tasks failed, and when the run was refused before any work
EXIT_FAILED, EXIT_REFUSED = 1, 2
#: exit status of a run interrupted by Ctrl-C (128 + SIGINT, as a shell reports it)
EXIT_INTERRUPTED = 130


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """Add ``--workers``, ``--scheduler`` and ``--no-progress`` to a script's parser.

    Parameters
    ----------
    ap : argparse.ArgumentParser
        The script's parser.
    """
    g = ap.add_argument_group("where the tasks run (stumplib.sweep)")
    g.add_argument("--workers", type=int, default=None, metavar="N",
                   help="a local cluster of N single-threaded worker processes (default: the cores "
                        "this process may use; 0: every task in this process, one after the other)")
    g.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run on an existing Dask cluster (e.g. dask-jobqueue's SLURMCluster) instead")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")


def check_arguments(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Check the options :func:`add_arguments` added; a bad one ends the script with a message
    naming it (``ap.error``, exit status 2) before any work.

    Parameters
    ----------
    ap : argparse.ArgumentParser
        The script's parser.
    args : argparse.Namespace
        Its parsed arguments.
    """
    try:
        check_workers(args.workers, args.scheduler)
    except ValueError as e:
        ap.error(f"--{e}")


def run(store: Store, tasks: Sequence[Task], fn: Callable[..., Any], args: argparse.Namespace, *,
        gpus: int = 0, on_record: Callable[[str], None] | None = None,
        on_close: Callable[[], None] | None = None) -> int:
    """Run a script's sweep: open the store (lock, parameter check), connect, run, report.

    Parameters
    ----------
    store : stumplib.sweep.store.Store
        The run's store, not yet open.
    tasks : sequence of Task
        Every task the command asks for (those done in the store are skipped).
    fn : callable
        The task function.
    args : argparse.Namespace
        The parsed arguments (``workers``, ``scheduler``, ``no_progress``).
    gpus : int, optional
        Local workers with a GPU each (CUDA tasks).
    on_record : callable or None, optional
        Passed to :func:`.driver.run_sweep`.
    on_close : callable or None, optional
        Called after the store is closed (to write derived files from it).

    Returns
    -------
    int
        The exit status: 0, :data:`EXIT_FAILED`, :data:`EXIT_REFUSED` or :data:`EXIT_INTERRUPTED`
        (Ctrl-C: the store keeps every task recorded so far, and one line, not a traceback, says
        how many; the same command resumes).
    """
    try:
        return _run(store, tasks, fn, args, gpus=gpus, on_record=on_record, on_close=on_close)
    except KeyboardInterrupt:
        print(f"sweep interrupted: {_held(store, tasks)} of {len(tasks)} tasks in {store.path}; "
              "rerun the same command to resume", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED


def _held(store: Store, tasks: Sequence[Task]) -> int:
    """How many of ``tasks`` the store holds as done (what it read at opening, plus this run's)."""
    return sum(store.status(t.id) == "done" for t in tasks)


def _run(store, tasks, fn, args, *, gpus, on_record, on_close) -> int:
    try:
        store.open()
    except (StoreLocked, ParameterMismatch, StoreError) as e:
        print(f"refused: {e}", file=sys.stderr)
        return EXIT_REFUSED
    summary = None
    try:
        held = _held(store, tasks)
        failed = sum(store.status(t.id) == "failed" for t in tasks)
        if held or failed:
            retry = f" ({failed} failed before, to retry)" if failed else ""
            print(f"resuming: the store holds {held} of {len(tasks)} tasks{retry} ({store.path})",
                  flush=True)
        todo = len(tasks) - held
        if todo == 0:
            store.manifest["runs"][store.run_index]["cluster"] = "none (nothing to run)"
            summary = run_sweep(tasks, fn, store, progress=False)
        else:
            workers = None if args.scheduler is not None else min(check_workers(args.workers), todo)
            with connect(workers, args.scheduler, gpus=min(gpus, workers or gpus)) as client:
                store.manifest["runs"][store.run_index]["cluster"] = describe(client)
                summary = run_sweep(tasks, fn, store, client=client,
                                    progress=not args.no_progress, on_record=on_record)
    finally:
        store.close(summary.as_dict() if summary else {"interrupted": True})
        if on_close is not None:
            on_close()
    print(f"sweep: {summary.line()}; store {store.path}")
    for tid in summary.failed_ids:
        print(f"  failed {tid}: {store.manifest['tasks'][tid].get('error', '?')}", file=sys.stderr)
    return EXIT_FAILED if summary.failed else 0
