"""The driver of a sweep: submit the tasks, write each result as it arrives, survive faults.

:func:`run_sweep` takes independent :class:`Task` s (a task may wait for others: ``after``), the
function that computes one, and an open :class:`~stumplib.sweep.store.Store`. Tasks the store
already holds as done are skipped (a resume); the others run on the client's cluster, or one after
the other in this process when there is none (the serial path: the same task function, the same
numbers). The driver is the store's only writer: it records each task when its result arrives.
It also keeps the queue: a task goes to the cluster only when a worker thread is free for it, in
the sweep's order, so that a free worker always gets the next ready task.

Faults: a task that raises is submitted once more (``retries``); if it raises again it is recorded
as failed, with the error text of every try and the last traceback, and counted. A worker process
that dies is replaced by the cluster and its task rescheduled (up to
:data:`~stumplib.sweep.cluster.ALLOWED_FAILURES` times, then the task counts as raising); the
results already recorded are in the store, so nothing completed is lost.
"""
from __future__ import annotations

import os
import socket
import sys
import time
import traceback as tb
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from stumplib.sweep.cluster import single_threaded
from stumplib.sweep.store import TASK_ID, Store

#: seconds between two looks at the cluster's size while no task comes back
POLL_S = 2.0


@dataclass(frozen=True)
class Task:
    """One task of a sweep.

    Attributes
    ----------
    id : str
        Its name in the store (letters, digits and ``_.:+-``), unique within the sweep.
    args : tuple
        Positional arguments of the task function.
    kwargs : Mapping[str, Any]
        Keyword arguments of the task function.
    after : tuple of str
        Tasks of the same sweep that must finish (done or failed) before this one starts.
    gpu : bool
        The task runs on a GPU: it requests the worker resource ``GPU = 1``.
    """

    id: str
    args: tuple = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    after: tuple[str, ...] = ()
    gpu: bool = False


@dataclass
class SweepSummary:
    """What a sweep did.

    Attributes
    ----------
    total : int
        Tasks requested.
    skipped : int
        Already done in the store (not run again).
    done : int
        Completed by this run.
    failed : int
        Failed in this run after their retry (recorded with their errors).
    failed_ids : list of str
        Those tasks.
    seconds : float
        Wall time of the run.
    """

    total: int
    skipped: int = 0
    done: int = 0
    failed: int = 0
    failed_ids: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def line(self) -> str:
        """The summary in one line.

        Returns
        -------
        str
            For example ``"12 tasks: 9 done now, 2 already in the store, 1 failed (d250_seed3) in
            35 s"``.
        """
        more = ", ..." if self.failed > 8 else ""
        ids = f" ({', '.join(self.failed_ids[:8])}{more})" if self.failed else ""
        tasks = f"{self.total} task{'' if self.total == 1 else 's'}"
        return (f"{tasks}: {self.done} done now, {self.skipped} already in the store, "
                f"{self.failed} failed{ids} in {self.seconds:.0f} s")

    def as_dict(self) -> dict[str, Any]:
        """The counts, as the store records them with the run.

        Returns
        -------
        dict
            ``total``, ``skipped``, ``done``, ``failed``, ``failed_ids``, ``seconds``.
        """
        return dict(total=self.total, skipped=self.skipped, done=self.done, failed=self.failed,
                    failed_ids=list(self.failed_ids), seconds=round(self.seconds, 3))


def execute(fn: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """Run one task where it is scheduled, pinned to one thread (restored after), and time it.

    Parameters
    ----------
    fn : callable
        The task function.
    args : sequence
        Its positional arguments.
    kwargs : Mapping[str, Any]
        Its keyword arguments.

    Returns
    -------
    dict
        ``result`` (what ``fn`` returned), ``seconds`` (its wall time), ``worker``
        (``"host:pid"``).
    """
    with single_threaded():
        t0 = time.perf_counter()
        result = fn(*args, **dict(kwargs))
        seconds = time.perf_counter() - t0
    return {"result": result, "seconds": seconds,
            "worker": f"{socket.gethostname()}:{os.getpid()}"}


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:2000]


def _check(tasks: Sequence[Task], store: Store, retries: int) -> None:
    ids = [t.id for t in tasks]
    bad = [i for i in ids if not isinstance(i, str) or not TASK_ID.fullmatch(i)]
    if bad:
        raise ValueError(f"tasks: ids must match {TASK_ID.pattern}; got {bad[0]!r}")
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ValueError(f"tasks: ids must be unique; repeated: {dup[:5]}")
    known = set(ids)
    for t in tasks:
        missing = [a for a in t.after if a not in known and store.status(a) is None]
        if missing:
            raise ValueError(f"tasks: {t.id} waits for {missing[0]!r}, which is neither a task of "
                             "this sweep nor recorded in the store")
    order, placed = list(tasks), set()
    while order:  # every task can start once those it waits for have finished: no cycle
        ready = [t for t in order if all(a in placed or a not in known for a in t.after)]
        if not ready:
            raise ValueError(f"tasks: {order[0].id} and others wait for each other (a cycle)")
        placed.update(t.id for t in ready)
        order = [t for t in order if t.id not in placed]
    if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 10:
        raise ValueError(f"retries must be an integer in 0 to 10; got {retries!r}")


def run_sweep(tasks: Sequence[Task], fn: Callable[..., Any], store: Store, *, client: Any = None,
              retries: int = 1, progress: bool = True,
              on_record: Callable[[str], None] | None = None) -> SweepSummary:
    """Run the tasks the store does not hold yet, recording each as it completes.

    Parameters
    ----------
    tasks : sequence of Task
        The sweep (ids unique; ``after`` names tasks of the sweep or of the store).
    fn : callable
        The task function, ``fn(*task.args, **task.kwargs)``; its result must suit the store
        (arrays for ``.npz``, JSON for ``.json``). It must be importable or picklable by the
        workers (a function of a script is sent by value).
    store : stumplib.sweep.store.Store
        The open store (:meth:`Store.open`): the only place results go.
    client : distributed.Client or None, optional
        The cluster (:func:`.cluster.connect`); ``None`` runs the tasks in this process.
    retries : int, optional
        Further tries of a task that raised (default 1).
    progress : bool, optional
        A tqdm bar over completed tasks on standard error (default ``True``).
    on_record : callable or None, optional
        Called with a task's id after it is recorded (done or failed).

    Returns
    -------
    SweepSummary
        The counts of this run.
    """
    _check(tasks, store, retries)
    t_start = time.perf_counter()
    todo = [t for t in tasks if store.status(t.id) != "done"]
    summary = SweepSummary(total=len(tasks), skipped=len(tasks) - len(todo))
    from tqdm.auto import tqdm

    bar = tqdm(total=len(todo), desc=f"sweep {store.path.name}", unit="task", file=sys.stderr,
               disable=not progress or not todo, dynamic_ncols=True)
    errors: dict[str, list[str]] = {t.id: [] for t in todo}

    def record(task: Task, out: dict[str, Any] | None, exc: BaseException | None,
               trace: str = "") -> None:
        tries = len(errors[task.id]) + 1
        if exc is None:
            try:
                store.put(task.id, out["result"], {"attempts": tries, "errors": errors[task.id],
                                                   "seconds": round(out["seconds"], 3),
                                                   "worker": out["worker"]})
                summary.done += 1
            except (TypeError, ValueError) as e:  # a result the store cannot hold: a failure
                exc, trace = e, tb.format_exc()
        if exc is not None:
            errors[task.id].append(_error_text(exc))
            store.fail(task.id, {"attempts": tries, "errors": errors[task.id],
                                 "error": errors[task.id][-1], "traceback": trace[-8000:]})
            summary.failed += 1
            summary.failed_ids.append(task.id)
        bar.update(1)
        if summary.failed:
            bar.set_postfix(failed=summary.failed)
        if on_record is not None:
            on_record(task.id)

    try:
        if client is None:
            _serial(todo, fn, retries, errors, record)
        else:
            _distributed(todo, fn, retries, errors, record, client, store)
    finally:
        bar.close()
        summary.seconds = time.perf_counter() - t_start
    return summary


def _ready(task: Task, finished: set[str], waiting_ids: set[str]) -> bool:
    return all(a in finished or a not in waiting_ids for a in task.after)


def _serial(todo, fn, retries, errors, record) -> None:
    pending, finished = list(todo), set()
    ids = {t.id for t in todo}
    while pending:
        task = next(t for t in pending if _ready(t, finished, ids))
        pending.remove(task)
        while True:
            try:
                out = execute(fn, task.args, task.kwargs)
            except Exception as exc:  # noqa: BLE001 - a task's error is recorded, never fatal
                if len(errors[task.id]) < retries:
                    errors[task.id].append(_error_text(exc))
                    continue
                record(task, None, exc, tb.format_exc())
                break
            record(task, out, None)
            break
        finished.add(task.id)


def _slots(client: Any) -> int:
    """The task slots of the cluster now: its workers' threads (at least 1, so that a cluster whose
    workers are still starting gets its first task)."""
    try:
        return max(1, sum(client.nthreads().values()))
    except Exception:  # noqa: BLE001 - a scheduler that cannot answer now: keep one task going
        return 1


def _distributed(todo, fn, retries, errors, record, client, store) -> None:
    """Run ``todo`` on the cluster, the driver keeping the queue.

    At most one task per worker thread is submitted at a time (:func:`_slots`, read again every
    :data:`POLL_S` seconds, so that workers joining a cluster get work); the next ready task, in the
    sweep's order, goes out when one comes back. Dask itself would place every submitted task on a
    worker at once and, not knowing how long such tasks take (each has a key of its own), leave one
    worker idle while the other still had a queue (measured: the seed audit on two workers kept
    1.70 cores busy); with the queue here, a free worker always gets the next task.
    """
    from distributed import wait

    ids = {t.id for t in todo}
    waiting, finished = list(todo), set()
    running: dict[str, tuple[Task, Any]] = {}

    def submit(task: Task) -> None:
        key = f"{task.id}-try{len(errors[task.id])}-{uuid.uuid4().hex[:8]}"
        fut = client.submit(execute, fn, task.args, task.kwargs, key=key, pure=False,
                            resources={"GPU": 1} if task.gpu else None)
        running[fut.key] = (task, fut)

    def release_ready() -> None:
        free = _slots(client) - len(running)
        for task in [t for t in waiting if _ready(t, finished, ids)][:max(0, free)]:
            waiting.remove(task)
            submit(task)

    try:
        while waiting or running:
            release_ready()
            if not running:  # pragma: no cover  (_check rules out tasks that can never start)
                raise RuntimeError(f"sweep: {waiting[0].id} can never start")
            try:
                done, _ = wait([f for _, f in running.values()], timeout=POLL_S,
                               return_when="FIRST_COMPLETED")
            except TimeoutError:  # nothing came back: look for new workers, then wait again
                continue
            for fut in done:
                task, _ = running.pop(fut.key)
                try:
                    out = fut.result()
                    exc, trace = None, ""
                except Exception as e:  # noqa: BLE001 - the task's error (or its workers' deaths)
                    out, exc = None, e
                    trace = "".join(tb.format_exception(type(e), e, e.__traceback__))
                finally:
                    fut.release()
                if exc is not None and len(errors[task.id]) < retries:
                    errors[task.id].append(_error_text(exc))
                    submit(task)
                    continue
                record(task, out, exc, trace)
                finished.add(task.id)
    finally:
        if running:
            client.cancel([f for _, f in running.values()], force=True)