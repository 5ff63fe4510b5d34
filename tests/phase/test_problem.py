"""Tests of stumplib.phase.problem: the data of many seeds, the starts, the overlaps."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from stumplib.core.device import make_generator
from stumplib.phase.data import positional_encodings
from stumplib.phase.problem import initial_points, make_problem, summaries
from stumplib.phase import check_model


def test_initial_points():
    pb = make_problem(20, [0, 1], 5, model=check_model(omega=0.3))
    assert torch.equal(initial_points(pb, "semantic"), pb.q_star)
    assert torch.allclose(initial_points(pb, "positional").norm(dim=1), torch.ones(2, dtype=torch.float64))


def test_random_start_is_standard_normal_over_d_and_seeded():
    """``"random"``: ``Q ~ N(0, I_d / d)`` per seed. The 2 x 400 entries of ``sqrt(d) Q`` have
    mean 0 and variance 1 within five standard errors (``5 / sqrt(800) = 0.18`` for the mean,
    ``5 sqrt(2 / 800) = 0.25`` for the variance); the same generator seed gives the same start."""
    pb = make_problem(400, [0, 1], 5, model=check_model(omega=0.3))
    gen = lambda k: make_generator(k, torch.device("cpu"))  # noqa: E731
    Q = initial_points(pb, "random", generator=gen(0))
    z = (Q * 20.0).ravel()
    assert Q.shape == (2, 400) and Q.dtype == torch.float64
    assert abs(float(z.mean())) < 0.18 and abs(float(z.var()) - 1) < 0.25
    assert torch.equal(Q, initial_points(pb, "random", generator=gen(0)))
    assert not torch.equal(Q, initial_points(pb, "random", generator=gen(1)))
    with pytest.raises(ValueError, match="generator"):
        initial_points(pb, "random")


def test_problem_holds_the_gram_matrices_of_its_tokens_and_keeps_its_first_seeds():
    pb = make_problem(12, [0, 1, 2], 7, model=check_model(omega=0.2))
    assert pb.X.shape == (3, 7, 2, 12) and pb.q_star.shape == (3, 12)
    torch.testing.assert_close(pb.Gxx, pb.X @ pb.X.transpose(-1, -2), rtol=0, atol=0)
    one = pb.first(1)
    assert one.q_star.shape == (1, 12) and torch.equal(one.Gxz, pb.Gxz[:1]) and one.omega == 0.2
    # a seed's data do not depend on the others
    again = make_problem(12, [1], 7, model=check_model(omega=0.2))
    assert torch.equal(again.q_star[0], pb.q_star[1]) and torch.equal(again.X[0], pb.X[1])


def test_summaries_are_the_overlaps_of_a_constructed_student():
    """``Q = 2 q + 3 p_1`` with ``q`` a teacher made orthogonal to ``p_1`` (``|p_1| = 1``):
    ``m = 3 / sqrt(d)``, ``theta_emp = 2 |q|^2 / d``, ``q_emp = sigma^2 |Q|^2 / d``."""
    d = 50
    pb = make_problem(d, [0], 3, model=check_model(omega=0.3))
    p1 = positional_encodings(d, dtype=torch.float64)[0]
    qs = pb.q_star[0] - (pb.q_star[0] @ p1) * p1  # orthogonal to p_1
    Q = (2 * qs + 3 * p1)[None]
    s = summaries(Q, qs[None], 0.5)
    np.testing.assert_allclose(s["m"], 3 / np.sqrt(d), rtol=1e-12)
    np.testing.assert_allclose(s["theta_emp"], 2 * float(qs @ qs) / d, rtol=1e-12)
    np.testing.assert_allclose(s["q_emp"], 0.25 * float(Q[0] @ Q[0]) / d, rtol=1e-12)


def test_make_problem_draws_on_the_cpu_from_the_seed():
    # seed s of chapter seed k: teacher then tokens from one CPU generator seeded k * 1000 + s
    gen = torch.Generator(device="cpu").manual_seed(2 * 1000 + 3)
    q = torch.randn(30, generator=gen, dtype=torch.float64)
    z = 0.5 * torch.randn(40, 2, 30, generator=gen, dtype=torch.float64)
    pb = make_problem(30, [0, 3], 40, seed=2, model=check_model(omega=0.3))
    assert torch.equal(pb.q_star[1], q) and torch.equal(pb.Gzz[1], z @ z.transpose(-1, -2))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_make_problem_gives_cuda_the_cpu_data():
    model = check_model(omega=0.3)
    cpu = make_problem(30, [0, 3], 40, seed=2, model=model)
    gpu = make_problem(30, [0, 3], 40, seed=2, device="cuda", model=model)
    assert torch.equal(gpu.q_star.cpu(), cpu.q_star) and torch.equal(gpu.X.cpu(), cpu.X)
