"""Tests of stumplib.phase.attention: objective, gradient, test error, plain gradient descent."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from stumplib.phase import data
from stumplib.phase.attention import attention_test_error, objective_and_grad, train_attention_gd
from stumplib.phase.replica import solve_fixed_rule
from stumplib.phase import AttentionGDOptions, check_model

from conftest import A0, teacher_sample


def test_objective_gradient_against_autograd():
    d, n = 16, 12
    g, Z, qs, T = teacher_sample(d, n, seed=0)
    X = Z + data.positional_encodings(d)
    Q = torch.randn(1, d, 3, generator=g)
    mask = (torch.arange(n)[:, None] < torch.tensor([4, 8, 12])[None]).double()[None]
    L, grad = objective_and_grad(Q, X[None], Z[None], T[None], mask, 0.01)
    for r, nr in enumerate((4, 8, 12)):
        q = Q[0, :, r].clone().requires_grad_(True)
        h = X[:nr] @ q / math.sqrt(d)
        yh = torch.softmax(h[:, :, None] * h[:, None, :], -1) @ X[:nr]
        Lb = ((yh - T[:nr] @ Z[:nr]) ** 2).sum() / (2 * d) + 0.005 * (q * q).sum()
        Lb.backward()
        assert float(L[0, r]) == pytest.approx(float(Lb.detach()), rel=1e-12)
        torch.testing.assert_close(grad[0, :, r], q.grad, rtol=1e-10, atol=1e-12)


def test_rao_blackwellised_test_error_matches_brute_force():
    g = torch.Generator().manual_seed(1)
    d = 30
    qs = data.sample_teacher(d, generator=g)
    Q = (0.7 * qs + torch.randn(d, generator=g) + 2 * data.positional_encodings(d)[0])[None, :, None]
    mean, se = attention_test_error(Q, qs[None], n_test=40000, generator=g,
                                    model=check_model(omega=0.3, sigma=0.5, A=A0))
    Z = data.sample_tokens(100_000, d, generator=g)
    X = Z + data.positional_encodings(d)
    h = X @ Q[0, :, 0] / math.sqrt(d)
    err = ((torch.softmax(h[:, :, None] * h[:, None, :], -1) @ X - data.teacher_matrix(Z, qs, omega=0.3) @ Z) ** 2
           ).sum((-1, -2)) / (2 * d)
    bf, bf_se = float(err.mean()), float(err.std() / math.sqrt(err.numel()))
    assert abs(float(mean) - bf) < 4 * math.hypot(float(se), bf_se)


@pytest.fixture(scope="module")
def gd_small():
    old = torch.get_num_threads()  # a module fixture runs outside the per-test one-thread fixture
    torch.set_num_threads(1)
    try:
        return train_attention_gd([2.0], 80, seeds=3, model=check_model(omega=0.3),
                                  options=AttentionGDOptions(steps=3000, n_test=4000,
                                                             progress=False))
    finally:
        torch.set_num_threads(old)


def test_gd_is_deterministic_and_stays_on_its_branch(gd_small):
    r = gd_small
    assert np.all(r["theta_emp"][:, 0, 0] > 0.4) and np.all(np.abs(r["m"][:, 0, 0]) < 0.1)
    assert np.all(r["m"][:, 0, 1] > 0.15) and np.all(np.abs(r["theta_emp"][:, 0, 1]) < 0.3)
    again = train_attention_gd([2.0], 80, seeds=[0], model=check_model(omega=0.3),
                               options=AttentionGDOptions(steps=3000, n_test=4000,
                                                          progress=False))
    np.testing.assert_allclose(again["test_error"][0], r["test_error"][0], rtol=1e-12)


def test_gd_small_d_against_theory_within_finite_size_error(gd_small):
    """d = 80, alpha = 2: GD test error against the state evolution of its branch. The finite-size
    error is estimated from the seed spread plus an O(1/sqrt(d)) allowance of 3/sqrt(d) (about 34%
    here): a loose but falsifiable check (the two branches differ by a factor of about 3)."""
    th = {br: solve_fixed_rule(2.0, n_nodes=6, model=check_model(omega=0.3, branch=br))
          for br in ("semantic", "positional")}
    for ii, br in enumerate(("semantic", "positional")):
        te = gd_small["test_error"][:, 0, ii]
        tol = 3 / math.sqrt(80) + 2 * te.std(ddof=1) / math.sqrt(te.size) / th[br]["test_error"]
        assert abs(te.mean() - th[br]["test_error"]) / th[br]["test_error"] < tol, br
    # and the branch ordering matches: semantic generalises better at alpha = 2
    assert gd_small["test_error"][:, 0, 0].mean() < gd_small["test_error"][:, 0, 1].mean()


def test_gd_checkpoints_record_the_run_on_its_way():
    """The checkpoint at the last step is the final test error (same test draws); an earlier one is
    the final value of a run stopped there; the gradient norm falls along the run."""
    kw = dict(seeds=2, inits=("semantic",), model=check_model(omega=0.3))
    opts = AttentionGDOptions(n_test=500, progress=False, steps=60, checkpoints=[20, 60])
    r = train_attention_gd([1.0, 2.0], 20, options=opts, **kw)
    short = train_attention_gd([1.0, 2.0], 20, options=replace(opts, steps=20, checkpoints=()),
                               **kw)
    assert r["test_error_at"].shape == (2, 2, 2, 1) and list(r["checkpoints"]) == [20, 60]
    np.testing.assert_array_equal(r["test_error_at"][-1], r["test_error"])
    np.testing.assert_allclose(r["test_error_at"][0], short["test_error"], rtol=1e-12)
    np.testing.assert_allclose(r["grad_norm_at"][0], short["grad_norm"], rtol=1e-12)
    assert np.all(r["grad_norm_at"][1] < r["grad_norm_at"][0])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA not available")
def test_gd_cuda_matches_cpu():
    a = train_attention_gd([1.0], 20, seeds=1, device="cpu", model=check_model(omega=0.3),
                           options=AttentionGDOptions(steps=50, n_test=100, progress=False))
    b = train_attention_gd([1.0], 20, seeds=1, device="cuda", model=check_model(omega=0.3),
                           options=AttentionGDOptions(steps=50, n_test=100, progress=False))
    np.testing.assert_allclose(a["m"], b["m"], rtol=1e-6)
