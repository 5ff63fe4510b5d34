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
