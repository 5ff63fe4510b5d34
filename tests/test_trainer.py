"""The batched GD trainer: exact gradients, batching, determinism, divergence, caching."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from stumplib.model import estimate
from stumplib.tasks import sample_tasks
from stumplib.trainer import (RunConfig, TrainingDiverged, TrainResult, _moments, corpus_loss_and_grad,
                              make_corpora, record_steps, train_gd)

HAS_CUDA = torch.cuda.is_available()


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """One intra-op thread: small tensors gain nothing from two, and on a shared machine the
    spinning of idle threads slows them down ten-fold."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def _autograd_loss(cfg: RunConfig, beta: float, b: float):
    tau, x, y = sample_tasks(cfg.m, cfg.n, cfg.tau_lo, cfg.tau_hi, seed=cfg.seed, device="cpu")
    p = torch.tensor([beta, b], requires_grad=True)
    f = estimate(x, y, p[0], p[1])
    L = ((f - tau) ** 2).mean()
    L.backward()
    return L.detach(), p.grad


@pytest.mark.parametrize("beta, b", [(3.0, 2.0), (20.0, 20.0), (150.0, 125.0), (2000.0, 1650.0)])
def test_analytic_gradient_equals_autograd_on_padded_corpora(beta, b):
    cfgs = [RunConfig(m=7, n=11, seed=0), RunConfig(m=5, n=4, seed=3), RunConfig(m=9, n=13, seed=5)]
    corp = make_corpora(cfgs, device="cpu")
    R = len(cfgs)
    L, gb, gbb = corpus_loss_and_grad(torch.full((R,), beta), torch.full((R,), b), corp)
    ref = [_autograd_loss(c, beta, b) for c in cfgs]
    # autograd differentiates the softmax without centring, so it is the one that loses digits at
    # large beta (about 1e-8 of the largest gradient at beta = 2000); the analytic gradient is centred
    tol = 1e-10 if beta < 200 else 1e-6
    scale = max(float(ga.abs().max()) for _, ga in ref)
    for r, (La, ga) in enumerate(ref):
        torch.testing.assert_close(L[r], La, rtol=1e-12, atol=1e-300)
        assert abs(gb[r] - ga[0]) <= tol * scale
        assert abs(gbb[r] - ga[1]) <= tol * scale


def test_fused_moments_match_centred_reference_at_large_beta():
    """The fused kernel keeps full float64 accuracy at beta = 1e4 .. 1e6 (no cancellation)."""
    from stumplib.model import _estimate_and_grad
    tau, x, y = sample_tasks(64, 50, seed=1, device="cpu")
    for beta in (1e4, 1e5, 1e6):
        be = torch.full((64,), beta)
        bb = be * 0.8 + 3.0
        ref = _estimate_and_grad(x, y, be, bb, None)
        got = _moments(x, y, be, bb)
        sd = float(ref[1].abs().max()) ** 0.5  # attention spread, ~1/beta: the scale of f's errors
        torch.testing.assert_close(got[0], ref[0], rtol=1e-14, atol=0.0)
        torch.testing.assert_close(got[1], ref[1], rtol=1e-9, atol=0.0)
        # cov is exponentially small here; both agree to rounding of the spread (the reference,
        # which centres y as well, is the one with the ~1e-33 residues)
        torch.testing.assert_close(got[2], ref[2], rtol=1e-9, atol=1e-15 * sd ** 2)
        # the variance is tiny here (~1/beta^2) and must still be positive and relatively exact
        assert bool((-got[1] >= 0).all())


def test_batch_equals_runs_one_by_one_exactly():
    cfgs = [RunConfig(m=16, n=16, seed=s, lr=lr) for s, lr in [(0, 3e2), (1, 1e2), (2, 3e2)]]
    cfgs += [RunConfig(m=12, n=20, seed=4, beta0=30.0, b0=30.0, lr=3e2)]
    batch = train_gd(cfgs, 300, device="cpu", progress=False, n_records=12)
    for r, c in enumerate(cfgs):
        one = train_gd([c], 300, device="cpu", progress=False, n_records=12)
        np.testing.assert_array_equal(one.beta[0], batch.beta[r])
        np.testing.assert_array_equal(one.b[0], batch.b[r])
        np.testing.assert_array_equal(one.loss[0], batch.loss[r])
    # one padded batch (masks) gives the same trajectories up to summation order
    pad = train_gd(cfgs, 300, device="cpu", progress=False, n_records=12, grouping="pad")
    np.testing.assert_allclose(pad.beta, batch.beta, rtol=1e-12)
    np.testing.assert_allclose(pad.b, batch.b, rtol=1e-12)


def test_same_seeds_same_numbers_and_different_seeds_differ():
    cfgs = [RunConfig(m=10, n=10, seed=s, lr=1e2) for s in range(3)]
    a = train_gd(cfgs, 200, device="cpu", progress=False)
    b = train_gd(cfgs, 200, device="cpu", progress=False)
    np.testing.assert_array_equal(a.beta, b.beta)
    np.testing.assert_array_equal(a.loss, b.loss)
    assert not np.array_equal(a.beta[0], a.beta[1])


def test_gd_decreases_the_loss_and_grows_the_scale():
    res = train_gd([RunConfig(m=64, n=64, seed=0)], 2000, device="cpu", progress=False)
    assert res.loss[0, -1] < 0.5 * res.loss[0, 0]
    assert res.beta[0, -1] > res.beta[0, 0]
    # after calibration the label score sits above the top of the prior
    assert res.b[0, -1] / res.beta[0, -1] > 0.75


def test_diverging_step_size_raises_named_error():
    with pytest.raises(TrainingDiverged, match=r"lr=1e\+07"):
        train_gd([RunConfig(m=8, n=8, seed=0, lr=1e2), RunConfig(m=8, n=8, seed=1, lr=1e7)], 2000,
                 device="cpu", progress=False, check_every=16)


def test_on_diverge_stop_freezes_only_the_bad_run():
    good, bad = RunConfig(m=8, n=8, seed=0, lr=1e2), RunConfig(m=8, n=8, seed=1, lr=1e7)
    res = train_gd([good, bad], 500, device="cpu", progress=False, check_every=8, on_diverge="stop")
    assert res.diverged_at[0] == -1 and res.diverged_at[1] > 0
    assert np.isnan(res.beta[1, -1]) and np.isfinite(res.beta[0, -1])
    solo = train_gd([good], 500, device="cpu", progress=False, check_every=8)
    np.testing.assert_array_equal(solo.beta[0], res.beta[0])


def test_save_load_round_trip_and_mismatch_recomputes(tmp_path):
    cfgs = [RunConfig(m=6, n=6, seed=s, lr=1e2) for s in range(2)]
    res = train_gd(cfgs, 50, device="cpu", progress=False)
    path = tmp_path / "run.npz"
    res.save(path)
    back = TrainResult.load(path, cfgs, steps=50)
    assert back is not None
    np.testing.assert_array_equal(back.beta, res.beta)
    np.testing.assert_array_equal(back.steps, res.steps)
    np.testing.assert_array_equal(back.diverged_at, res.diverged_at)
    assert TrainResult.load(path, cfgs, steps=51) is None
    assert TrainResult.load(path, [RunConfig(m=6, n=6, seed=0), RunConfig(m=6, n=6, seed=1, lr=2e3)]) is None
    assert TrainResult.load(tmp_path / "absent.npz", cfgs) is None


def test_record_steps_are_log_spaced_and_include_ends():
    s = record_steps(10_000, 30)
    assert s[0] == 0 and s[-1] == 10_000 and np.all(np.diff(s) > 0)
    r = s[2:] / s[1:-1]
    assert r.max() < 2.5
    np.testing.assert_array_equal(record_steps(7, 2), [0, 7])  # the last step is always recorded


@pytest.mark.parametrize("kwargs, name", [
    ({"steps": 0}, "steps"), ({"grouping": "rows"}, "grouping"), ({"on_diverge": "ignore"}, "on_diverge"),
    ({"progress": "yes"}, "progress"), ({"device": "tpu"}, "device"), ({"n_records": 1}, "n_records"),
])
def test_train_gd_rejects_bad_arguments(kwargs, name):
    args = {"configs": [RunConfig(m=4, n=4)], "steps": 10, "device": "cpu", "progress": False}
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        train_gd(**args)


@pytest.mark.parametrize("kwargs, name", [({"m": 0}, "m"), ({"n": 2.0}, "n"), ({"lr": -1.0}, "lr"),
                                          ({"beta0": float("nan")}, "beta0"), ({"tau_lo": 0.9}, "tau_lo")])
def test_run_config_rejects_bad_values(kwargs, name):
    args = {"m": 4, "n": 4}
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        RunConfig(**args)


def test_corpus_loss_and_grad_rejects_bad_inputs():
    corp = make_corpora([RunConfig(m=3, n=3)], device="cpu")
    with pytest.raises(ValueError, match="beta"):
        corpus_loss_and_grad(torch.tensor([float("nan")]), torch.tensor([1.0]), corp)
    with pytest.raises(ValueError, match="b must have shape"):
        corpus_loss_and_grad(torch.tensor([1.0]), torch.ones(2), corp)
    with pytest.raises(ValueError, match="corpora"):
        corpus_loss_and_grad(torch.tensor([1.0]), torch.tensor([1.0]), {})


@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device on this machine")
def test_tiny_cuda_run_matches_cpu():
    cfgs = [RunConfig(m=16, n=16, seed=s, lr=1e2) for s in range(2)]
    cpu = train_gd(cfgs, 100, device="cpu", progress=False)
    gpu = train_gd(cfgs, 100, device="cuda", progress=False)
    np.testing.assert_allclose(gpu.beta, cpu.beta, rtol=1e-10)
    np.testing.assert_allclose(gpu.loss, cpu.loss, rtol=1e-9)
