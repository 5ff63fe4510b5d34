"""Tests of ``stumplib.book.runs``: where the committed runs are, the seed audit, chapter 6's
deciding run, minimiser runs and flat-window run read back (and their absence in an installed
package)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from stumplib.book import runs
from stumplib.book.runs import deciding_run, read_flat_window, read_minimisers, read_runs
from stumplib.core.version import PACKAGE

A = ((0.6, 0.4), (0.4, 0.6))


def test_runs_dir_is_the_checkouts_scripts_folder_unless_the_environment_says(monkeypatch, tmp_path):
    monkeypatch.delenv(runs.RUNS_ENV, raising=False)
    assert runs.runs_dir() == PACKAGE.parent / "scripts"
    monkeypatch.setenv(runs.RUNS_ENV, str(tmp_path))
    assert runs.runs_dir() == tmp_path and runs.run_file("x.npz") == tmp_path / "x.npz"


def test_read_audit_reads_the_configured_folder_and_is_empty_without_a_file(monkeypatch, tmp_path):
    monkeypatch.setenv(runs.RUNS_ENV, str(tmp_path))
    with pytest.warns(runs.MissingRunWarning):
        assert runs.read_audit() == {}
    (tmp_path / runs.AUDIT_NAME).write_text(json.dumps({"commit": "abc", "claims": {}}))
    assert runs.read_audit()["commit"] == "abc"
    with pytest.warns(runs.MissingRunWarning):
        assert runs.read_audit(tmp_path / "other.json") == {}


def test_deciding_run_reads_the_values_written_into_a_file(tmp_path):
    """A synthetic file in ``scripts/phase_minimisers.py``'s layout reads back as the arrays and
    provenance written into it; a missing file gives ``None``."""
    with pytest.warns(runs.MissingRunWarning):
        assert deciding_run(tmp_path / "none.npz") is None
    te = {8: np.array([[0.1, 0.2], [0.3, np.nan]]), 16: np.array([[0.5, 0.6]])}
    np.savez(tmp_path / "run.npz", ds=np.array([8, 16]), command="python x.py --d 8 16",
             commit="a" * 40, machine="test box", seconds=12.5,
             d8_test_error=te[8], d8_converged=np.array([[True, True], [True, False]]),
             d16_test_error=te[16], d16_converged=np.array([[True, True]]))
    got, meta = deciding_run(tmp_path / "run.npz")
    assert {k: meta[k] for k in ("command", "commit", "machine", "seconds")} == {
        "command": "python x.py --d 8 16", "commit": "a" * 40, "machine": "test box", "seconds": 12.5}
    assert meta["mismatch"] == []  # no parameters asked for
    assert sorted(got) == [8, 16] and set(got[8]) == {"test_error", "converged"}
    for d in (8, 16):
        np.testing.assert_array_equal(got[d]["test_error"], te[d])
    assert got[8]["converged"].tolist() == [[True, True], [True, False]]


def test_the_committed_deciding_run_reads_back_with_its_provenance(tmp_path, monkeypatch):
    """``deciding_run`` reads ``scripts/PHASE_MINIMISERS_4000.npz`` as ``study`` returns runs,
    with the command, commit and machine that made it, the model it was run at (the chapter's
    defaults) and one source line per contributing process; every seed appears once per ``d``;
    a missing file gives ``None``."""
    monkeypatch.delenv(runs.RUNS_ENV, raising=False)
    DECIDING_RUN = runs.run_file(runs.DECIDING_RUN_NAME)
    with pytest.warns(runs.MissingRunWarning):
        assert DECIDING_RUN.is_file() and deciding_run(tmp_path / "none.npz") is None
    got, meta = deciding_run(expect=dict(omega=0.3, sigma=0.5, lam=0.01, A=A))
    assert {250, 500, 1000, 2000, 4000} <= set(got) and meta["mismatch"] == []
    assert "scripts/phase_minimisers.py" in meta["command"] and len(meta["commit"]) >= 40
    assert meta["seconds"] > 0 and meta["machine"] and len(meta["sources"]) >= 2
    assert meta["params"]["gtol"] == 1e-8 and len(meta["params"]["code_version"]) == 16
    with np.load(DECIDING_RUN) as flat:
        again = read_runs(flat)
    for d in got:
        assert set(got[d]) == set(again[d]) and "test_error" in got[d]
        np.testing.assert_array_equal(got[d]["test_error"], again[d]["test_error"])
        seeds = got[d]["seeds"]
        assert np.unique(seeds).size == seeds.size and got[d]["ran"].shape == got[d]["test_error"].shape
        made = got[d]["ran"]
        assert np.isfinite(got[d]["test_error"][made]).all() and np.isnan(got[d]["test_error"][~made]).all()


def _flat_run(lam=0.01, params=True):
    """A stored run in scripts/phase_minimisers.py's layout, two d, two alphas."""
    rng = np.random.default_rng(1)
    flat = dict(ds=np.array([100, 200]), command=np.asarray("python3 scripts/phase_minimisers.py"),
                commit=np.asarray("0" * 40), machine=np.asarray("test"), seconds=np.asarray(1.0))
    for d in (100, 200):
        te = 0.0028 + 1e-4 * rng.standard_normal((6, 2))
        flat.update({f"d{d}_test_error": te, f"d{d}_converged": np.ones((6, 2), bool),
                     f"d{d}_alphas": np.array([1.0164, 1.25]), f"d{d}_seeds": np.arange(6)})
    if params:
        flat.update(omega=np.asarray(0.3), sigma=np.asarray(0.5), lam=np.asarray(lam),
                    A=np.array([[0.6, 0.4], [0.4, 0.6]]), seed=np.asarray(0), gtol=np.asarray(1e-8))
    return flat


def test_a_stored_run_with_another_lambda_is_refused(tmp_path):
    """The page's lambda is 0.01; a file run at lambda = 0.02 is refused with the parameter named,
    or flagged when not strict; a file that recorded no parameters is refused too."""
    page = dict(omega=0.3, sigma=0.5, lam=0.01, A=A)
    for name, flat in (("ok", _flat_run()), ("lam", _flat_run(lam=0.02)), ("old", _flat_run(params=False))):
        np.savez(tmp_path / f"{name}.npz", **flat)
    got, meta = deciding_run(tmp_path / "ok.npz", expect=page)
    assert meta["mismatch"] == [] and meta["params"]["lam"] == 0.01 and sorted(got) == [100, 200]
    with pytest.raises(ValueError, match=r"lam = 0.02 \(this page: 0.01\)"):
        deciding_run(tmp_path / "lam.npz", expect=page)
    _, meta = deciding_run(tmp_path / "lam.npz", expect=page, strict=False)
    assert meta["mismatch"] == ["lam = 0.02 (this page: 0.01)"]
    with pytest.raises(ValueError, match="parameters not recorded"):
        deciding_run(tmp_path / "old.npz", expect=page)
    assert deciding_run(tmp_path / "old.npz")[1]["mismatch"] == []  # no check asked


def _fake_run(path, ds, requested):
    flat = {"ds": np.asarray(ds), "command": f"python3 scripts/phase_minimisers.py --d "
            f"{' '.join(map(str, requested))} --seeds 4", "commit": "x", "machine": "m",
            "seconds": 1.0}
    for d in ds:
        flat.update({f"d{d}_test_error": np.ones((2, 1)), f"d{d}_alphas": np.array([1.0164]),
                     f"d{d}_converged": np.ones((2, 1), bool)})
    np.savez(path, **flat)


def test_read_minimisers_takes_the_complete_file_with_the_largest_d(tmp_path):
    big, small = tmp_path / "big.npz", tmp_path / "small.npz"
    _fake_run(small, [250, 500], [250, 500])
    _fake_run(big, [250, 500, 1000], [250, 500, 1000, 4000])  # still running
    got, meta = read_minimisers([big, small])
    assert meta["path"] == str(small) and sorted(got) == [250, 500]
    _fake_run(big, [250, 500, 1000, 4000], [250, 500, 1000, 4000])
    got, meta = read_minimisers([big, small])
    assert meta["path"] == str(big) and max(got) == 4000
    with pytest.warns(runs.MissingRunWarning):
        assert read_minimisers([tmp_path / "none.npz"]) is None


def test_read_minimisers_says_which_model_parameters_a_file_did_not_record(tmp_path):
    """A file without its model reads back with NaN for each missing parameter (it matches no
    page's value) and names them; it is never given the page's defaults."""
    _fake_run(tmp_path / "old.npz", [250, 500], [250, 500])
    _, meta = read_minimisers([tmp_path / "old.npz"])
    assert meta["missing"] == ["sigma", "lam", "omega"]
    assert all(np.isnan(meta[k]) for k in ("sigma", "lam", "omega"))
    assert not np.isclose(meta["sigma"], 0.5)  # the page's value: no match
    flat = dict(np.load(tmp_path / "old.npz"))
    np.savez(tmp_path / "new.npz", **flat, sigma=0.5, lam=0.01)
    _, meta = read_minimisers([tmp_path / "new.npz"])
    assert meta["missing"] == ["omega"] and meta["sigma"] == 0.5 and meta["lam"] == 0.01


def test_committed_runs_read_back_and_their_folder_can_be_elsewhere(monkeypatch, tmp_path):
    """The committed minimiser and flat-window runs read from the checkout's ``scripts/`` with
    their model; with ``STUMPBOOK_RUNS`` at a folder without them (an installed package) every
    reader returns its "no run" value."""
    monkeypatch.delenv(runs.RUNS_ENV, raising=False)
    got, meta = read_minimisers()
    assert meta["path"].endswith(runs.DECIDING_RUN_NAME) and meta["missing"] == []
    assert (meta["sigma"], meta["lam"], meta["omega"]) == (0.5, 0.01, 0.3) and max(got) == 4000
    fw = read_flat_window()
    assert sorted(fw["landscape"]) == [500, 1000, 2000, 4000, 8000] and fw["theory"] is not None
    assert fw["root"] is not None and fw["control"] is not None
    assert float(fw["meta"]["sigma"]) == 0.5 and float(fw["meta"]["lam"]) == 0.01
    assert fw["meta"]["missing"] == []
    # the build record's rows: every driver run of the sweep with its command and commit
    record = {r["what"]: r["value"] for r in runs.flat_window_record()}
    assert record["run 1"].startswith("`python3 scripts/phase_flat_window.py --d 8000")
    assert len(record["run 1: commit, start"].split("`")[1]) == 10
    assert record["tasks"].startswith(f"{fw['store']['done']} done, 0 failed")
    monkeypatch.setenv(runs.RUNS_ENV, str(tmp_path))
    for read, name in ((deciding_run, runs.DECIDING_RUN_NAME),
                       (read_flat_window, runs.FLAT_WINDOW_NAME),
                       (read_minimisers, runs.DECIDING_RUN_NAME)):
        with pytest.warns(runs.MissingRunWarning, match="not found") as w:  # never silently
            assert read() is None
        assert f"{name} not found at {tmp_path / name}" in str(w[0].message)
        assert runs.RUNS_ENV in str(w[0].message)
    with pytest.warns(runs.MissingRunWarning, match=runs.AUDIT_NAME):
        assert runs.read_audit() == {}
    (row,) = runs.flat_window_record()
    assert row["what"] == "recorded sweep" and row["value"].startswith("absent (")
    assert str(tmp_path / runs.FLAT_WINDOW_NAME) in row["value"] and "computes its own" in row["value"]
    with pytest.warns(runs.MissingRunWarning, match="x.npz not found at .*the path given"):
        assert deciding_run(runs.runs_dir() / "x.npz") is None
    monkeypatch.delenv(runs.RUNS_ENV)
    assert "next to the stumplib package" in runs.missing_message(runs.FLAT_WINDOW_NAME)


def test_read_flat_window_reads_a_search_store_and_names_what_it_did_not_record(tmp_path):
    """A store of lowest-minimum searches at one ``d`` and no theory, which records no model: the
    landscape reads back in the landscape layout with every seed's search, the informed start's
    minimum as ``free`` and the lowest as ``best``; the stages not run are ``None`` and the
    model's parameters are named as missing."""
    from stumplib.sweep.readers import seed_task
    from stumplib.sweep.store import Store

    th = np.array([0.09, 0.1, 0.11])

    def one(seed):  # two starts: the informed one and one lower for seed 1
        low = 0.5 if seed else 1.0
        return {k: np.asarray(v)[None] for k, v in dict(
            line_theta=th, line_loss=np.full(3, 1.0 + seed), line_q=np.ones(3), line_m=np.zeros(3),
            line_test_error=np.ones(3), line_converged=np.ones(3, bool),
            line_sweeps_differ=np.zeros(3, bool), start_kind=np.array(["informed", "release"]),
            loss=np.array([1.0, low]), theta=np.array([0.1, 0.09]), q=np.ones(2), m=np.zeros(2),
            test_error=np.array([3e-3, 2.9e-3]), converged=np.ones(2, bool),
            lowest=np.array(int(seed)), d=np.array(60), alpha=np.array(1.0164),
            seconds=np.array(3.0 + seed)).items()}
    with Store(tmp_path / "fw.npz", kind="phase_flat_window", params={"thetas": th}) as st:
        for seed in (0, 1):
            st.put(seed_task(60, seed), one(seed), {"seconds": 2.0})
    fw = read_flat_window(tmp_path / "fw.npz")
    land = fw["landscape"][60]
    assert land["train_loss"].shape == (2, 3) and land["search"]["loss"].shape == (2, 2)
    assert land["free_train_loss"].tolist() == [1.0, 1.0]
    assert land["best_train_loss"].tolist() == [1.0, 0.5] and land["best_theta"][1] == 0.09
    # each seed's search keeps its own time; the landscape holds the tasks' total
    assert land["search"]["seconds"].tolist() == [3.0, 4.0] and float(land["seconds"]) == 4.0
    assert fw["theory"] is None and fw["root"] is None and fw["control"] is None
    assert {"alpha", "omega", "sigma", "lam"} <= set(fw["meta"]["missing"])
    with pytest.warns(runs.MissingRunWarning):
        assert read_flat_window(tmp_path / "none.npz") is None
