"""Tests of ``stumplib.book.studies.lowest_minima``: the multi-start search finds a planted lower minimum
that the informed start misses, counts distinct minima and measures its saturation."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from stumplib.book.studies import lowest_minima as lm
from stumplib.phase.minimise import minimise
from stumplib.phase.problem import make_problem
from stumplib.phase import check_model

SIGMA = 0.5


# ------------------------------------------------------------------ synthetic landscapes
def _descend_1d(f_grad, x0: float, lr: float = 1e-3, steps: int = 20000) -> float:
    x = x0
    for _ in range(steps):
        x -= lr * f_grad(x)
    return x


def test_distinct_minima_and_saturation_on_a_landscape_with_a_known_number_of_minima():
    """``f(x) = sin(3 pi x) + x^2/2``: its local minima lie near ``-1/6 + 2k/3``; starts drawn
    uniformly on [-1.2, 1.2] and descended reach the five with ``k = -2..2`` (the outer basins
    reach past the interval). Embedded in R^5 (the other coordinates fixed), the labels count 5
    minima, the running lowest falls to the global one, and saturation says whether it was found
    in the first half."""
    grad = lambda x: 3 * np.pi * np.cos(3 * np.pi * x) + x  # noqa: E731
    f = lambda x: np.sin(3 * np.pi * x) + x ** 2 / 2  # noqa: E731
    rng = np.random.default_rng(0)
    xs = np.array([_descend_1d(grad, x0) for x0 in rng.uniform(-1.2, 1.2, 40)])
    Q = np.column_stack([xs + 3.0, np.ones((40, 4))])  # away from 0: relative tolerance applies
    ok = np.ones(40, bool)
    labels = lm.distinct_minima(Q, ok, same_tol=1e-4)
    true_minima = np.unique(np.round(xs, 6))
    near = -1 / 6 + 2 * np.arange(-2, 3) / 3
    assert len(true_minima) == 5 and np.all(np.abs(true_minima - near) < 0.05)
    assert np.all(np.abs(grad(true_minima)) < 1e-3)  # rounded to 1e-6: f'' ~ 90 times that
    assert labels.max() + 1 == 5 and labels[0] == 0 and set(labels) == set(range(5))
    loss = f(xs)
    run = lm.running_lowest(loss, ok)
    assert np.all(np.diff(run) <= 0) and run[-1] == pytest.approx(f(true_minima).min())
    assert lm.saturated(labels, loss) == bool(np.any(loss[:20] == loss.min()))
    # the lowest minimum only in the second half: not saturated; a non-converged start is ignored
    order = np.argsort(-loss, kind="stable")  # the lowest last
    assert not lm.saturated(labels[order], loss[order])
    ok2 = ok.copy()
    ok2[np.argmin(loss)] = False
    labels2 = lm.distinct_minima(Q, ok2, same_tol=1e-4)
    assert labels2[np.argmin(loss)] == -1
    assert lm.running_lowest(loss, ok2)[-1] > loss.min() or np.sum(loss == loss.min()) > 1
    assert not lm.saturated(np.full(3, -1), np.zeros(3))


class _DoubleWell:
    """A planted landscape along ``theta``: ``E(theta)`` has a higher local minimum at 0.10 and
    the global one at 0.06 (barrier at 0.08); the informed start (``theta(Q*) = 0.12``) descends
    to the higher one."""

    def __init__(self, d: int):
        self.d = d
        self.qs = torch.zeros(d, dtype=torch.float64)
        self.qs[0] = (0.12 * d / SIGMA ** 2) ** 0.5  # theta(Q*) = sigma^2 |Q*|^2 / d = 0.12

    def theta(self, Q: torch.Tensor) -> float:
        return float(SIGMA ** 2 * (self.qs @ Q) / self.d)

    def E(self, t: float) -> float:
        # wells at 0.06 (depth -1) and 0.10 (depth -0.5)
        return -np.exp(-((t - 0.06) / 0.01) ** 2) - 0.5 * np.exp(-((t - 0.10) / 0.01) ** 2)

    def Q_at(self, t: float) -> torch.Tensor:
        Q = torch.zeros(self.d, dtype=torch.float64)
        Q[0] = t * self.d / (SIGMA ** 2 * float(self.qs[0]))
        Q[1] = 1.0  # a fixed component off Q* (the minimiser's other coordinates)
        return Q

    def descend(self, t0: float) -> float:
        h = 1e-6
        return _descend_1d(lambda t: (self.E(t + h) - self.E(t - h)) / (2 * h), t0, lr=2e-5,
                           steps=4000)


def test_the_search_finds_a_planted_lower_minimum_the_informed_start_misses(monkeypatch):
    dw = _DoubleWell(8)
    pb = make_problem(8, [0], 10, model=check_model(omega=0.3))
    pb.q_star[0] = dw.qs

    def fake_minimise(pb_, s, n, Q0, gtol=1e-8, max_iter=20000):
        t = dw.descend(dw.theta(Q0))
        return dict(Q=dw.Q_at(t), loss=dw.E(t), rel_grad=0.0, n_iter=1, n_newton=0,
                    converged=True)

    def fake_constrained(pb_, s, n, theta, Q0, gtol=1e-8, max_iter=20000):
        return dict(Q=dw.Q_at(theta), loss=dw.E(theta), rel_grad=0.0, n_iter=1, n_newton=0,
                    converged=True)

    monkeypatch.setattr(lm, "minimise", fake_minimise)
    monkeypatch.setattr(lm, "constrained_minimise", fake_constrained)
    out = lm.search_problem(pb, 10, np.linspace(0.05, 0.11, 7), rng=np.random.default_rng(1),
                            rotation_thetas=[0.09], n_rotations=1, perturb_scales=(0.05,),
                            sigma=SIGMA, test_error=False)
    assert out["start_kind"][0] == "informed"
    assert out["theta"][0] == pytest.approx(0.10, abs=1e-3)  # the informed start: the higher well
    lo = int(out["lowest"])
    assert out["theta"][lo] == pytest.approx(0.06, abs=1e-3) and out["loss"][lo] < out["loss"][0]
    assert out["start_kind"][lo] == "release"
    assert int(out["n_distinct"]) == 2 and bool(out["saturated"])
    assert list(out["start_kind"]).count("release") == 7
    assert out["running_lowest"][-1] == pytest.approx(dw.E(0.06), rel=1e-6)


def test_on_a_real_seed_the_search_beats_the_informed_start_with_a_true_minimum():
    """d = 60, seed 1: the minimiser from ``Q*`` is not the lowest; the lowest found converged,
    has a lower loss, and no small perturbation of it descends lower."""
    out = lm.search(1.0164, 60, 1, np.linspace(0.082, 0.112, 4), n_rotations=1,
                    perturb_scales=(0.1,))
    lo = int(out["lowest"])
    assert out["converged"].all() and out["loss"][lo] < out["loss"][0] - 1e-6
    assert int(out["n_distinct"]) >= 2
    n = int(out["n"])
    pb = make_problem(60, [1], n, model=check_model(omega=0.3))
    best = minimise(pb, 0, n, pb.q_star[0].clone())  # the informed minimiser again
    assert best["loss"] == pytest.approx(out["loss"][0], rel=1e-10)
    assert 0 < float(out["objective_seconds"]) < float(out["seconds"])


def test_rotation_start_has_the_asked_overlap_and_norm():
    pb = make_problem(50, [0], 60, model=check_model(omega=0.3))
    qs = pb.q_star[0]
    Q0 = lm.rotation_start(qs, 0.09, 3.0 * float(qs.norm()), np.random.default_rng(0)
                           .standard_normal(50), sigma=SIGMA)
    assert SIGMA ** 2 * float(qs @ Q0) / 50 == pytest.approx(0.09, rel=1e-12)
    assert float(Q0.norm()) == pytest.approx(3.0 * float(qs.norm()), rel=1e-12)


@pytest.mark.parametrize("kw, msg", [
    (dict(thetas=[0.1]), "thetas must be increasing"),
    (dict(thetas=[0.1, 0.09]), "thetas must be increasing"),
    (dict(d=2), "d must be"),
    (dict(n_rotations=-1), "n_rotations"),
    (dict(perturb_scales=(0.0,)), r"perturb_scales\[0\]"),
])
def test_search_refuses_bad_input_before_any_work(kw, msg):
    args = dict(alpha=1.0164, d=40, s=0, thetas=[0.08, 0.1])
    args.update(kw)
    with pytest.raises(ValueError, match=msg):
        lm.search(**args)


def test_landscape_run_records_the_constrained_curve_and_the_lowest_minimum():
    """A small run (d = 40, two seeds, three thetas): every constrained run converges and holds its
    theta; the lowest minimum found is no higher than the one reached from Q*; the search's records
    ride along."""
    thetas = [0.05, 0.07, 0.09]
    out = lm.landscape_run(1.5, 40, [0, 1], thetas, n_rotations=1, perturb_scales=(0.1,))
    assert out["train_loss"].shape == (2, 3) and out["converged"].all()
    assert out["free_converged"].all() and out["best_converged"].all()
    assert np.all(out["best_train_loss"] <= out["free_train_loss"] + 1e-15)
    assert out["thetas"].tolist() == thetas and int(out["d"]) == 40
    assert out["search"]["loss"].shape == (2, 1 + 3 + 3 + 1) and out["seeds"].tolist() == [0, 1]
    held = out["search"]["line_loss"]
    assert np.allclose(held, out["train_loss"])
