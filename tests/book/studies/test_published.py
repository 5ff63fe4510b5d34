"""Tests of stumplib.book.studies.published: the replay of the authors' procedure against the published
files, and the published points against the accurate rule."""
from __future__ import annotations

import numpy as np
import pytest

from stumplib.phase import Outcome, state_evolution
from stumplib.phase.replica import solve_fixed_rule
from stumplib.phase import SolverOptions, check_model

from conftest import POS_FILE, SEM_FILE
from conftest import read_reference as _read


@pytest.fixture(scope="module")
def stroud_fixed_points():
    out = {}
    for name, br in ((SEM_FILE, "semantic"), (POS_FILE, "positional")):
        ref = _read(name)
        sel = ref["alpha"] >= 0.3
        r = solve_fixed_rule(ref["alpha"][sel], rule="stroud", tol=1e-8, max_iter=3000,
                             model=check_model(omega=0.3, branch=br))
        out[br] = (ref, sel, r)
    return out


#: the largest relative deviation from the published files of the authors' procedure stopped by
#: their rule (:func:`replay_authors` from :data:`AUTHORS_START`), per branch, at every published
#: alpha >= 0.3, as measured when the start was found (commits 0f7e4de and 3729e8f). The start was
#: chosen by a search that minimised exactly this deviation, so it is **not** evidence that the
#: procedure reproduces the files: it is the best agreement the procedure reaches (in sample). The
#: test below therefore does not compare it with a tolerance (a tolerance set from this output
#: would only restate it): it checks that the replay still gives these recorded values to rounding
#: (a regression guard of the rule, damping, stopping rule and proximal minimisers). The
#: start-free comparison is the exact fixed point of the same rule (within 3.5e-3 of the files for
#: alpha >= 1, asserted below); chapter 6 states that the start was fitted.
STOPPED_DEV = {"semantic": 6.108784528779942e-4, "positional": 1.8071075085569488e-3}
#: how closely a rerun must reproduce :data:`STOPPED_DEV`, relative (6e-10 absolute on the
#: semantic deviation: far above rounding, far below any change of the procedure)
REPLAY_RTOL = 1e-6


def test_stroud_rule_reproduces_the_published_fixed_points(stroud_fixed_points):
    """The authors' procedure (144-node rule, global proximal minimisers, damping 0.8, stop at
    undamped changes below 1e-4 in q, m, theta, same start for every alpha) reproduces the published
    q, V, theta (semantic) and q, m, V (positional) at every published alpha >= 0.3 as far as it
    did when its start was fitted (:data:`STOPPED_DEV`, a regression guard, not a validation). The
    exact fixed points of the same rule, which no start can move, stay within 3.5e-3 for
    alpha >= 1 and differ by up to 0.9% (semantic) and 2.6% (positional) below."""
    from stumplib.book.studies.published import replay_authors
    for br, (ref, sel, r) in stroud_fixed_points.items():
        keys = ("q", "V", "theta") if br == "semantic" else ("q", "m", "V")
        a = ref["alpha"][sel]
        st = replay_authors(a, br)
        assert np.all(st["n_iter"] < 300), (br, st["n_iter"])
        for k in keys:
            rel = np.abs(r[k] / ref[k][sel] - 1)
            assert rel[a >= 1.0].max() < 3.5e-3, (br, k, a[np.argmax(rel)], rel.max())
        dev = max(np.abs(st[k] / ref[k][sel] - 1).max() for k in keys)
        assert dev == pytest.approx(STOPPED_DEV[br], rel=REPLAY_RTOL), (br, dev)


def test_published_positional_points_fail_the_stopping_rule_with_exact_minimisers(
        notebook_results, book_cache, monkeypatch):
    """At the published semantic points the 144-node rule's undamped change is below the authors'
    1e-4 in q and theta (where they stopped); at some published positional points it is not (m or
    q change by more): those points carry their minimiser's error, of the stopping rule's size.

    Computed as chapter 6 computes it (the shipped files, cached) into the store the session's
    notebook runs share, so that chapter 6's runs reload it instead of computing it again."""
    from stumplib.book.studies.published import published_curves, reference_dir
    monkeypatch.setenv("STUMPBOOK_RESULTS", str(notebook_results))
    out = published_curves(reference_dir(), cache=True)  # the files shipped with stumplib
    assert max(np.abs(out[f"sem_resid_{k}"]).max() for k in ("q", "theta")) < 1e-4
    assert max(np.abs(out[f"pos_resid_{k}"]).max() for k in ("q", "m")) > 1.5e-4


def test_stroud_fixed_points_is_far_from_the_accurate_rule_at_alpha_1(stroud_fixed_points):
    """At the published alpha = 1.016 the accurate rule's theta is below the 144-node fixed point by
    many of its quadrature errors: the published gap is the rule's, not the equations'."""
    ref, sel, r = stroud_fixed_points["semantic"]
    a = ref["alpha"][sel]
    i = int(np.argmin(np.abs(a - 1.0164)))
    acc = state_evolution(float(a[i]), model=check_model(omega=0.3, branch="semantic"),
                          options=SolverOptions(rtol=2e-3, stability=False))
    assert acc["outcome"] == Outcome.CONVERGED
    assert r["theta"][i] - acc["theta"] > 10 * acc["theta_err"], (r["theta"][i], acc["theta"], acc["theta_err"])
