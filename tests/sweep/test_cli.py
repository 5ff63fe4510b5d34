"""What every sweep script shares (:func:`stumplib.sweep.cli.run`): a Ctrl-C ends the run with one
line naming how many tasks the store holds (no traceback, exit status 130, the store closed and
unlocked), and a rerun says at once how many tasks the store already holds, then resumes."""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stumplib.sweep import cli
from stumplib.sweep.driver import Task
from stumplib.sweep.files import DriverLock
from stumplib.sweep.store import Store, read_store

ROOT = Path(__file__).resolve().parents[2]

#: a sweep script of four tasks: t0 returns at once, the others wait until the file ``go`` exists
TINY_SWEEP = '''
import argparse, sys, time
from pathlib import Path
from stumplib.sweep import cli
from stumplib.sweep.driver import Task
from stumplib.sweep.files import DriverLock
from stumplib.sweep.store import Store


def task(i, marks):
    Path(marks, f"started_{i}").touch()
    while i > 0 and not Path(marks, "go").exists():
        time.sleep(0.05)
    return {"x": [float(i)]}


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--marks", required=True)
    cli.add_arguments(ap)
    a = ap.parse_args()
    cli.check_arguments(ap, a)
    tasks = [Task(f"t{i}", (i, a.marks)) for i in range(4)]
    raise SystemExit(cli.run(Store(a.out, kind="tiny", params={"n": 4}), tasks, task, a))
'''


def _args(workers: int = 0) -> argparse.Namespace:
    return argparse.Namespace(workers=workers, scheduler=None, no_progress=True)


@pytest.mark.parametrize("workers", [0, 1])
def test_ctrl_c_prints_one_line_and_the_rerun_resumes_saying_what_the_store_holds(tmp_path, workers):
    script, out, marks = tmp_path / "tiny_sweep.py", tmp_path / "out.npz", tmp_path / "marks"
    script.write_text(TINY_SWEEP)
    marks.mkdir()
    cmd = [sys.executable, str(script), "--out", str(out), "--marks", str(marks),
           "--workers", str(workers), "--no-progress"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    # its own process group, signalled as a whole: what Ctrl-C in a terminal does (the local
    # cluster's worker processes get the SIGINT too)
    # SIGINT at its default in the child: a test session started in the background of a
    # non-interactive shell (`nohup bash .ci/run &`) inherits SIGINT ignored, and an ignored
    # SIGINT stays ignored in every process it starts, so the Ctrl-C would never arrive
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                             env=env, start_new_session=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        t0 = time.time()
        while not (marks / "started_1").exists():  # t0 recorded, t1 running
            assert child.poll() is None and time.time() - t0 < 120, child.communicate()
            time.sleep(0.05)
        time.sleep(0.3)
        os.killpg(child.pid, signal.SIGINT)
        stdout, stderr = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    assert child.returncode == 130, (stdout, stderr)  # 128 + SIGINT, as a shell reports it
    assert "Traceback" not in stderr + stdout and "KeyboardInterrupt" not in stderr + stdout
    line = f"sweep interrupted: 1 of 4 tasks in {out}; rerun the same command to resume"
    assert [ln for ln in stderr.splitlines() if ln.startswith("sweep")] == [line], stderr
    manifest, results = read_store(out)
    assert sorted(results) == ["t0"] and manifest["runs"][-1]["interrupted"] is True
    assert _unlocked(out)

    (marks / "go").touch()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == f"resuming: the store holds 1 of 4 tasks ({out})", r.stdout
    assert "4 tasks: 3 done now, 1 already in the store, 0 failed" in lines[-1]
    assert sorted(read_store(out)[1]) == ["t0", "t1", "t2", "t3"]


def _unlocked(path: Path) -> bool:
    DriverLock(path).acquire("the test").release()  # raises StoreLocked while a driver holds it
    return True


def _run(store: Store, tasks, fn) -> int:
    try:
        return cli.run(store, tasks, fn, _args())
    except KeyboardInterrupt:  # would stop the whole pytest session
        pytest.fail("cli.run let a KeyboardInterrupt through")


def _interrupt_at(stop: int):
    def task(i):
        if i == stop:
            raise KeyboardInterrupt
        return {"x": [float(i)]}
    return task


def test_run_turns_an_interrupt_into_one_line_and_exit_status_130(tmp_path, capsys):
    out = tmp_path / "s.npz"
    tasks = [Task(f"t{i}", (i,)) for i in range(5)]
    store = Store(out, kind="tiny", params={"n": 5})
    assert _run(store, tasks, _interrupt_at(2)) == 130
    err = capsys.readouterr().err
    assert err.strip() == f"sweep interrupted: 2 of 5 tasks in {out}; rerun the same command to resume"
    assert _unlocked(out) and sorted(read_store(out)[1]) == ["t0", "t1"]

    # the rerun says first what the store holds, then is interrupted again
    store = Store(out, kind="tiny", params={"n": 5})
    assert _run(store, tasks, _interrupt_at(4)) == 130
    got = capsys.readouterr()
    assert got.out.splitlines()[0] == f"resuming: the store holds 2 of 5 tasks ({out})"
    assert "sweep interrupted: 4 of 5 tasks" in got.err

    store = Store(out, kind="tiny", params={"n": 5})
    assert _run(store, tasks, _interrupt_at(-1)) == 0
    got = capsys.readouterr().out.splitlines()
    assert got[0] == f"resuming: the store holds 4 of 5 tasks ({out})"
    assert "5 tasks: 1 done now, 4 already in the store, 0 failed" in got[-1]


def test_a_fresh_store_says_nothing_of_resuming_and_failed_tasks_are_counted(tmp_path, capsys):
    out = tmp_path / "s.npz"
    tasks = [Task(f"t{i}", (i,)) for i in range(3)]

    def fails(i):
        if i == 1:
            raise RuntimeError("boom")
        return {"x": [float(i)]}

    assert cli.run(Store(out, kind="tiny", params={"n": 3}), tasks, fails, _args()) == cli.EXIT_FAILED
    assert "resuming" not in capsys.readouterr().out
    assert cli.run(Store(out, kind="tiny", params={"n": 3}), tasks, fails, _args()) == cli.EXIT_FAILED
    first = capsys.readouterr().out.splitlines()[0]
    assert first == f"resuming: the store holds 2 of 3 tasks (1 failed before, to retry) ({out})"
