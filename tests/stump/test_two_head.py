"""Two heads trained end to end (stumplib.stump.two_head): special cases against chapter 5's
estimators, analytic gradients against finite differences, the training loop against the one-head
trainer, the stable step, what GD learns on a corpus with a blind head, and the two-way interval."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from stumplib.core.errors import TrainingDiverged
from stumplib.core.stats import Estimate, ratio_of_means
from stumplib.stump import boundary as B
from stumplib.stump import two_head as TH
from stumplib.stump.model import estimate as one_head
from stumplib.stump.tasks import labels
from stumplib.stump.trainer import RunConfig, make_corpora, train_gd
from stumplib.stump import TrainOptions

D = torch.float64


def _contexts(C=300, N=12, seed=0, tau_lo=0.0, tau_hi=1.0):
    g = torch.Generator().manual_seed(seed)
    tau = tau_lo + (tau_hi - tau_lo) * torch.rand(C, generator=g, dtype=D)
    x = torch.rand(C, N, generator=g, dtype=D)
    return x, labels(x, tau), tau


def test_rules_are_the_chapter_five_combinations():
    """Fixed halves is chapter 5's plain symmetrization bit for bit (halving is exact in binary);
    the one-head rule is the head alone whatever the mirror's parameters; count weighting and the
    boundary-aware rule agree to rounding (q f1 + (1 - q) f2 against (n1 f1 + n0 f2) / N: a few
    ulps of numbers <= 1, so 1e-15)."""
    x, y, _ = _contexts()
    for beta, b in [(3.0, 2.5), (40.0, 44.0), (900.0, 1000.0)]:
        ref = B.estimate_all(x, y, beta, b, ("one-head", "symmetrized", "count-weighted",
                                             "boundary-aware"))
        same = torch.tensor([beta, b, beta, b], dtype=D)
        assert torch.equal(TH.estimate(x, y, same, TH.rule("symmetrized")), ref["symmetrized"])
        other = torch.tensor([beta, b, 7.0, -3.0], dtype=D)  # the mirror's parameters are irrelevant
        assert torch.equal(TH.estimate(x, y, other, TH.rule("one-head")), one_head(x, y, beta, b))
        assert torch.equal(TH.estimate(x, y, other, TH.rule("one-head")), ref["one-head"])
        for name in ("count-weighted", "boundary-aware"):
            got = TH.estimate(x, y, same, TH.rule(name))
            assert torch.allclose(got, ref[name], rtol=0, atol=1e-15), name
    # the contexts include both empty sides, so the boundary-aware fallbacks were exercised
    n1 = y.sum(-1)
    assert bool((n1 == 0).any()) and bool((n1 == y.shape[-1]).any())


def test_profile_path_matches_the_literal_model():
    """The grid path (chapter 5's sorted cumulative sums, then the combination) against the literal
    estimate on contexts labelled at each threshold: the fast path's own tolerance (1e-11 at
    beta <= 1e4, tests/stump/test_boundary.py)."""
    g = torch.Generator().manual_seed(3)
    x = torch.rand(120, 9, generator=g, dtype=D)
    tau = torch.tensor([0.0, 0.02, 0.4, 0.93, 1.0], dtype=D)
    heads = torch.tensor([25.0, 30.0, 14.0, 15.5], dtype=D)
    A = torch.randn(3, 4, generator=g, dtype=D)
    prof = TH.profile_errors(x, tau, heads, A)
    for t in range(tau.shape[0]):
        y = labels(x, tau[t].expand(x.shape[0]))
        lit = TH.estimate(x, y, heads, A) - tau[t]
        assert torch.allclose(prof["two-head"][t], lit, rtol=0, atol=1e-11), t
        assert torch.equal(prof["n_pos"][t], y.sum(-1).long())
    # at halves with equal heads it is chapter 5's symmetrized profile
    same = torch.tensor([25.0, 30.0, 25.0, 30.0], dtype=D)
    ref = B.profile_errors(x, tau, 25.0, 30.0, ("symmetrized",))["symmetrized"]
    got = TH.profile_errors(x, tau, same, TH.rule("symmetrized"))["two-head"]
    assert torch.allclose(got, ref, rtol=0, atol=1e-15)


@pytest.mark.parametrize("heads", [(4.0, 3.0, 6.0, 7.5), (30.0, 33.0, 18.0, 21.0)])
def test_gradients_match_central_differences(heads):
    """Central differences with relative step 1e-6: truncation ~1e-12 f''', rounding ~1e-16 / 1e-6,
    so agreement to 1e-7 relative (measured: below 1e-8)."""
    x, y, tau = _contexts(C=50, N=10, seed=4)
    g = torch.Generator().manual_seed(5)
    h0 = torch.tensor(heads, dtype=D)
    A0 = 0.5 + 0.3 * torch.randn(3, 4, generator=g, dtype=D)
    F, dH, dA = TH.estimate_and_grad(x, y, h0, A0)
    for k in range(4):
        e = torch.zeros(4, dtype=D)
        e[k] = 1e-6 * abs(float(h0[k]))
        fd = (TH.estimate(x, y, h0 + e, A0) - TH.estimate(x, y, h0 - e, A0)) / (2 * e[k])
        assert torch.allclose(dH[:, k], fd, rtol=1e-7, atol=1e-9), k
    for k in range(3):
        for j in range(4):
            e = torch.zeros(3, 4, dtype=D)
            e[k, j] = 1e-6
            fd = (TH.estimate(x, y, h0, A0 + e) - TH.estimate(x, y, h0, A0 - e)) / 2e-6
            assert torch.allclose(dA[:, k, j], fd, rtol=1e-7, atol=1e-9), (k, j)
    # the corpus loss: its gradient is the residual-weighted sum of the above
    corp = {"tau": tau[None], "x": x[None], "y": y[None]}
    L, gH, gA = TH.loss_and_grad(corp, h0[None], A0[None])
    assert torch.allclose(L, ((F - tau) ** 2).mean()[None], rtol=1e-14)
    for k in range(4):
        e = torch.zeros(1, 4, dtype=D)
        e[0, k] = 1e-6 * abs(float(h0[k]))
        fd = (TH.loss_and_grad(corp, h0[None] + e, A0[None])[0]
              - TH.loss_and_grad(corp, h0[None] - e, A0[None])[0]) / (2 * e[0, k])
        assert torch.allclose(gH[0, k], fd[0], rtol=1e-6, atol=1e-11), k


def test_batched_over_corpora_equals_one_by_one():
    x, y, _ = _contexts(C=40, N=8, seed=6)
    g = torch.Generator().manual_seed(7)
    H = 10 + 20 * torch.rand(5, 4, generator=g, dtype=D)
    A = torch.randn(5, 3, 4, generator=g, dtype=D)
    F = TH.estimate(x, y, H[:, None], A[:, None])  # (5, C)
    for r in range(5):
        assert torch.allclose(F[r], TH.estimate(x, y, H[r], A[r]), rtol=0, atol=1e-15)


def test_frozen_one_head_combination_is_the_one_head_trainer():
    """With the combination frozen at one head, two-head GD is one-head GD: the trainer of chapters
    3-4 (a different kernel: sorted groups and moment series) gives the same path to rounding
    (measured 1e-15 relative here; 2e-14 after 2000 steps at m = 128, n = 32). Small corpora whose
    scale first collapses (m = 24, n = 16) follow a path so unstable that rounding grows to O(1):
    not a test of the model."""
    cfgs = [RunConfig(m=32, n=32, seed=s, lr=400.0, beta0=20.0, b0=20.0, tau_lo=0.0, tau_hi=1.0)
            for s in range(2)]
    th = TH.train_two_head(cfgs, 300, start="one-head", comb_step=0.0, device="cpu",
                           options=TrainOptions(n_records=8))
    ref = train_gd(cfgs, 300, device="cpu", progress=False, options=TrainOptions(n_records=8))
    assert np.array_equal(th.steps, ref.steps)
    assert np.allclose(th.heads[:, :, 0], ref.beta, rtol=1e-11, atol=0)
    assert np.allclose(th.heads[:, :, 1], ref.b, rtol=1e-11, atol=0)
    assert np.allclose(th.loss, ref.loss, rtol=1e-9, atol=0)
    assert np.all(th.heads[:, :, 2:] == 20.0)  # the switched-off mirror gets no gradient
    assert np.all(th.A == np.asarray(TH.RULES["one-head"]))
    assert abs(th.heads[0, -1, 0] - 20.0) > 1.0  # and the head did move


def test_combination_step_is_the_inverse_curvature():
    """The loss is quadratic in A for fixed heads, so differences of its gradient give the Hessian
    exactly (to rounding); ``combination_step(fraction=1)`` is 1 / its largest eigenvalue."""
    cfgs = [RunConfig(m=30, n=10, seed=1, tau_lo=0.0, tau_hi=1.0)]
    corp = make_corpora(cfgs, "cpu")
    heads = torch.tensor([[20.0, 22.0, 18.0, 21.0]], dtype=D)
    A0 = TH.rule("symmetrized")[None]
    cols = []
    for k in range(12):
        e = torch.zeros(1, 12, dtype=D)
        e[0, k] = 1.0
        gp = TH.loss_and_grad(corp, heads, A0 + e.view(1, 3, 4))[2]
        gm = TH.loss_and_grad(corp, heads, A0 - e.view(1, 3, 4))[2]
        cols.append(((gp - gm) / 2).flatten())
    H = torch.stack(cols, 1)
    lam = torch.linalg.eigvalsh(0.5 * (H + H.T))[-1]
    assert torch.allclose(TH.combination_step(corp, heads)[0], 1 / lam, rtol=1e-10)
    # GD on A alone at 1.9 / lambda_max converges; the loss falls
    lr = TH.combination_step(corp, heads, 1.9)
    A = A0.clone()
    L0 = TH.loss_and_grad(corp, heads, A)[0]
    for _ in range(200):
        A = A - lr[:, None, None] * TH.loss_and_grad(corp, heads, A)[2]
    assert float(TH.loss_and_grad(corp, heads, A)[0]) < 0.5 * float(L0)


def test_blind_head_loses_its_weight():
    """A corpus whose contexts never hold a positive example: the head (which locates the smallest
    positive) is blind, the mirror sees the largest negative. From the symmetric start GD moves
    the head's weight to the mirror and the constant, and the loss falls."""
    M, n = 64, 16
    g = torch.Generator().manual_seed(11)
    x = torch.rand(1, M, n, generator=g, dtype=D)
    top = x.max(-1).values
    tau = top + (1 - top) * torch.rand(1, M, generator=g, dtype=D)  # above every example
    y = labels(x, tau)
    assert float(y.sum()) == 0.0
    corp = {"tau": tau, "x": x, "y": y}
    cfg = [RunConfig(m=M, n=n, lr=400.0, beta0=20.0, b0=20.0, tau_lo=0.0, tau_hi=1.0)]
    res = TH.train_two_head(cfg, 2000, start="symmetrized", corpora=corp, device="cpu")
    w = TH.weights(res.A[0], [0], n)[:, 0]  # (K, 3): the weights at n1 = 0 along the run
    assert w[0, 0] == 0.5 and w[0, 1] == 0.5
    # measured after 2000 steps: (0.09, 0.57, 0.44); the Bayes rule here is (0, 1/2, 1/2): the
    # threshold is uniform between the largest negative and the range end
    assert w[-1, 0] < 0.2, w[-1]                 # the blind head's weight fell from 1/2
    assert w[-1, 1] + w[-1, 2] > 0.9, w[-1]      # to the mirror and the range-end constant
    assert w[-1, 1] > 0.5, w[-1]
    assert res.loss[0, -1] < 0.2 * res.loss[0, 0]


def test_divergence_is_caught_with_a_message():
    cfgs = [RunConfig(m=16, n=8, seed=0, lr=1e9, beta0=20.0, b0=20.0, tau_lo=0.0, tau_hi=1.0)]
    with pytest.raises(TrainingDiverged, match=r"diverged at step \d+ .*lr=1e\+09"):
        TH.train_two_head(cfgs, 50, device="cpu", options=TrainOptions(check_every=1))


def test_weights_of_the_rules():
    N = 10
    n1 = [0, 5, 10]
    W = {k: TH.weights(np.asarray(v), n1, N) for k, v in TH.RULES.items()}
    assert np.allclose(W["one-head"], [[1, 0, 0]] * 3)
    assert np.allclose(W["symmetrized"], [[0.5, 0.5, 0]] * 3)
    assert np.allclose(W["count-weighted"], [[0, 1, 0], [0.5, 0.5, 0], [1, 0, 0]])
    assert np.allclose(W["boundary-aware"], [[0, 0.5, 0.5], [0.5, 0.5, 0], [0.5, 0, 0]])


def test_paired_ratio():
    rng = np.random.default_rng(0)
    a = rng.exponential(size=(200, 1))
    d = rng.exponential(size=200)
    one = TH.paired_ratio(a, d, n_boot=300, seed=4)
    ref = ratio_of_means(a[:, 0], d, n_boot=300, seed=4)  # one corpus: the same draws
    assert one.value == pytest.approx(ref.value, rel=1e-12)
    assert (one.lo, one.hi) == pytest.approx((ref.lo, ref.hi), rel=1e-12)
    same = TH.paired_ratio(np.c_[d, d], d, n_boot=100)
    assert same.value == pytest.approx(1.0) and same.lo == pytest.approx(1.0) and same.hi == pytest.approx(1.0)
    # a corpus effect the contexts cannot see: resampling corpora widens the interval
    b = np.c_[a[:, 0], 3 * a[:, 0]]
    both = TH.paired_ratio(b, d, n_boot=400, seed=1)
    pooled = ratio_of_means(b.mean(1), d, n_boot=400, seed=1)
    assert both.value == pytest.approx(pooled.value, rel=1e-12)
    assert both.width > 2 * pooled.width


def test_paired_ratio_covers_at_three_corpora():
    # R = 3 corpora whose means differ (sd 0.3 around 1) seen through 200 shared contexts: the
    # 95% interval must hold the true ratio 1 in about 95% of draws: measured 92% (the percentile
    # bootstrap without the correction: 71%); 300 seeded draws, Monte Carlo error about 1.5%
    rng = np.random.default_rng(1)
    hits = 0
    for k in range(300):
        mu = 1 + 0.3 * rng.standard_normal(3)
        ctx = rng.exponential(size=(200, 1))
        a = ctx * mu
        d = rng.exponential(size=200) * 0 + ctx[:, 0]  # the same contexts: ratio mean(mu)
        e = TH.paired_ratio(a, d, n_boot=200, seed=k)
        hits += e.lo <= 1.0 <= e.hi
    assert 0.90 <= hits / 300 <= 0.995


def test_evaluation_helpers_against_direct_computation():
    """sq_errors, rule_sq_errors and profile_summary against the literal estimates, model by model
    (the same operations in another order: rounding only, 1e-15 on numbers <= 1)."""
    x, y, tau = _contexts(C=80, N=10, seed=8)
    g = torch.Generator().manual_seed(9)
    H = 10 + 20 * torch.rand(3, 4, generator=g, dtype=D)
    A = torch.randn(3, 3, 4, generator=g, dtype=D)
    got = TH.sq_errors(x, y, tau, H, A)
    assert got.shape == (80, 3)
    for r in range(3):
        ref = ((TH.estimate(x, y, H[r], A[r]) - tau) ** 2).numpy()
        assert np.allclose(got[:, r], ref, rtol=0, atol=1e-15)
    shared = TH.sq_errors(x, y, tau, H, TH.rule("symmetrized"))  # one A for every model
    assert np.allclose(shared[:, 1], ((TH.estimate(x, y, H[1], TH.rule("symmetrized")) - tau) ** 2).numpy())
    rules = TH.rule_sq_errors(x, y, tau, H[:, :2].numpy(), ("one-head", "Bayes"))
    for r in range(3):
        ref = B.estimate_all(x, y, float(H[r, 0]), float(H[r, 1]), ("one-head",))["one-head"]
        assert np.array_equal(rules["one-head"][:, r], ((ref - tau) ** 2).numpy())
    assert np.array_equal(rules["Bayes"][:, 0], rules["Bayes"][:, 2])  # Bayes needs no head
    # profiles: the mean over models of each model's MSE, and the interior MSE per context
    xs = _contexts(C=60, N=8, seed=10)[0]
    grid = torch.tensor([0.0, 0.1, 0.3, 0.5, 0.7, 0.95, 1.0], dtype=D)
    mse, inner = TH.profile_summary(xs, grid, H[:, :2].numpy(), H, A, ["one-head"], (0.2, 0.8))
    e_two = [TH.profile_errors(xs, grid, H[r], A[r])["two-head"] for r in range(3)]
    e_one = [B.profile_errors(xs, grid, float(H[r, 0]), float(H[r, 1]), ("one-head",))["one-head"]
             for r in range(3)]
    for name, es in (("two-head", e_two), ("one-head", e_one)):
        sq = torch.stack(es) ** 2  # (R, T, C)
        assert np.allclose(mse[name], sq.mean((0, 2)).numpy(), rtol=1e-13, atol=0)
        assert np.allclose(inner[name], sq[:, 2:5].mean(1).T.numpy(), rtol=1e-13, atol=0)


def test_padded_batch_equals_each_corpus_alone(monkeypatch):
    """Corpora of different shapes padded into one batch (masks): each run's loss and gradient are
    those of its corpus alone (padding carries no weight; the same sums, 1e-13 relative)."""
    cfgs = [RunConfig(m=12, n=9, seed=0, tau_lo=0.0, tau_hi=1.0),
            RunConfig(m=7, n=14, seed=1, tau_lo=0.0, tau_hi=1.0)]
    corp = make_corpora(cfgs, "cpu")
    assert corp["mask"].shape == (2, 12, 14) and not bool(corp["mask"].all())
    g = torch.Generator().manual_seed(12)
    H = 15 + 10 * torch.rand(2, 4, generator=g, dtype=D)
    A = torch.randn(2, 3, 4, generator=g, dtype=D)
    L, gH, gA = TH.loss_and_grad(corp, H, A)
    for r, c in enumerate(cfgs):
        one = {"tau": corp["tau"][r:r + 1, :c.m], "x": corp["x"][r:r + 1, :c.m, :c.n],
               "y": corp["y"][r:r + 1, :c.m, :c.n]}
        L1, gH1, gA1 = TH.loss_and_grad(one, H[r:r + 1], A[r:r + 1])
        assert torch.allclose(L[r], L1[0], rtol=1e-13)
        assert torch.allclose(gH[r], gH1[0], rtol=1e-12, atol=1e-15)
        assert torch.allclose(gA[r], gA1[0], rtol=1e-12, atol=1e-15)
    # processed run by run (chunks of one run): the same numbers
    step_all = TH.combination_step(corp, H)
    monkeypatch.setattr(TH, "CHUNK_ELEMENTS", 1)
    assert len(TH._chunks(corp["x"])) == 2
    for a, b in zip(TH.loss_and_grad(corp, H, A), (L, gH, gA)):
        assert torch.allclose(a, b, rtol=1e-14, atol=0)
    assert torch.allclose(TH.combination_step(corp, H), step_all, rtol=1e-13)
