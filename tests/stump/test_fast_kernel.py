"""The trainer's fast kernel (stumplib.stump.fast_kernel): against the model's definition on
corpora with empty groups, single examples and ties, the tail of dropped columns, the expansion
about per-run anchors, and CUDA against the CPU."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import stumplib.stump.fast_kernel as fast_kernel
from stumplib.stump.model import estimate_and_grad
from stumplib.stump.trainer import RunConfig, corpus_loss_and_grad, make_corpora, train_gd
from stumplib.stump import TrainOptions

HAS_CUDA = torch.cuda.is_available()


# --------------------------------------------------------------------------------------------
# against the model (issue 12)
# --------------------------------------------------------------------------------------------
def _model_loss_and_grad(corp, beta, b):
    """Each run's loss and gradient through ``stumplib.stump.model.estimate_and_grad`` (the definition)."""
    f, dfb, dfbb = estimate_and_grad(corp["x"], corp["y"], beta[:, None], b[:, None], mask=corp["mask"])
    tm = corp["task_mask"].to(f.dtype)
    m = tm.sum(-1)
    e = (f - corp["tau"]) * tm
    return (e * e).sum(-1) / m, 2 * (e * dfb).sum(-1) / m, 2 * (e * dfbb).sum(-1) / m


def _one_sided_corpora():
    """Padded corpora with mixed group sizes: sizes 1 to 97, tasks with no positive or no negative
    example, one with a single example, and duplicated x values."""
    cfgs = [RunConfig(m=9, n=97, seed=1), RunConfig(m=5, n=3, seed=2), RunConfig(m=13, n=40, seed=3,
                                                                               tau_lo=0.0, tau_hi=1.0)]
    corp = make_corpora(cfgs, device="cpu")
    x, y, mask = corp["x"], corp["y"], corp["mask"]
    x[0, 0] = torch.linspace(0.0, 0.5, x.shape[-1], dtype=x.dtype)  # task 0 of run 0: all positive
    y[0, 0] = 1.0
    corp["tau"][0, 0] = 0.0
    y[0, 1] = 0.0  # task 1: all negative
    corp["tau"][0, 1] = 1.0
    mask[1, 0] = False  # run 1, task 0: a single (negative) example
    mask[1, 0, 0] = True
    y[1, 0] = 0.0
    x[2, 2, 10:20] = x[2, 2, 3]  # ties
    y[2, 2, 10:20] = y[2, 2, 3]
    return corp


@pytest.mark.parametrize("beta, b", [(20.0, 20.0), (0.3, -2.0), (150.0, 125.0), (1000.0, 800.0),
                                     (1000.0, 0.0), (20000.0, 800.0), (5.0, 800.0), (-4.0, 1.0),
                                     (-300.0, 100.0)])
def test_fast_kernel_equals_the_model(beta, b):
    """Loss and gradient of the fast kernel (all columns, and the tail-dropping choice of the
    training loop) against ``model.estimate_and_grad``, to 1e-10 of each run's largest term."""
    corp = _one_sided_corpora()
    R = corp["x"].shape[0]
    be = torch.full((R,), beta, dtype=torch.float64) * torch.tensor([1.0, 1.1, 0.9], dtype=torch.float64)
    bb = torch.full((R,), b, dtype=torch.float64)
    ref = _model_loss_and_grad(corp, be, bb)
    got = corpus_loss_and_grad(be, bb, corp)
    lay = fast_kernel.padded_layout(corp)
    fast_kernel._choose_columns(lay, be, torch.ones(R, dtype=torch.bool))
    dropped = fast_kernel._grad(lay, be, bb)
    if beta >= 1000:
        assert lay["dx_k"].shape[-1] < lay["dx"].shape[-1]  # the tail is really dropped there
    # each run's scale: its largest output; terms far below it (an exponentially small Cov_w(x, y)
    # when one label group holds all the weight) are rounding residues in the model's two-pass sums
    scale = torch.stack([r.abs() for r in ref]).amax(0)
    assert bool((scale > 0).all())
    for a, c, r in zip(got, dropped, ref):
        for v in (a, c):
            assert bool(((v - r).abs() <= 1e-10 * r.abs() + 1e-13 * scale).all()), (beta, b, v, r)


def test_fast_kernel_mixed_signs_and_group_sizes_in_one_batch():
    """Runs with beta > 0 (fast kernel) and beta <= 0 (the model's path) in one call."""
    corp = _one_sided_corpora()
    be = torch.tensor([30.0, -7.0, 0.0], dtype=torch.float64)
    bb = torch.tensor([25.0, 3.0, -1.0], dtype=torch.float64)
    ref = _model_loss_and_grad(corp, be, bb)
    scale = torch.stack([r.abs() for r in ref]).amax(0)
    for a, r in zip(corpus_loss_and_grad(be, bb, corp), ref):
        assert bool(((a - r).abs() <= 1e-10 * r.abs() + 1e-13 * scale).all()), (a, r)


def test_dropping_the_tail_changes_nothing(monkeypatch):
    """At large beta the trainer keeps a few columns; with every column the numbers agree."""
    cfgs = [RunConfig(64, 256, seed=s, lr=1e6, beta0=2000.0, b0=1700.0) for s in range(2)]
    short = train_gd(cfgs, 60, device="cpu", progress=False, options=TrainOptions(n_records=8))
    monkeypatch.setattr(fast_kernel, "TAIL_EXPONENT", float("inf"))
    full = train_gd(cfgs, 60, device="cpu", progress=False, options=TrainOptions(n_records=8))
    np.testing.assert_allclose(short.beta, full.beta, rtol=1e-13)
    np.testing.assert_allclose(short.b, full.b, rtol=1e-13)
    np.testing.assert_allclose(short.loss, full.loss, rtol=1e-12)


def test_a_falling_scale_renews_the_kept_columns():
    """Columns chosen at a large beta; a later step at a much smaller beta must see all it needs."""
    corp = _one_sided_corpora()
    R, N = corp["x"].shape[0], corp["x"].shape[-1]
    lay = fast_kernel.padded_layout(corp)
    keep = torch.ones(R, dtype=torch.bool)
    hi = torch.full((R,), 3000.0, dtype=torch.float64)
    lay["floor"] = None  # a fresh choice
    fast_kernel.group_grad(lay, hi, 0.8 * hi, keep)
    width = lay["dx_k"].shape[-1]
    assert width < N
    lo = torch.full((R,), 40.0, dtype=torch.float64)
    got = fast_kernel.group_grad(lay, lo, 0.8 * lo, keep)  # below the floor: chosen again
    assert lay["dx_k"].shape[-1] > width
    ref = _model_loss_and_grad(corp, lo, 0.8 * lo)
    for a, r in zip(got, ref):
        np.testing.assert_allclose(a.numpy(), r.numpy(), rtol=1e-10)


# --------------------------------------------------------------------------------------------
# the expansion about per-run anchors (the training loop's group sums)
# --------------------------------------------------------------------------------------------
def _direct_instead(monkeypatch):
    """Make the training loop compute every step's sums directly (one exp pass)."""
    monkeypatch.setattr(fast_kernel, "_series_sums",
                        lambda lay, beta: fast_kernel._direct_sums(lay["dx_k"], lay["feat_k"], beta))


@pytest.mark.parametrize("delta", [0.0, 1e-9, 0.37, -0.6, 1.0, -1.0])
def test_series_sums_equal_the_direct_sums_within_the_radius(delta):
    """On corpora with empty groups, single examples and ties (padded layout), the six group sums
    from an anchor equal the direct ones to 1e-14 relative anywhere within the radius."""
    corp = _one_sided_corpora()
    lay = fast_kernel.padded_layout(corp)
    R = corp["x"].shape[0]
    fast_kernel._all_columns(lay)
    a = torch.tensor([20.0, 3.0, 150.0], dtype=torch.float64)
    lay["series"] = None
    fast_kernel._series_sums(lay, a)  # anchors every run (ahead of a by the radius: no motion yet -> at a)
    assert torch.equal(lay["series"]["ref"], a)
    beta = a + delta / lay["series"]["dmax"]
    got = fast_kernel._series_sums(lay, beta)
    ref = fast_kernel._direct_sums(lay["dx_k"], lay["feat_k"], beta)
    assert bool((lay["series"]["ref"] == a).all())  # still the same anchors: the expansion was used
    scale = ref.abs().clamp_min(1e-300)
    assert float(((got - ref).abs() / scale)[ref != 0].max()) < 1e-14
    assert bool((got[ref == 0] == 0).all())  # empty groups stay exactly empty


def test_series_trajectories_equal_the_direct_ones(monkeypatch):
    """3000 steps from the default start, a larger step (lr 4e3; early on, where steps fall back to the direct
    sums while beta moves fast) and a schedule with a stop: parameters equal to the direct kernel's
    to 1e-13, stop steps identical."""
    cfgs = [RunConfig(64, 128, seed=0), RunConfig(64, 128, seed=1, lr=4e3),
            RunConfig(64, 128, seed=2, lr_marks=((30.0, 3e3), (45.0, 1e4)), beta_stop=70.0)]
    calls = {"anchor": 0, "direct": 0}
    anchor, direct = fast_kernel._anchor_moments, fast_kernel._direct_sums

    def count_anchor(dx, *a):
        calls["anchor"] += 1
        return anchor(dx, *a)

    def count_direct(dx, *a):
        calls["direct"] += 1
        return direct(dx, *a)

    monkeypatch.setattr(fast_kernel, "_anchor_moments", count_anchor)
    monkeypatch.setattr(fast_kernel, "_direct_sums", count_direct)
    ser = train_gd(cfgs, 3000, device="cpu", progress=False, options=TrainOptions(n_records=30))
    assert 0 < calls["anchor"] < 300 and calls["direct"] > 0  # both paths were exercised, few anchors
    monkeypatch.setattr(fast_kernel, "_direct_sums", direct)
    _direct_instead(monkeypatch)
    ref = train_gd(cfgs, 3000, device="cpu", progress=False, options=TrainOptions(n_records=30))
    np.testing.assert_allclose(ser.beta, ref.beta, rtol=1e-13)
    np.testing.assert_allclose(ser.b, ref.b, rtol=1e-13)
    np.testing.assert_allclose(ser.loss, ref.loss, rtol=1e-11)
    np.testing.assert_array_equal(ser.stop_step, ref.stop_step)
    assert ser.stop_step[2] > 0


def test_series_batch_equals_runs_one_by_one_exactly():
    """Anchors are placed per run (own distance and speed), so a batch of runs large enough for the
    expansion gives the same bits as each run alone."""
    cfgs = [RunConfig(64, 96, seed=s, lr=lr) for s, lr in [(0, 1e3), (1, 3e3), (2, 4e3)]]
    batch = train_gd(cfgs, 400, device="cpu", progress=False, options=TrainOptions(n_records=10))
    for r, c in enumerate(cfgs):
        one = train_gd([c], 400, device="cpu", progress=False, options=TrainOptions(n_records=10))
        np.testing.assert_array_equal(one.beta[0], batch.beta[r])
        np.testing.assert_array_equal(one.b[0], batch.b[r])


@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device on this machine")
def test_cuda_fast_kernel_matches_cpu():
    """Default start, a large-scale start (tail dropped), a stop scale and a padded batch."""
    cfgs = [RunConfig(128, 128, seed=s, lr=1e3) for s in range(2)]
    cfgs += [RunConfig(64, 256, seed=5, lr=1e6, beta0=2000.0, b0=1700.0, beta_stop=2000.5),
             RunConfig(64, 256, seed=6, lr=1e6, beta0=2000.0, b0=1700.0)]
    for grouping in ("shape", "pad"):
        cpu = train_gd(cfgs, 100, device="cpu", progress=False,
                       options=TrainOptions(grouping=grouping))
        gpu = train_gd(cfgs, 100, device="cuda", progress=False,
                       options=TrainOptions(grouping=grouping))
        np.testing.assert_allclose(gpu.beta, cpu.beta, rtol=1e-10)
        np.testing.assert_allclose(gpu.b, cpu.b, rtol=1e-10)
        np.testing.assert_allclose(gpu.loss, cpu.loss, rtol=1e-10)
        np.testing.assert_array_equal(gpu.stop_step, cpu.stop_step)
    corp = _one_sided_corpora()
    be = torch.tensor([1000.0, -5.0, 20.0], dtype=torch.float64)
    bb = torch.tensor([800.0, 1.0, 20.0], dtype=torch.float64)
    ref = corpus_loss_and_grad(be, bb, corp)
    corp_gpu = {k: v.cuda() for k, v in corp.items() if not k.startswith("_")}  # not the CPU layout
    for a, r in zip(corpus_loss_and_grad(be.cuda(), bb.cuda(), corp_gpu), ref):
        np.testing.assert_allclose(a.cpu().numpy(), r.numpy(), rtol=1e-10, atol=1e-300)
