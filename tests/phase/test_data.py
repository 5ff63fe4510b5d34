"""Tests of stumplib.phase.data: encodings, teacher and samples."""
from __future__ import annotations

import math

import torch

from stumplib.phase import data

from conftest import teacher_sample


def test_positional_encodings_are_unit_and_opposite():
    P = data.positional_encodings(9)
    assert torch.allclose(P.norm(dim=1), torch.ones(2, dtype=torch.float64))
    assert torch.equal(P[0], -P[1])


def test_teacher_matrix_is_the_formula_and_batches():
    d, n = 12, 5
    _, z, qs, T = teacher_sample(d, n, seed=0)
    h = z @ qs / math.sqrt(d)  # (n, 2)
    s = torch.sigmoid(h[:, 0] * (h[:, 0] - h[:, 1]))  # softmax of (h1^2, h1 h2) over the first row
    assert torch.allclose(T[:, 0, 0], 0.7 * s + 0.3 * 0.6)
    assert torch.allclose(T.sum(-1), torch.ones(n, 2, dtype=torch.float64))
    qs2 = torch.stack([qs, -qs])
    Tb = data.teacher_matrix(torch.stack([z, z]), qs2, omega=0.3)
    assert torch.allclose(Tb[0], T) and torch.allclose(Tb[1], T)  # h* -> -h* leaves h* h*^T
