"""Tests of stumplib.book.studies.curves: the fixed-rule curves' crossing against the published free
energies, the view along theta under several rules."""
from __future__ import annotations

import numpy as np
import pytest

from stumplib.phase.crossings import first_crossing
from stumplib.phase import check_model

from conftest import read_reference as _read


@pytest.mark.slow
def test_transition_matches_published_free_energies():
    """alpha_c from our training losses against alpha_c from the published Phi (larger Phi wins).

    Both crossings are linear interpolations on the published alpha grid. Measured: ours minus
    published = -0.0039 with 6 Gauss-Hermite nodes per axis and -0.0072 with 10, so the fixed
    rules' own error moves alpha_c by about 3e-3, and the published 144-node curves carry a rule
    error of the same order (their theta is 0.9% off the accurate one at alpha = 1); the tolerance
    0.02 is 2.5 times the larger difference (it was 0.1, 8% of alpha_c)."""
    sem = _read("theory_repl_softmax_Mixed_sig0.5_lamb0.01_omega0.3.csv")
    pos = _read("theory_repl_softmax_Mixed_sig0.5_lamb0.01_omega0.3_para.csv")
    assert np.allclose(sem["alpha"], pos["alpha"])
    order = np.argsort(sem["alpha"])
    a = sem["alpha"][order]
    ref_c = first_crossing(a, sem["Phi"][order], pos["Phi"][order])
    sel = (a > 0.9) & (a < 1.8)
    from stumplib.phase.replica import solve_fixed_rule

    loss = {br: solve_fixed_rule(a[sel], n_nodes=6, rule="gauss-hermite",
                                 model=check_model(omega=0.3, sigma=0.5, lam=0.01,
                                                   branch=br))["train_loss"]
            for br in ("semantic", "positional")}
    ours = float(first_crossing(a[sel], loss["positional"], loss["semantic"]))
    assert abs(ours - ref_c) < 0.02, (ours, ref_c)


def test_window_profiles_one_structured_entry_per_rule_reloaded_unchanged(tmp_path, monkeypatch,
                                                                           book_cache):
    from stumplib import book
    from stumplib.phase.replica import theta_profile
    from stumplib.book.studies.curves import window_profiles

    monkeypatch.setenv(book.RESULTS_ENV, str(tmp_path))
    monkeypatch.delenv(book.CACHE_ENV, raising=False)
    thetas = np.linspace(0.14, 0.17, 3)
    rules = [("GH 4", "gauss-hermite", 4), ("GH 6", "gauss-hermite", 6)]
    got = window_profiles(2.0, thetas, rules, omega=0.3, sigma=0.5, lam=0.01)
    again = window_profiles(2.0, thetas, rules, omega=0.3, sigma=0.5, lam=0.01)  # reloaded
    assert len(got) == len(again) == 2 and len(list(tmp_path.glob("window_profiles-*.npz"))) == 1
    for k, (_, rule, nn) in enumerate(rules):
        ref = theta_profile(2.0, thetas, omega=0.3, sigma=0.5, lam=0.01, rule=rule, n_nodes=nn)
        for out in (got[k], again[k]):
            assert sorted(out) == sorted(ref)
            for key, v in ref.items():
                np.testing.assert_array_equal(out[key], np.asarray(v))
    assert not np.array_equal(got[0]["residual"], got[1]["residual"])  # the rules are kept apart
