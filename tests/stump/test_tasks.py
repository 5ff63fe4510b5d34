"""The stump task (``stumplib.stump.tasks``): shapes, labels, same seed same numbers, the reflection."""
from __future__ import annotations

import torch

from stumplib.stump import baselines
from stumplib.stump.model import estimate
from stumplib.stump.tasks import labels, reflect, sample_tasks
from stumplib.stump import Prior


def test_tasks_shapes_labels_and_determinism():
    tau, x, y = sample_tasks(7, 11, Prior(0.3, 0.6), seed=9, device="cpu")
    assert tau.shape == (7,) and x.shape == y.shape == (7, 11)
    assert (tau >= 0.3).all() and (tau <= 0.6).all()
    assert torch.equal(y, (x >= tau[:, None]).double())
    tau2, x2, _ = sample_tasks(7, 11, Prior(0.3, 0.6), seed=9, device="cpu")
    assert torch.equal(tau, tau2) and torch.equal(x, x2)
    assert not torch.equal(x, sample_tasks(7, 11, Prior(0.3, 0.6), seed=10, device="cpu")[1])


def test_reflection_maps_tau_to_one_minus_tau():
    tau, x, y = sample_tasks(20, 30, Prior(0.0, 1.0), seed=12, device="cpu")
    xr, yr = reflect(x, y)
    # reflected labels are the stump labels of 1 - tau (ties x = tau have probability 0)
    assert torch.equal(yr, labels(xr, 1 - tau))
    # the head applied to the reflection, mapped back, is the mirror estimate
    f_ref = 1 - estimate(xr, yr, 1e6, 0.99e6)
    has_neg = y.sum(-1) < y.shape[-1]
    assert torch.allclose(f_ref[has_neg], baselines.max_negative(x, y)[has_neg], atol=1e-5)
