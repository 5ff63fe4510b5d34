"""Tests of stumplib.phase.published: the replay of the authors' procedure against the published
files, and the published points against the accurate rule."""
from __future__ import annotations

import numpy as np
import pytest

from stumplib.phase import Outcome, state_evolution
from stumplib.phase.replica import solve_fixed_rule

from conftest import POS_FILE, REF, SEM_FILE, needs_shared
from conftest import read_reference as _read


@pytest.fixture(scope="module")
def stroud_fixed_points():
    out = {}
    for name, br in ((SEM_FILE, "semantic"), (POS_FILE, "positional")):
        ref = _read(name)
        sel = ref["alpha"] >= 0.3
        r = solve_fixed_rule(ref["alpha"][sel], omega=0.3, branch=br, rule="stroud", tol=1e-8, max_iter=3000)
        out[br] = (ref, sel, r)
    return out


#: largest relative deviation from the published files allowed for the authors' procedure stopped by
#: their rule (:func:`replay_authors`), per branch, at every published alpha >= 0.3: the issue's
#: 1e-3 on the semantic branch (measured 6.1e-4); on the positional branch the measured 1.8e-3 (q,
#: m, V), because there the published points are not where an exact-minimiser iteration stops (see
#: ``test_published_positional_points_fail_the_stopping_rule_with_exact_minimisers``).
#: What these numbers mean: the start of the replay (:data:`AUTHORS_START`, 4 numbers per branch)
#: was chosen by a search that minimised exactly this deviation, so they are the best agreement the
#: procedure reaches, not an independent confirmation: the test guards that the procedure (rule,
#: damping, stopping rule, proximal minimisers) still reaches it from that start. How much the
#: start matters: other starts of the same searches stopped up to 2.65e-3 (positional, the grid's
#: best) from the files, and the exact fixed points of the same rule, which no start can move,
#: stay within 3.5e-3 for alpha >= 1 (asserted below).
STOPPED_TOL = {"semantic": 1e-3, "positional": 2.5e-3}


@needs_shared
def test_stroud_rule_reproduces_the_published_fixed_points(stroud_fixed_points):
    """The authors' procedure (144-node rule, global proximal minimisers, damping 0.8, stop at
    undamped changes below 1e-4 in q, m, theta, same start for every alpha) reproduces the published
    q, V, theta (semantic) and q, m, V (positional) within ``STOPPED_TOL`` at every published alpha
    >= 0.3. The exact fixed points of the same rule stay within 3.5e-3 for alpha >= 1 and differ by
    up to 0.9% (semantic) and 2.6% (positional) below."""
    from stumplib.phase.published import replay_authors
    for br, (ref, sel, r) in stroud_fixed_points.items():
        keys = ("q", "V", "theta") if br == "semantic" else ("q", "m", "V")
        a = ref["alpha"][sel]
        st = replay_authors(a, br)
        assert np.all(st["n_iter"] < 300), (br, st["n_iter"])
        for k in keys:
            rel = np.abs(r[k] / ref[k][sel] - 1)
            assert rel[a >= 1.0].max() < 3.5e-3, (br, k, a[np.argmax(rel)], rel.max())
            rs = np.abs(st[k] / ref[k][sel] - 1)
            assert rs.max() < STOPPED_TOL[br], (br, k, a[np.argmax(rs)], rs.max())


@needs_shared
def test_published_positional_points_fail_the_stopping_rule_with_exact_minimisers():
    """At the published semantic points the 144-node rule's undamped change is below the authors'
    1e-4 in q and theta (where they stopped); at some published positional points it is not (m or
    q change by more): those points carry their minimiser's error, of the stopping rule's size."""
    from stumplib.phase.published import published_curves
    out = published_curves(REF)
    assert max(np.abs(out[f"sem_resid_{k}"]).max() for k in ("q", "theta")) < 1e-4
    assert max(np.abs(out[f"pos_resid_{k}"]).max() for k in ("q", "m")) > 1.5e-4


@needs_shared
def test_stroud_fixed_points_is_far_from_the_accurate_rule_at_alpha_1(stroud_fixed_points):
    """At the published alpha = 1.016 the accurate rule's theta is below the 144-node fixed point by
    many of its quadrature errors: the published gap is the rule's, not the equations'."""
    ref, sel, r = stroud_fixed_points["semantic"]
    a = ref["alpha"][sel]
    i = int(np.argmin(np.abs(a - 1.0164)))
    acc = state_evolution(float(a[i]), omega=0.3, branch="semantic", rtol=2e-3, stability=False)
    assert acc["outcome"] == Outcome.CONVERGED
    assert r["theta"][i] - acc["theta"] > 10 * acc["theta_err"], (r["theta"][i], acc["theta"], acc["theta_err"])
