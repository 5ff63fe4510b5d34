"""The sweep scripts through their command lines (``scripts/phase_minimisers.py``,
``phase_flat_window.py``, ``phase_diagram.py``) and the seed audit's aggregation: same numbers
serial or on workers, a resume with a changed parameter refused naming it (exit status 2), a second
driver refused, bad input refused before any work, a failed seed counted in the denominator."""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from stumplib.sweep.params import same
from stumplib.sweep.readers import diagram_from_store, minimiser_runs_from_store
from stumplib.sweep.files import DriverLock
from stumplib.sweep.store import read_store

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--d", "20", "30", "--seeds", "2", "--alphas", "1.0", "1.25", "--gd-seeds", "1",
        "--gd-steps", "50", "--no-progress"]


def script(name: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / name), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def serial_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("minimisers") / "serial.npz"
    r = script("phase_minimisers.py", *TINY, "--workers", "0", "--out", str(out))
    assert r.returncode == 0, r.stderr
    return out


def test_the_minimiser_sweep_gives_the_serial_numbers(serial_run, tmp_path):
    out = tmp_path / "workers.npz"
    r = script("phase_minimisers.py", *TINY, "--workers", "2", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "4 tasks: 4 done now" in r.stdout and "dashboard: " in r.stdout
    a, ma = minimiser_runs_from_store(serial_run)
    b, mb = minimiser_runs_from_store(out)
    assert sorted(a) == sorted(b) == [20, 30] and same(ma["params"], mb["params"])
    for d in a:
        for k, v in a[d].items():
            if k not in ("seconds",):
                assert np.array_equal(v, b[d][k], equal_nan=v.dtype.kind == "f"), (d, k)
        assert np.isfinite(a[d]["gd_test_error"][0]).all() and np.isnan(a[d]["gd_test_error"][1]).all()
    workers = {t["worker"] for t in read_store(out)[0]["tasks"].values()}
    assert len(workers) == 2
    assert {t["worker"] for t in read_store(serial_run)[0]["tasks"].values()} != workers
    # the parameters the store records are exactly those the converter of old files asks for
    assert tuple(ma["params"]) == load("import_legacy_run").PARAMS


@pytest.mark.parametrize("change, key", [(["--gtol", "1e-7"], "gtol"),
                                         (["--A", "0.7", "0.3", "0.3", "0.7"], "A"),
                                         (["--n-alpha", "1.5"], "n_alpha")])
def test_a_resume_with_a_changed_parameter_is_refused_naming_it(serial_run, tmp_path, change, key):
    out = tmp_path / "runs.npz"
    shutil.copy(serial_run, out)
    before = out.read_bytes()
    r = script("phase_minimisers.py", *TINY, *change, "--workers", "0", "--out", str(out))
    assert r.returncode == 2 and f"parameter '{key}' differs" in r.stderr
    assert out.read_bytes() == before


def test_a_cuda_resume_of_a_cpu_store_is_refused(serial_run, tmp_path):
    # a store made on CUDA (its manifest says so), resumed by a CPU process: refused naming the
    # device kind (the data are the same, drawn on the CPU; the arithmetic is not)
    out = tmp_path / "cuda.npz"
    with np.load(serial_run) as f:
        arrays = {k: f[k] for k in f.files}
    manifest = json.loads(str(arrays["manifest"]))
    manifest["params"]["device_kind"] = "cuda"
    arrays["manifest"] = np.asarray(json.dumps(manifest))
    np.savez(out, **arrays)
    r = script("phase_minimisers.py", *TINY, "--workers", "0", "--out", str(out))
    assert r.returncode == 2 and "parameter 'device_kind' differs" in r.stderr
    assert "records 'cuda', this run asks 'cpu'" in r.stderr


def test_resuming_a_finished_run_does_nothing_and_more_seeds_add_tasks(serial_run, tmp_path):
    out = tmp_path / "runs.npz"
    shutil.copy(serial_run, out)
    r = script("phase_minimisers.py", *TINY, "--workers", "0", "--out", str(out))
    assert r.returncode == 0 and "0 done now, 4 already in the store" in r.stdout
    more = [a if a != "2" else "3" for a in TINY]  # --seeds 3: one more seed at each d
    r = script("phase_minimisers.py", *more, "--d", "30", "--workers", "0", "--out", str(out))
    assert r.returncode == 0 and "1 done now, 2 already in the store" in r.stdout, r.stdout
    runs, meta = minimiser_runs_from_store(out)
    assert runs[30]["seeds"].tolist() == [0, 1, 2] and len(meta["runs"]) == 3


def test_a_second_driver_on_the_same_out_is_refused(tmp_path):
    out = tmp_path / "runs.npz"
    lock = DriverLock(out).acquire("the first driver")
    try:
        r = script("phase_minimisers.py", *TINY, "--workers", "0", "--out", str(out))
    finally:
        lock.release()
    assert r.returncode == 2 and "being written by another driver" in r.stderr
    assert f"pid {os.getpid()}" in r.stderr and "the first driver" in r.stderr and not out.exists()


@pytest.mark.parametrize("args, message", [
    (["--d", "20", "--seeds", "2", "--workers", "-1"], "--workers must be an integer in 0 to 1024"),
    (["--d", "20", "--seeds", "0"], "seeds[0] must be an integer in [1, 100000]; got 0"),
    (["--d", "--seeds", "2"], "--d: expected at least one argument"),
    (["--d", "2", "--seeds", "2"], "d[0] must be an integer in [4, 1000000]; got 2"),
    (["--d", "20", "--seeds", "2", "--alphas", "2.0"], "alphas[0] must be in (0.0, 1.25]; got 2.0"),
    (["--d", "20", "--seeds", "2", "--gtol", "0"], "gtol must be in (0.0, 1.0]; got 0.0"),
    (["--d", "20", "30", "--seeds", "2", "2", "2"], "seeds: one value or one per --d"),
    (["--d", "20", "--seeds", "2", "--workers", "2", "--scheduler", "tcp://h:1"], "give one")])
def test_bad_input_is_refused_before_any_work(tmp_path, args, message):
    out = tmp_path / "runs.npz"
    r = script("phase_minimisers.py", *args, "--out", str(out))
    assert r.returncode == 2 and message in r.stderr and not out.exists()


def test_the_flat_window_keeps_A_and_gtol_on_resume(tmp_path):
    out = tmp_path / "flat.npz"
    base = ["--stages", "theory", "--theta-range", "0.085", "0.11", "3", "--theory-log2", "6",
            "--theory-scramblings", "2", "--workers", "0", "--no-progress", "--out", str(out)]
    r = script("phase_flat_window.py", *base)
    assert r.returncode == 0, r.stderr
    for change, key in ((["--A", "0.7", "0.3", "0.3", "0.7"], "A"), (["--gtol", "1e-6"], "gtol")):
        r = script("phase_flat_window.py", *base, *change)
        assert r.returncode == 2 and f"parameter '{key}' differs" in r.stderr
    assert read_store(out)[0]["params"]["gtol"] == 1e-8
    r = script("phase_flat_window.py", *base)
    assert r.returncode == 0 and "1 task: 0 done now, 1 already in the store" in r.stdout


def test_the_flat_window_pick_searches_only_the_listed_seeds_with_the_same_data(tmp_path):
    """--pick (the search-bias study of chapter 7) runs the listed (d, seed) tasks in the given
    order, each the same search as the full sweep's task of that seed."""
    base = ["--stages", "landscape", "--theta-range", "0.085", "0.11", "2", "--rotations", "0",
            "--perturb", "0.1", "--workers", "0", "--no-progress"]
    full, picked = tmp_path / "full.npz", tmp_path / "picked.npz"
    r = script("phase_flat_window.py", *base, "--d", "24", "--seeds", "3", "--out", str(full))
    assert r.returncode == 0, r.stderr
    r = script("phase_flat_window.py", *base, "--pick", "24:2,0", "--out", str(picked))
    assert r.returncode == 0, r.stderr
    (got, _), (want, _) = read_store(picked), read_store(full)
    assert list(got["tasks"]) == ["d24_seed2", "d24_seed0"]
    z, w = np.load(picked), np.load(full)
    for k in ("loss", "theta", "line_loss"):
        assert np.allclose(z[f"d24_seed2/{k}"], w[f"d24_seed2/{k}"], rtol=1e-9, atol=0), k
    r = script("phase_flat_window.py", *base, "--pick", "24:1,1", "--out", str(picked))
    assert r.returncode == 2 and "pick: each (d, seed) once" in r.stderr


def test_the_phase_diagram_per_omega_is_the_joint_diagram(tmp_path):
    from stumplib.book.studies.diagram import phase_diagram

    out = tmp_path / "diagram.npz"
    kw = dict(rtol=5e-2, max_log2_points=10, max_refine=0, min_log2_points=9, max_updates=40)
    r = script("phase_diagram.py", "--omegas", "0.3", "0.2", "--grid", "1.5", "1.25", "--rtol", "5e-2",
               "--max-log2", "10", "--max-refine", "0", "--min-log2", "9", "--max-updates", "40",
               "--workers", "0", "--no-progress", "--out", str(out))
    assert r.returncode == 0, r.stderr
    got, meta = diagram_from_store(out)
    joint = phase_diagram([0.2, 0.3], [1.5, 1.25], cache=False, **kw)
    assert sorted(got) == sorted(joint) and meta["done"] == 2
    for k, v in joint.items():
        if "seconds" not in k:
            assert np.array_equal(got[k], v, equal_nan=v.dtype.kind == "f"), k


def _audit_records(statuses, failed_seed=None, missing_seed=None):
    from stumplib.book import registry as K

    sa = load("seed_audit")
    chapter = "chapters/05_boundary_symmetrization"
    keys = [c.key for c in K.REGISTRY if c.chapter == chapter]
    tasks, results = {}, {}
    for s, st in enumerate(statuses):
        tid = sa.task_id(chapter, s)
        if s == missing_seed:  # still running
            continue
        if s == failed_seed:
            tasks[tid] = {"status": "failed", "error": "PapermillExecutionError: boom", "seconds": 3.0}
            continue
        tasks[tid] = {"status": "done", "seconds": 10.0}
        results[tid] = {"claims": {k: {"status": st, "value": 1.0 + s, "lo": 0.5 + s, "hi": 1.5 + s,
                                       "number": "x"} for k in keys}}
    manifest = {"tasks": tasks, "params": {"profile": "quick", "code_version": "abc"},
                "runs": [{"command": "c", "commit": "h", "machine": "m", "started": "t", "seconds": 9.0,
                          "closed": "end"}]}
    return sa, sa.build_audit(manifest, results, list(range(len(statuses))), [chapter]), keys[0]


def test_a_failed_seed_counts_in_the_audit_denominator(tmp_path):
    from stumplib.book import audit as K

    sa, audit, key = _audit_records(["holds"] * 5, failed_seed=3)
    a = audit["claims"][key]
    assert a["agreement"] == "4/5, 1 failed" and a["failed"] == 1 and a["status"][3] is None
    assert a["summary"] == "holds at 4 of 5 seeds, 1 failed"
    assert audit["failed"] == [{"task": "ch05_seed3", "error": "PapermillExecutionError: boom"}]
    agree = K.seed_agreement(key, audit)
    assert agree["text"] == "4/5, 1 failed" and not agree["agree"] and agree["seeds"] == 5
    assert agree["counts"] == {"holds": 4, "failed": 1}
    sa.write_md(audit, tmp_path / "a.md")
    md = (tmp_path / "a.md").read_text()
    assert "| 4/5, 1 failed |" in md and "- failed: ch05_seed3" in md
    _, ok, _ = _audit_records(["holds"] * 5)
    assert ok["claims"][key]["agreement"] == "5/5" and K.seed_agreement(key, ok)["agree"]
    assert ok["code_version"] == "abc" and ok["commit"] == "h" and ok["finished"] == "end"
    _, running, _ = _audit_records(["holds"] * 5, missing_seed=4)  # not summarised before the end
    assert key not in running["claims"] and not running["chapters_done"] and "finished" not in running


def test_chapter_4_of_a_seed_waits_for_chapter_3_of_that_seed():
    sa = load("seed_audit")
    nbs = [sa.chapter_path(t) for t in ("04", "03", "02")]
    tasks = {t.id: t for t in sa.make_tasks(nbs, [0, 1], "smoke", "cpu", "/tmp/x")}
    assert tasks["ch04_seed1"].after == ("ch03_seed1",) and tasks["ch04_seed0"].after == ("ch03_seed0",)
    assert tasks["ch03_seed0"].after == () and tasks["ch02_seed1"].after == ()
    assert sa.make_tasks(nbs[:1], [0], "smoke", "cpu", "/tmp/x")[0].after == ()


def test_chapter_7_of_a_seed_waits_for_chapter_6_of_that_seed():
    """Chapter 7 reloads chapter 6's theory from the result cache: it runs after chapter 6."""
    sa = load("seed_audit")
    nbs = [sa.chapter_path(t) for t in ("07", "06")]
    tasks = {t.id: t for t in sa.make_tasks(nbs, [0, 1], "smoke", "cpu", "/tmp/x")}
    assert tasks["ch07_seed1"].after == ("ch06_seed1",) and tasks["ch06_seed0"].after == ()
    assert sa.make_tasks(nbs[:1], [0], "smoke", "cpu", "/tmp/x")[0].after == ()


BE_INIT = [0.06902032855290167, 0.0, 21.32393516096992, 0.0966049930851302]


def test_the_recorded_branch_end_is_the_chapters_own_computation(tmp_path):
    """``scripts/phase_branch_end.py`` (serial) then :func:`stumplib.book.runs.read_branch_end`:
    with the page's arguments the recorded sweeps give exactly the fit the page computes itself;
    another seed or start is refused naming the parameter; a missing file warns and says absent."""
    from stumplib.book import runs
    from stumplib.book.studies.curves import branch_end_fit

    out = tmp_path / "be.npz"
    r = script("phase_branch_end.py", "--alphas", "0.8", "0.78", "--log2", "9", "--replicates",
               "2", "--init", *map(repr, BE_INIT), "--workers", "0", "--no-progress",
               "--out", str(out))
    assert r.returncode == 0, r.stderr
    kw = dict(omega=0.3, log2_points=9, n_scramblings=12, replicates=2, seed=0, sigma=0.5,
              lam=0.01, max_updates=150)
    expect = dict(kw, alphas=[0.8, 0.78], init=BE_INIT, A=[[0.6, 0.4], [0.4, 0.6]])
    rec = runs.read_branch_end(expect, out)
    assert rec["state"] == "recorded" and len(rec["sweeps"]) == 2, rec["mismatch"]
    assert rec["meta"]["command"].startswith("python") and rec["meta"]["commit"]
    init = dict(zip(("q", "m", "V", "theta"), BE_INIT))
    live = branch_end_fit([0.8, 0.78], init=init, cache=False, **kw)
    read = branch_end_fit([0.8, 0.78], init=init, recorded=rec["sweeps"], **kw)
    for a, b in zip(live["sweeps"], read["sweeps"]):
        for k in a:
            if k != "seconds":
                assert np.array_equal(a[k], b[k], equal_nan=a[k].dtype.kind == "f"), k
    assert read["estimate"].value == live["estimate"].value or (
        np.isnan(read["estimate"].value) and np.isnan(live["estimate"].value))
    other = runs.read_branch_end(dict(expect, seed=1), out)
    assert other["state"] == "other" and other["sweeps"] is None
    assert any(m.startswith("seed = 0") for m in other["mismatch"]), other["mismatch"]
    moved = runs.read_branch_end(dict(expect, init=[0.07, 0.0, 21.3, 0.0966]), out)
    assert moved["state"] == "other" and any("init" in m for m in moved["mismatch"])
    more = runs.read_branch_end(dict(expect, replicates=3), out)
    assert more["state"] == "other", more
    with pytest.warns(runs.MissingRunWarning, match="PHASE_BRANCH_END.npz"):
        assert runs.read_branch_end(expect, tmp_path / "none.npz")["state"] == "absent"
