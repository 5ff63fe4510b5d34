"""Baselines (``stumplib.stump.baselines``) against their definitions, brute-force ERM and order-statistic
rates."""
from __future__ import annotations

import pytest
import torch

from stumplib.stump import baselines
from stumplib.stump.model import estimate
from stumplib.stump.tasks import sample_contexts, sample_tasks
from stumplib.stump import Prior


def test_baselines_match_definitions():
    tau, x, y = sample_tasks(30, 15, seed=13, device="cpu")
    for j in range(30):
        xs, ys = x[j].tolist(), y[j].tolist()
        pos = [a for a, l in zip(xs, ys) if l == 1]
        neg = [a for a, l in zip(xs, ys) if l == 0]
        mp = min(pos) if pos else 1.0
        mn = max(neg) if neg else 0.0
        assert baselines.min_positive(x, y)[j].item() == mp
        assert baselines.max_negative(x, y)[j].item() == mn
        assert baselines.midpoint(x, y)[j].item() == pytest.approx((mp + mn) / 2)
        assert baselines.bayes_posterior_mean(x, y, Prior(0.2, 0.8))[j].item() == pytest.approx(
            (max(mn, 0.2) + min(mp, 0.8)) / 2)
        assert baselines.erm_stump(x, y)[j].item() == pytest.approx((mp + mn) / 2)


def test_erm_stump_with_noisy_labels_minimises_errors():
    g = torch.Generator().manual_seed(0)
    x = torch.rand(40, 12, generator=g)
    y = (x >= 0.5).double()
    flip = torch.rand(40, 12, generator=g) < 0.2
    y = torch.where(flip, 1 - y, y)
    t = baselines.erm_stump(x, y)
    for j in range(40):
        errs = lambda th: int(((x[j] >= th).double() != y[j]).sum())
        candidates = [0.0] + sorted(x[j].tolist()) + [1.0]
        best = min(errs(c) for c in candidates + [1.0 + 1e-9])
        assert errs(t[j].item()) == best


def test_bayes_has_lowest_mse_on_shared_sample():
    tau, x, y = sample_tasks(40000, 10, Prior(0.2, 0.8), seed=14, device="cpu")
    mse = {name: ((fn(x, y, Prior(0.2, 0.8)) - tau) ** 2).mean().item() for name, fn in baselines.BASELINES.items()}
    mse["attention"] = ((estimate(x, y, 200.0, 170.0) - tau) ** 2).mean().item()
    for name, v in mse.items():
        if name != "Bayes":
            assert mse["Bayes"] < v, (name, mse)


def test_order_statistic_mse_rates():
    """Interior tau: min-positive MSE ~ 2/N^2, midpoint ~ 1/(2 N^2)."""
    N = 400
    tau = torch.full((20000,), 0.5)
    x, y = sample_contexts(tau, N, seed=15)
    mse_mp = ((baselines.min_positive(x, y) - tau) ** 2).mean().item() * N ** 2
    mse_mid = ((baselines.midpoint(x, y) - tau) ** 2).mean().item() * N ** 2
    assert mse_mp == pytest.approx(2.0, rel=0.06)
    assert mse_mid == pytest.approx(0.5, rel=0.06)
