"""Tests of stumplib.sweep.store: the one-writer store, its lock and its atomic writes."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from stumplib.sweep.params import ParameterMismatch
from stumplib.sweep.files import DriverLock, StoreLocked, atomic_write
from stumplib.sweep.store import Store, StoreError, read_store

ROOT = Path(__file__).resolve().parents[2]
P = {"omega": 0.3, "A": np.eye(2), "gtol": 1e-8}


def _store(path, **kw):
    return Store(path, kind="test", params=kw.pop("params", P), run={"command": "test"}, **kw)


@pytest.mark.parametrize("suffix", [".npz", ".json"])
def test_results_and_records_survive_reopening(tmp_path, suffix):
    path = tmp_path / f"s{suffix}"
    res = {"x": np.arange(3.0)[None], "ok": np.array([True])} if suffix == ".npz" else {"x": [1, "a"]}
    with _store(path) as s:
        s.put("d20_seed0", res, {"attempts": 2, "errors": ["ValueError: first try"], "seconds": 1.5,
                                  "worker": "w:1"})
        s.fail("d20_seed1", {"attempts": 2, "errors": ["E: a", "E: b"], "error": "E: b"})
    manifest, results = read_store(path)
    assert manifest["kind"] == "test" and manifest["runs"][0]["closed"] is not None
    t0, t1 = manifest["tasks"]["d20_seed0"], manifest["tasks"]["d20_seed1"]
    assert (t0["status"], t0["attempts"], t0["errors"]) == ("done", 2, ["ValueError: first try"])
    assert (t1["status"], t1["error"]) == ("failed", "E: b") and "d20_seed1" not in results
    if suffix == ".npz":
        assert np.array_equal(results["d20_seed0"]["x"], res["x"])
        assert results["d20_seed0"]["ok"].dtype == bool
    else:
        assert results["d20_seed0"] == res
    with _store(path) as s:  # a resume: a second run, the failed task's tries accumulate
        assert s.status("d20_seed0") == "done" and s.status("d20_seed1") == "failed"
        s.put("d20_seed1", res, {"attempts": 1, "errors": []})
    manifest, _ = read_store(path)
    assert len(manifest["runs"]) == 2 and manifest["tasks"]["d20_seed1"]["attempts"] == 3
    assert manifest["tasks"]["d20_seed1"]["errors"] == ["E: a", "E: b"]


def test_a_store_in_a_folder_that_does_not_exist_yet_is_created_with_its_folder(tmp_path):
    """``--out new/folder/s.json``: the folder is made (it was a FileNotFoundError on the lock)."""
    path = tmp_path / "new" / "folder" / "s.json"
    with _store(path) as s:
        s.put("t0", {"x": [1]}, {"attempts": 1, "errors": []})
    assert read_store(path)[1] == {"t0": {"x": [1]}}


def test_a_second_driver_is_refused_naming_the_lock_and_its_holder(tmp_path):
    path = tmp_path / "s.npz"
    first = _store(path).open()
    held = rf"lock {path}.lock: pid {os.getpid()} on .*two drivers never"
    with pytest.raises(StoreLocked, match=held):
        _store(path).open()
    first.close()
    assert not Path(f"{path}.lock").exists()
    _store(path).open().close()  # free again


def test_a_driver_in_another_process_holds_the_lock_until_it_dies(tmp_path):
    path = tmp_path / "s.npz"
    code = ("import sys, time; from stumplib.sweep.store import Store\n"
            f"s = Store({str(path)!r}, kind='test', params={{'omega': 0.3}}).open()\n"
            "s.put('t1', {'x': [1.0]}, {}); print('open', flush=True); time.sleep(60)")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                             cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        assert child.stdout.readline().strip() == "open"
        with pytest.raises(StoreLocked, match=f"pid {child.pid}"):
            _store(path, params={"omega": 0.3}).open()
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    with _store(path, params={"omega": 0.3}) as s:  # the kernel released the lock: the work is kept
        assert s.status("t1") == "done"


def test_a_changed_parameter_is_refused_and_the_store_is_untouched(tmp_path):
    path = tmp_path / "s.npz"
    with _store(path) as s:
        s.put("t1", {"x": [1.0]}, {})
    before = path.read_bytes()
    with pytest.raises(ParameterMismatch, match="'gtol' differs"):
        _store(path, params=dict(P, gtol=1e-7)).open()
    with pytest.raises(StoreError, match="holds 'test' results, not 'other'"):
        Store(path, kind="other", params=P).open()
    assert path.read_bytes() == before and not Path(f"{path}.lock").exists()


def test_an_old_layout_file_is_not_a_store(tmp_path):
    old = tmp_path / "old.npz"
    np.savez(old, ds=np.array([250]), d250_test_error=np.zeros((2, 2)))
    with pytest.raises(StoreError, match="import_legacy_run"):
        read_store(old)
    with pytest.raises(ValueError, match="out: a store is a .npz .* or .json"):
        Store(tmp_path / "x.csv", kind="test", params=P)


def test_writes_are_atomic(tmp_path):
    path = tmp_path / "f.txt"
    path.write_text("old")

    def broken(fh):
        fh.write(b"half")
        raise RuntimeError("killed mid-write")
    with pytest.raises(RuntimeError):
        atomic_write(path, broken)
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["f.txt"]
    store = tmp_path / "s.json"
    (tmp_path / ".s.json.tmp-12345").write_text("a dead driver's half write")
    with _store(store):
        pass
    assert sorted(os.listdir(tmp_path)) == ["f.txt", "s.json"]
    assert json.loads(store.read_text())["sweep"]["manifest"]["format"] == "stumplib.sweep/1"


def test_bad_task_ids_and_results_are_refused(tmp_path):
    with _store(tmp_path / "s.npz") as s:
        with pytest.raises(ValueError, match="task id must match"):
            s.put("a/b", {"x": [1.0]}, {})
        with pytest.raises(TypeError, match="mapping of arrays"):
            s.put("t", [1.0], {})
        with pytest.raises(TypeError, match="entry 'o'"):
            s.put("t", {"o": np.array([object()])}, {})
    with pytest.raises(RuntimeError, match="not open"):
        _store(tmp_path / "s.npz").save()
    lock = DriverLock(tmp_path / "s.npz").acquire()
    with pytest.raises(StoreLocked, match="already held"):
        lock.acquire()
    lock.release()
