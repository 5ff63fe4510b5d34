"""Tests of stumplib.sweep.driver: the driver records every task, retries once, counts failures and
survives a worker killed mid-sweep (a two-worker LocalCluster of processes)."""
from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest

from stumplib.sweep.driver import Task, run_sweep
from stumplib.sweep.store import Store, read_store


def square(x: float, marks: str = "", fail: str = "") -> dict:
    """A task: ``x**2``; raises always for ``fail == "always"``, on its first try for ``"once"``
    (a marker file in ``marks`` remembers the try)."""
    if fail == "always":
        raise ValueError(f"bad input {x}")
    if fail == "once":
        m = Path(marks) / f"tried_{x}"
        if not m.exists():
            m.write_text("1")
            raise RuntimeError("transient")
    return {"y": np.array([x * x]), "pid": np.array([os.getpid()])}


def kill_own_worker(x: float, marks: str, store: str) -> dict:
    """A task that, on its first try, waits until another task is recorded in the store and then
    kills the worker process running it (SIGKILL: no cleanup, as a crash or an out-of-memory kill)."""
    m = Path(marks) / "killed"
    if not m.exists():
        deadline, done = time.time() + 20, []
        while not done and time.time() < deadline:
            try:
                done = [k for k, t in read_store(store)[0]["tasks"].items() if t["status"] == "done"]
            except (OSError, ValueError):
                pass
            time.sleep(0.05)
        m.write_text(json.dumps({"pid": os.getpid(), "done_before": done}))
        os.kill(os.getpid(), signal.SIGKILL)
    return square(x)


def _store(path: Path) -> Store:
    return Store(path, kind="test", params={"p": 1}, run={"command": "test"}).open()


@pytest.fixture(scope="module")
def client():
    from stumplib.sweep.cluster import connect

    with connect(2, dashboard_address=":0", announce=None) as c:
        yield c


def _tasks(marks: Path, n: int = 4, **special) -> list[Task]:
    return [Task(f"t{i}", (float(i),), {"marks": str(marks), **special.get(f"t{i}", {})})
            for i in range(n)]


@pytest.mark.parametrize("where", ["serial", "cluster"])
def test_a_failing_task_is_retried_once_recorded_and_counted(tmp_path, where, request):
    c = request.getfixturevalue("client") if where == "cluster" else None
    tasks = _tasks(tmp_path, 4, t1={"fail": "always"}, t2={"fail": "once"})
    store = _store(tmp_path / "s.npz")
    try:
        s = run_sweep(tasks, square, store, client=c, progress=False)
    finally:
        store.close()
    assert (s.total, s.done, s.failed, s.failed_ids) == (4, 3, 1, ["t1"])
    manifest, results = read_store(tmp_path / "s.npz")
    t1, t2 = manifest["tasks"]["t1"], manifest["tasks"]["t2"]
    assert t1["status"] == "failed" and t1["attempts"] == 2
    assert t1["errors"] == ["ValueError: bad input 1.0"] * 2 and "ValueError" in t1["traceback"]
    assert (t2["status"], t2["attempts"], t2["errors"]) == ("done", 2, ["RuntimeError: transient"])
    assert sorted(results) == ["t0", "t2", "t3"] and results["t3"]["y"][0] == 9.0
    store = _store(tmp_path / "s.npz")  # a resume runs only the failed task (it fails again)
    try:
        s = run_sweep(tasks, square, store, client=c, progress=False)
    finally:
        store.close()
    assert (s.skipped, s.done, s.failed) == (3, 0, 1)
    assert read_store(tmp_path / "s.npz")[0]["tasks"]["t1"]["attempts"] == 4


def test_a_sweep_on_workers_gives_the_serial_numbers(tmp_path, client):
    out = {}
    for where, c in (("serial", None), ("cluster", client)):
        store = _store(tmp_path / f"{where}.npz")
        try:
            run_sweep(_tasks(tmp_path, 5), square, store, client=c, progress=False)
        finally:
            store.close()
        out[where] = read_store(tmp_path / f"{where}.npz")
    (ms, rs), (mc, rc) = out["serial"], out["cluster"]
    assert sorted(rs) == sorted(rc) == [f"t{i}" for i in range(5)]
    assert all(np.array_equal(rs[t]["y"], rc[t]["y"]) for t in rs)
    assert {int(rc[t]["pid"][0]) for t in rc} != {os.getpid()}  # the cluster's ran elsewhere
    assert {mc["tasks"][t]["worker"] for t in rc} != {ms["tasks"]["t0"]["worker"]}


def test_tasks_wait_for_the_tasks_they_come_after(tmp_path):
    order: list[str] = []

    def log(x: float) -> dict:
        order.append(f"t{int(x)}")
        return {"y": np.array([x])}
    tasks = [Task("t0", (0.0,), after=("t2",)), Task("t1", (1.0,)), Task("t2", (2.0,))]
    store = _store(tmp_path / "s.npz")
    try:
        run_sweep(tasks, log, store, progress=False)
    finally:
        store.close()
    assert order.index("t2") < order.index("t0")
    with pytest.raises(ValueError, match="wait for each other"):
        run_sweep([Task("a", after=("b",)), Task("b", after=("a",))], log, store, progress=False)
    with pytest.raises(ValueError, match="waits for 'zz'"):
        run_sweep([Task("a", after=("zz",))], log, store, progress=False)
    with pytest.raises(ValueError, match="unique"):
        run_sweep([Task("a"), Task("a")], log, store, progress=False)


def timed_sleep(x: float, seconds: float) -> dict:
    """A task that sleeps, and says where and when it ran."""
    t0 = time.time()
    time.sleep(seconds)
    return {"y": np.array([x]), "pid": np.array([os.getpid()]),
            "span": np.array([t0, time.time()])}


def test_a_free_worker_gets_the_next_task_while_another_is_busy(tmp_path, client):
    """One long task and six short ones on two workers: the short ones all run on the other worker
    and are done before the long one ends (none waits in a busy worker's queue: the driver keeps
    the queue and hands the next task to the worker that comes free)."""
    tasks = [Task("long", (0.0, 4.0))] + [Task(f"s{i}", (float(i), 0.2)) for i in range(1, 7)]
    store = _store(tmp_path / "s.npz")
    try:
        s = run_sweep(tasks, timed_sleep, store, client=client, progress=False)
    finally:
        store.close()
    _, r = read_store(tmp_path / "s.npz")
    assert (s.done, s.failed) == (7, 0)
    long_pid, long_end = int(r["long"]["pid"][0]), r["long"]["span"][1]
    short = [f"s{i}" for i in range(1, 7)]
    assert all(int(r[t]["pid"][0]) != long_pid for t in short), "a short task ran behind the long one"
    assert max(r[t]["span"][1] for t in short) < long_end


def test_tasks_start_in_the_sweep_order_as_workers_come_free(tmp_path, client):
    """The seed audit's shape at 1/170 of its time (chapter 4 of a seed after chapter 3; measured
    task lengths): the tasks that wait for nothing start in the sweep's order, whichever worker comes
    free (Dask, given them all at once, queued them per worker: measured on the audit, one worker
    idle while the other had a queue). Start times are compared to 0.4 s."""
    seconds = {"03": 1.2, "04": 1.4, "02": 0.06, "05": 0.53, "06": 0.8}
    tasks = [Task(f"ch{c}_seed{k}", (float(k), t), after=(f"ch03_seed{k}",) if c == "04" else ())
             for c, t in seconds.items() for k in range(5)]
    store = _store(tmp_path / "s.npz")
    try:
        s = run_sweep(tasks, timed_sleep, store, client=client, progress=False)
    finally:
        store.close()
    _, r = read_store(tmp_path / "s.npz")
    assert (s.done, s.failed) == (25, 0)
    free = [t.id for t in tasks if not t.after]
    starts = [r[i]["span"][0] for i in free]
    late = [(free[i], free[j]) for i in range(len(free)) for j in range(i + 1, len(free))
            if starts[j] < starts[i] - 0.4]
    assert not late, f"started before a task listed earlier: {late[:3]}"
    assert len({int(r[i]["pid"][0]) for i in r}) == 2


def test_a_worker_killed_mid_sweep_loses_nothing(tmp_path, client):
    path = tmp_path / "s.npz"
    tasks = [Task(f"t{i}", (float(i),)) for i in range(6)]
    tasks[3] = Task("t3", (3.0, str(tmp_path), str(path)))

    def fn(x, marks="", store=""):
        return kill_own_worker(x, marks, store) if marks else square(x)
    store = _store(path)
    try:
        s = run_sweep(tasks, fn, store, client=client, progress=False)
    finally:
        store.close()
    kill = json.loads((tmp_path / "killed").read_text())
    killed = kill["pid"]
    assert kill["done_before"] and killed != os.getpid()  # tasks were done when a worker died
    manifest, results = read_store(path)
    assert (s.done, s.failed) == (6, 0) and sorted(results) == [f"t{i}" for i in range(6)]
    assert [float(results[f"t{i}"]["y"][0]) for i in range(6)] == [i * i for i in range(6)]
    assert int(results["t3"]["pid"][0]) != killed  # t3 itself was rescheduled on a live worker
    assert all(manifest["tasks"][t]["status"] == "done" for t in results)
    assert set(kill["done_before"]) <= set(results)


def test_a_result_the_store_cannot_hold_is_recorded_as_a_failure(tmp_path):
    def bad(x: float) -> dict:
        return {"y": np.array([x])} if x else {"y": np.array([object()])}
    store = _store(tmp_path / "s.npz")
    try:
        s = run_sweep([Task("t0", (0.0,)), Task("t1", (1.0,))], bad, store, progress=False)
    finally:
        store.close()
    manifest, results = read_store(tmp_path / "s.npz")
    assert (s.done, s.failed) == (1, 1) and sorted(results) == ["t1"]
    assert "entry 'y' (object) cannot be stored" in manifest["tasks"]["t0"]["error"]
