"""Tests of stumplib.phase.replicon: the replica-symmetric point's stability check."""
from __future__ import annotations

from stumplib.book.studies.overlaps import theory_points
from stumplib.phase.replicon import replicon


def test_replicon_jacobian_satisfies_steins_identity_where_the_proximal_map_is_smooth():
    th = theory_points([2.0], rtol=1e-2, cache=False)
    r = replicon(2.0, float(th["q"][0]), float(th["V"][0]), float(th["theta"][0]), log2_points=11,
                    n_scramblings=4)
    # alpha E tr(I - J) = V_hat V by Stein's lemma (no jumps at alpha = 2: measured 0.494 both)
    assert abs(r["alpha_tr"].value - r["vhat_v"].value) < 0.01 * r["vhat_v"].value
    assert 0 < r["replicon"].value < 1
