"""The batched GD trainer: exact gradients, batching, determinism, against the trainer it
replaced, stop scales, step schedules, divergence. (The fast kernel's own tests are in
``test_fast_kernel.py``, the general corpus gradient's in ``test_corpus_grad.py``; results are
cached by :func:`stumplib.book.cached`, tested in ``tests/book/test_cache.py``.)"""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

from stumplib.stump.corpus_grad import corpus_grad
from stumplib.stump.model import estimate
from stumplib.stump.tasks import sample_tasks
from stumplib.stump.trainer import (RunConfig, TrainingDiverged, corpus_loss_and_grad,
                                    make_corpora, record_steps, train_gd)

from conftest import ROOT
from stumplib.stump import TrainOptions

HAS_CUDA = torch.cuda.is_available()


def _bench():
    """``scripts/bench_trainer.py``, which keeps the trainer this one replaced (the one copy)."""
    spec = importlib.util.spec_from_file_location("bench_trainer", ROOT / "scripts" / "bench_trainer.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _autograd_loss(cfg: RunConfig, beta: float, b: float):
    tau, x, y = sample_tasks(cfg.m, cfg.n, cfg.prior, seed=cfg.seed, device="cpu")
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


def test_batch_equals_runs_one_by_one_exactly():
    cfgs = [RunConfig(m=16, n=16, seed=s, lr=lr) for s, lr in [(0, 3e2), (1, 1e2), (2, 3e2)]]
    cfgs += [RunConfig(m=12, n=20, seed=4, beta0=30.0, b0=30.0, lr=3e2)]
    batch = train_gd(cfgs, 300, device="cpu", progress=False, options=TrainOptions(n_records=12))
    for r, c in enumerate(cfgs):
        one = train_gd([c], 300, device="cpu", progress=False, options=TrainOptions(n_records=12))
        np.testing.assert_array_equal(one.beta[0], batch.beta[r])
        np.testing.assert_array_equal(one.b[0], batch.b[r])
        np.testing.assert_array_equal(one.loss[0], batch.loss[r])
    # one padded batch (masks) gives the same trajectories up to summation order
    pad = train_gd(cfgs, 300, device="cpu", progress=False,
                   options=TrainOptions(n_records=12, grouping="pad"))
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
        train_gd([RunConfig(m=8, n=8, seed=0, lr=1e2), RunConfig(m=8, n=8, seed=1, lr=1e7)],
                 2000, device="cpu", progress=False, options=TrainOptions(check_every=16))


def test_on_diverge_stop_freezes_only_the_bad_run():
    good, bad = RunConfig(m=8, n=8, seed=0, lr=1e2), RunConfig(m=8, n=8, seed=1, lr=1e7)
    res = train_gd([good, bad], 500, device="cpu", progress=False,
                   options=TrainOptions(check_every=8, on_diverge="stop"))
    assert res.diverged_at[0] == -1 and res.diverged_at[1] > 0
    assert np.isnan(res.beta[1, -1]) and np.isfinite(res.beta[0, -1])
    solo = train_gd([good], 500, device="cpu", progress=False, options=TrainOptions(check_every=8))
    np.testing.assert_array_equal(solo.beta[0], res.beta[0])


def test_record_steps_are_log_spaced_and_include_ends():
    s = record_steps(10_000, 30)
    assert s[0] == 0 and s[-1] == 10_000 and np.all(np.diff(s) > 0)
    r = s[2:] / s[1:-1]
    assert r.max() < 2.5
    np.testing.assert_array_equal(record_steps(7, 2), [0, 7])  # the last step is always recorded


@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device on this machine")
def test_tiny_cuda_run_matches_cpu():
    cfgs = [RunConfig(m=16, n=16, seed=s, lr=1e2) for s in range(2)]
    cpu = train_gd(cfgs, 100, device="cpu", progress=False)
    gpu = train_gd(cfgs, 100, device="cuda", progress=False)
    np.testing.assert_allclose(gpu.beta, cpu.beta, rtol=1e-10)
    np.testing.assert_allclose(gpu.loss, cpu.loss, rtol=1e-9)


# --------------------------------------------------------------------------------------------
# against the trainer it replaced (issue 12)
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("m, n, lr, beta0, b0", [(64, 48, 1e3, 20.0, 20.0), (40, 200, 1e3, 20.0, 20.0),
                                                 (32, 64, 3e4, 300.0, 250.0), (16, 128, 1e6, 3000.0, 2500.0)])
def test_parameters_after_100_steps_equal_the_replaced_trainer(m, n, lr, beta0, b0):
    """The default start (and two large-scale starts, where the tail is dropped): same parameters
    after 100 steps as the trainer before issue 12, to 1e-12 relative."""
    cfgs = [RunConfig(m, n, seed=s, lr=lr, beta0=beta0, b0=b0) for s in range(3)]
    res = train_gd(cfgs, 100, device="cpu", progress=False, options=TrainOptions(n_records=2))
    final, L = _bench().replaced_train(cfgs, 100, torch.device("cpu"), with_loss=True)
    np.testing.assert_allclose(res.final_beta, final[:, 0].numpy(), rtol=1e-12, atol=0)
    np.testing.assert_allclose(res.final_b, final[:, 1].numpy(), rtol=1e-12, atol=0)
    np.testing.assert_allclose(res.loss[:, -1], L.numpy(), rtol=1e-11, atol=0)


# --------------------------------------------------------------------------------------------
# per-run stop scales, chaining, starts
# --------------------------------------------------------------------------------------------
def test_stop_scale_freezes_at_the_first_step_past_it():
    steps = 40
    base = [RunConfig(24, 24, seed=s, lr=3e2) for s in range(3)]
    free = train_gd(base, steps, device="cpu", progress=False, options=TrainOptions(n_records=400))
    np.testing.assert_array_equal(free.steps, np.arange(steps + 1))  # every step is recorded
    assert np.all(np.diff(free.beta[1]) > 0)
    k = 17
    stop = float(free.beta[1, k]) - 1e-9  # just below the value reached at step k
    cfgs = [base[0], RunConfig(24, 24, seed=1, lr=3e2, beta_stop=stop), base[2]]
    res = train_gd(cfgs, steps, device="cpu", progress=False, options=TrainOptions(n_records=400))
    assert res.stop_step.tolist() == [-1, k, -1]
    first = int(np.argmax(free.beta[1] >= stop))
    assert first == k
    np.testing.assert_array_equal(res.beta[1, :k + 1], free.beta[1, :k + 1])
    assert np.all(res.beta[1, k:] == free.beta[1, k]) and np.all(res.b[1, k:] == free.b[1, k])
    assert np.all(res.loss[1, k:] == free.loss[1, k])  # the frozen values are recorded from then on
    assert res.final_beta[1] == free.beta[1, k]
    # the other runs of the batch carry on, unchanged
    np.testing.assert_array_equal(res.beta[[0, 2]], free.beta[[0, 2]])


def test_stop_scale_at_or_below_the_start_stops_at_step_0():
    res = train_gd([RunConfig(8, 8, seed=0, lr=1e2, beta_stop=20.0)], 30, device="cpu",
                   progress=False)
    assert res.stop_step[0] == 0 and np.all(res.beta[0] == 20.0)


def test_chained_runs_continue_from_the_frozen_parameters():
    """Train to a stop scale, restart from the frozen (beta, b) with another step size: the same
    numbers as one run that changes its step size at that step."""
    first = train_gd([RunConfig(32, 32, seed=4, lr=3e3, beta_stop=24.0)], 500, device="cpu",
                     progress=False)
    k = int(first.stop_step[0])
    assert k > 0
    again = train_gd([RunConfig(32, 32, seed=4, lr=1e3, beta0=float(first.final_beta[0]),
                                b0=float(first.final_b[0]))],
                     50, device="cpu", progress=False)
    replaced, cpu = _bench().replaced_train, torch.device("cpu")
    beta, b = replaced([RunConfig(32, 32, seed=4, lr=3e3)], k, cpu)[0].tolist()
    np.testing.assert_allclose(first.final_beta, [beta], rtol=1e-12)
    beta2, b2 = replaced([RunConfig(32, 32, seed=4, lr=1e3, beta0=beta, b0=b)], 50, cpu)[0].tolist()
    np.testing.assert_allclose(again.final_beta, [beta2], rtol=1e-12)
    np.testing.assert_allclose(again.final_b, [b2], rtol=1e-12)


def test_step_sizes_and_starts_are_per_run():
    cfgs = [RunConfig(16, 16, seed=0, lr=1e2), RunConfig(16, 16, seed=0, lr=3e2, beta0=30.0, b0=25.0)]
    res = train_gd(cfgs, 50, device="cpu", progress=False)
    for r, c in enumerate(cfgs):
        one = train_gd([c], 50, device="cpu", progress=False)
        np.testing.assert_array_equal(one.beta[0], res.beta[r])
    assert res.beta[1, 0] == 30.0 and res.b[1, 0] == 25.0


# --------------------------------------------------------------------------------------------
# divergence through the parameters
# --------------------------------------------------------------------------------------------
def test_huge_step_is_caught_through_the_parameters():
    """lr = 1e12 throws beta to about -3e8 in one step while the loss stays bounded."""
    with pytest.raises(TrainingDiverged) as info:
        train_gd([RunConfig(m=4, n=4, seed=0, lr=1e12)], 100, device="cpu", progress=False)
    msg = str(info.value)
    for part in ("run 0", "m=4", "n=4", "seed=0", "lr=1e+12", "step 1"):
        assert part in msg, msg


def test_sign_flip_is_divergence_and_stop_mode_freezes_it():
    good, bad = RunConfig(m=4, n=4, seed=0, lr=1e2), RunConfig(m=4, n=4, seed=0, lr=1e12)
    res = train_gd([good, bad], 20, device="cpu", progress=False,
                   options=TrainOptions(on_diverge="stop", check_every=1))
    assert res.diverged_at.tolist() == [-1, 1]
    assert np.isnan(res.beta[1, 1:]).all() and np.isfinite(res.beta[0]).all()


# --------------------------------------------------------------------------------------------
# step schedules keyed on beta (lr_marks) and record scales
# --------------------------------------------------------------------------------------------
def _replay_schedule(cfg, steps):
    """GD by hand with corpus_grad and cfg.lr_marks: (beta_t, b_t) for t = 0..steps and the mark steps."""
    tau, x, y = sample_tasks(cfg.m, cfg.n, cfg.prior, seed=cfg.seed, device="cpu")
    beta, b, lr = torch.tensor([cfg.beta0]), torch.tensor([cfg.b0]), cfg.lr
    marks, j, hist, at = cfg.lr_marks, 0, [], []
    for t in range(steps + 1):
        while j < len(marks) and float(beta) >= marks[j][0]:
            lr, j = marks[j][1], j + 1
            at.append(t)
        hist.append((float(beta), float(b)))
        _, gb, gbb = corpus_grad(x[None], y[None], tau[None], beta, b)
        beta, b = beta - lr * gb, b - lr * gbb
    return np.array(hist), at


def test_lr_marks_switch_the_step_at_the_first_step_past_each_mark():
    marks = ((21.0, 4e2), (23.0, 1.5e2), (24.0, 5e2))  # stable steps: beta grows monotonically
    cfgs = [RunConfig(32, 32, seed=2, lr=2e2, lr_marks=marks),
            RunConfig(32, 32, seed=3, lr=1.5e2, lr_marks=[[22.0, 3e2]]),  # a list is stored as tuples
            RunConfig(32, 32, seed=4, lr=2e2)]  # no schedule: padded with -1 / NaN
    steps = 200
    res = train_gd(cfgs, steps, device="cpu", progress=False,
                   options=TrainOptions(n_records=10 * steps))
    np.testing.assert_array_equal(res.steps, np.arange(steps + 1))  # every step is recorded
    assert cfgs[1].lr_marks == ((22.0, 300.0),)
    assert np.all(np.diff(res.beta[:2]) > 0) and np.all(res.mark_step[0] > 0)
    assert res.mark_step.shape == (3, 3) and res.scale_step is None
    for r in range(2):
        hist, at = _replay_schedule(cfgs[r], steps)
        np.testing.assert_allclose(res.beta[r], hist[:, 0], rtol=1e-12)
        np.testing.assert_allclose(res.b[r], hist[:, 1], rtol=1e-12)
        J = len(cfgs[r].lr_marks)
        assert res.mark_step[r, :J].tolist() == at and len(at) == J
        for j, t in enumerate(at):  # the first step at or past the mark, and the parameters there
            assert res.beta[r, t] >= cfgs[r].lr_marks[j][0] > res.beta[r, t - 1]
            assert res.mark_beta[r, j] == res.beta[r, t] and res.mark_b[r, j] == res.b[r, t]
        assert np.all(res.mark_step[r, J:] == -1) and np.isnan(res.mark_beta[r, J:]).all()
    assert np.all(res.mark_step[2] == -1) and np.isnan(res.mark_b[2]).all()
    # the run without marks is the same as on its own, and a mark that keeps the step changes nothing
    alone = train_gd([cfgs[2]], steps, device="cpu", progress=False,
                     options=TrainOptions(n_records=10 * steps))
    np.testing.assert_array_equal(res.beta[2], alone.beta[0])
    same = train_gd([RunConfig(32, 32, seed=4, lr=2e2, lr_marks=((21.0, 2e2),), record_scales=(20.5, 24.0))],
                    steps, device="cpu", progress=False,
                    options=TrainOptions(n_records=10 * steps))
    np.testing.assert_array_equal(same.beta[0], alone.beta[0])
    t = int(same.scale_step[0, 1])
    assert same.beta[0, t] >= 24.0 > same.beta[0, t - 1] and same.scale_b[0, 1] == same.b[0, t]


def test_marks_and_stop_end_the_loop_once_every_run_has_stopped():
    cfgs = [RunConfig(32, 32, seed=s, lr=3e2, beta_stop=24.0, lr_marks=((22.0, 6e2), (24.0, 1.0)),
                      record_scales=(21.0, 23.0, 24.0, 99.0)) for s in range(2)]
    res = train_gd(cfgs, 5000, device="cpu", progress=False)
    assert res.last_step == res.stop_step.max() < 5000
    np.testing.assert_array_equal(res.mark_step[:, 1], res.stop_step)  # the mark at the stop scale
    np.testing.assert_array_equal(res.scale_step[:, 2], res.stop_step)
    assert np.all(res.scale_step[:, 3] == -1)  # beyond the stop: never reached
    np.testing.assert_array_equal(res.final_beta, res.mark_beta[:, 1])
    assert np.all(res.beta[:, -1] == res.beta[:, -2])  # later records repeat the frozen values
