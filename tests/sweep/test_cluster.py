"""Tests of stumplib.sweep.cluster: worker counts checked before any work, single-threaded workers,
an existing cluster reached by its address."""
from __future__ import annotations

import os

import pytest
import torch

from stumplib.sweep.cluster import (MALLOC_VARIABLES, THREAD_VARIABLES, available_cores,
                                    check_workers, connect, describe, pin_threads,
                                    single_thread_environment)
from stumplib.sweep.driver import execute


@pytest.mark.parametrize("workers, scheduler, message", [
    (-1, None, "workers must be an integer in 0 to 1024"), (2.5, None, "workers must be an integer"),
    (True, None, "workers must be an integer"), (2, "tcp://h:1", "give one"),
    (None, " ", "scheduler must be an address")])
def test_bad_worker_options_are_refused_naming_them(workers, scheduler, message):
    with pytest.raises(ValueError, match=message):
        check_workers(workers, scheduler)


def test_worker_counts():
    assert check_workers(None) == available_cores() >= 1
    assert check_workers(0) == 0 and check_workers(3) == 3
    assert check_workers(None, "tcp://127.0.0.1:8786") is None


def test_pin_threads_pins_torch_and_the_environment(monkeypatch):
    for k in THREAD_VARIABLES:
        monkeypatch.setenv(k, "7")
    torch.set_num_threads(2)
    pin_threads()
    assert torch.get_num_threads() == 1 and all(os.environ[k] == "1" for k in THREAD_VARIABLES)
    assert single_thread_environment() == {k: "1" for k in THREAD_VARIABLES}


def _worker_state() -> dict:
    import torch as t

    return {"env": {k: os.environ.get(k) for k in THREAD_VARIABLES}, "torch": t.get_num_threads(),
            "malloc": {k: os.environ[k] for k in MALLOC_VARIABLES if k in os.environ}}


def test_local_workers_are_single_threaded_and_an_existing_cluster_is_reachable(monkeypatch):
    for k in MALLOC_VARIABLES:  # restored at the end, whatever a nanny leaks into this process
        monkeypatch.delenv(k, raising=False)
    lines: list[str] = []
    with connect(0, announce=lines.append) as c:
        assert c is None and "in this process" in lines[0]
    with connect(2, dashboard_address=":0", announce=lines.append) as c:
        info = c.scheduler_info()["workers"]
        assert len(info) == 2 and all(w["nthreads"] == 1 for w in info.values())
        state = c.run(_worker_state)
        assert all(s["env"] == single_thread_environment() and s["torch"] == 1 for s in state.values())
        # Dask's default MALLOC_TRIM_THRESHOLD_ reaches neither the workers nor this process
        assert all(s["malloc"] == {} for s in state.values())
        assert not any(k in os.environ for k in MALLOC_VARIABLES)
        assert "2 workers (2 threads)" in lines[-1] and "dashboard: " in lines[-1]
        with connect(scheduler=c.scheduler.address, announce=None) as remote:
            assert remote.submit(sum, [1, 2]).result() == 3
            assert c.scheduler.address in describe(remote)


def test_single_threaded_pins_a_block_and_restores_the_process(monkeypatch):
    from stumplib.sweep.cluster import single_threaded

    monkeypatch.delenv("STUMPLIB_THREADS", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    torch.set_num_threads(2)
    with single_threaded():
        assert torch.get_num_threads() == 1 and os.environ["STUMPLIB_THREADS"] == "1"
        assert os.environ["OMP_NUM_THREADS"] == "1" and "MALLOC_TRIM_THRESHOLD_" not in os.environ
    assert torch.get_num_threads() == 2 and "STUMPLIB_THREADS" not in os.environ
    assert os.environ["OMP_NUM_THREADS"] == "4" and os.environ["MALLOC_TRIM_THRESHOLD_"] == "65536"


def _child_malloc() -> str:
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-c", "import os; print(os.environ.get("
                           "'MALLOC_TRIM_THRESHOLD_', 'unset'))"], capture_output=True,
                          text=True).stdout.strip()


def test_a_cluster_with_dasks_allocator_default_is_named_and_tasks_do_not_pass_it_on(monkeypatch):
    """A cluster started the way dask-jobqueue starts one (Dask's default nanny environment): the
    driver warns, and a process a task starts (an audit's kernel) runs without the variable."""
    from distributed import LocalCluster

    for k in MALLOC_VARIABLES:
        monkeypatch.delenv(k, raising=False)
    lines: list[str] = []
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0",
                      silence_logs=50) as cluster:
        with connect(scheduler=cluster.scheduler_address, announce=lines.append) as c:
            assert c.run(_child_malloc).popitem()[1] == "65536"  # what the default gives
            assert "warning: the workers run with MALLOC_TRIM_THRESHOLD_=65536" in lines[-1]
            assert c.submit(execute, _child_malloc, (), {}).result()["result"] == "unset"
