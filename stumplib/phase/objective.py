"""The attention student's regularised empirical risk and its analytic gradient: the one objective
kernel of :mod:`stumplib.phase` (gradient descent in :mod:`.attention`, converged minimisers in
:mod:`.minimise`), and the names of the starting points both accept.

Student: ``y_hat = softmax(h h^T) x`` with ``h_l = x_l . Q / sqrt(d)``; objective
``L(Q) = sum_mu ||y_hat_mu - y_mu||^2 / (2 d) + (lambda / 2) ||Q||^2``, written entrywise in the rows
of the 2x2 softmax with the precomputed Gram matrices ``X X^T``, ``X Z^T``, ``Z Z^T``.
"""
from __future__ import annotations

import math

import torch

#: the starting points: ``"semantic"`` (``Q = Q*``), ``"positional"`` (``Q = p_1``), ``"random"``
INITS = ("semantic", "positional", "random")


def objective_and_grad(Q: torch.Tensor, X: torch.Tensor, Z: torch.Tensor, T: torch.Tensor,
                       mask: torch.Tensor, lam: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Objective ``L`` and its gradient for a batch of runs.

    Parameters
    ----------
    Q : (S, d, R) student vectors (R runs per seed).
    X, Z : (S, n, 2, d) tokens with and without positions.
    T : (S, n, 2, 2) teacher matrices.
    mask : (S or 1, n, R) 0/1 weights of the samples of each run.
    lam : ridge.

    Returns
    -------
    L : (S, R); grad : (S, d, R).
    """
    Gxx = X @ X.transpose(-1, -2)
    Gxz = X @ Z.transpose(-1, -2)
    c0 = ((T @ (Z @ Z.transpose(-1, -2))) * T).sum((-1, -2))
    return objective_from_grams(Q, X, Gxx, Gxz, c0, T, mask, lam)


def objective_from_grams(Q: torch.Tensor, X: torch.Tensor, Gxx: torch.Tensor, Gxz: torch.Tensor,
                         c0: torch.Tensor, T: torch.Tensor, mask: torch.Tensor,
                         lam: float) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`objective_and_grad` from precomputed Gram matrices (the kernel every trainer and
    minimiser of :mod:`stumplib.phase` calls).

    Elementwise form: rows of S are (s_l, 1 - s_l), s_l = sigmoid(h_l (h_1 - h_2)); with ``a, b, c``
    the entries of ``Gxx`` and ``w_l = Gxz T_l`` (T_l the teacher's row l),
    ``2 d loss = sum_l [s_l^2 a + 2 s_l (1 - s_l) b + (1 - s_l)^2 c - 2 (s_l w_l1 + (1 - s_l) w_l2)] + c0``.

    Parameters
    ----------
    Q : (S, d, R) student vectors.
    X : (S, n, 2, d) tokens with positions.
    Gxx : (S, n, 2, 2) Gram matrices ``X X^T`` of each sample.
    Gxz : (S, n, 2, 2) ``X Z^T`` (Z: tokens without positions).
    c0 : (S, n) the teacher's constant term ``sum (T Z Z^T) * T``.
    T : (S, n, 2, 2) teacher matrices.
    mask : (S or 1, n, R) 0/1 weights of the samples of each run.
    lam : ridge.

    Returns
    -------
    L : (S, R); grad : (S, d, R).
    """
    S_, n, _, d = X.shape
    H = (X.reshape(S_, 2 * n, d) @ Q).reshape(S_, n, 2, -1) / math.sqrt(d)  # (S, n, 2, R)
    h1, h2 = H[:, :, 0], H[:, :, 1]
    a, b, c = Gxx[..., 0, 0, None], Gxx[..., 0, 1, None], Gxx[..., 1, 1, None]
    w = Gxz @ T.transpose(-1, -2)  # w[..., k, l] = (Gxz T_l)_k
    w11, w21, w12, w22 = w[..., 0, 0, None], w[..., 1, 0, None], w[..., 0, 1, None], w[..., 1, 1, None]
    dlt = h1 - h2
    s1 = torch.sigmoid(h1 * dlt)
    s2 = torch.sigmoid(h2 * dlt)

    def row(s, wa, wb):
        val = s * s * a + 2 * s * (1 - s) * b + (1 - s) ** 2 * c - 2 * (s * wa + (1 - s) * wb)
        der = 2 * s * a + 2 * (1 - 2 * s) * b - 2 * (1 - s) * c - 2 * (wa - wb)
        return val, der

    v1, e1 = row(s1, w11, w21)
    v2, e2 = row(s2, w12, w22)
    loss = (v1 + v2 + c0[..., None]) / (2 * d)
    g1 = e1 * s1 * (1 - s1) * mask / (2 * d)
    g2 = e2 * s2 * (1 - s2) * mask / (2 * d)
    dh1 = g1 * (2 * h1 - h2) + g2 * h2
    dh2 = -g1 * h1 + g2 * (h1 - 2 * h2)
    L = (loss * mask).sum(1) + 0.5 * lam * (Q * Q).sum(1)
    dH = torch.stack([dh1, dh2], 2).reshape(S_, 2 * n, -1)
    grad = X.reshape(S_, 2 * n, d).transpose(1, 2) @ dH / math.sqrt(d) + lam * Q
    return L, grad
