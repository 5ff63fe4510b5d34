"""The exact test error of a learned attention student: an expectation over fresh tokens without
test-sample noise.

The integrand depends on the tokens only through their projections on ``span(Q*, Q)`` (a
four-dimensional Gaussian integral, done with a tensor Gauss-Hermite rule), on the third direction
of ``span(Q*, Q, p_1)`` and on the orthogonal complement (both exact).
"""
from __future__ import annotations

import math

import numpy as np
import torch

from stumplib.core.validation import check_int
from stumplib.phase.data import positional_encodings, softmax_rows, teacher_of_scores
from stumplib.phase.setting import PhaseModel, as_model


def _gauss_hermite_4(n_nodes: int, sigma: float, dtype, device):
    x, w = np.polynomial.hermite_e.hermegauss(n_nodes)
    w = w / w.sum()
    g = np.stack(np.meshgrid(x, x, x, x, indexing="ij"), -1).reshape(-1, 4) * sigma
    W = np.prod(np.stack(np.meshgrid(w, w, w, w, indexing="ij"), -1).reshape(-1, 4), -1)
    return (torch.as_tensor(g, dtype=dtype, device=device).reshape(-1, 2, 2),
            torch.as_tensor(W, dtype=dtype, device=device))


def exact_test_error(Q: torch.Tensor, q_star: torch.Tensor, *, model: PhaseModel,
                     n_nodes: int = 16) -> np.ndarray:
    """Per-sample test error ``E |y_hat - y|^2 / (2 d)`` over fresh tokens, without sampling noise.

    With an orthonormal basis ``e_1, e_2, e_3`` of ``span(Q*, Q, p_1)`` (``Q*, Q`` in the first
    two), a token's projections ``g_l`` on ``e_1, e_2`` set both score vectors; given them, the
    residual's component along ``e_3`` and the orthogonal complement average exactly, and the
    expectation over ``g`` (four Gaussians) is a tensor Gauss-Hermite rule of ``n_nodes`` per axis.

    Parameters
    ----------
    Q, q_star : torch.Tensor, shape ``(R, d)`` (or ``(d,)`` each)
        Students and their teachers.
    model : PhaseModel
        The model (:func:`~stumplib.phase.check_model`): the teacher's positional share ``omega``
        and matrix ``A`` and the token noise ``sigma`` (``lam`` and the branch are not used).
    n_nodes : int
        Gauss-Hermite nodes per axis (4 to 40).

    Returns
    -------
    np.ndarray, shape ``(R,)``, or float
        The test error of each student, a numpy array (a float for 1-D input).
    """
    omega, sigma, _, A, _ = as_model(model)
    n_nodes = check_int("n_nodes", n_nodes, minimum=4, maximum=40)
    one = Q.ndim == 1
    Q, qs = (torch.atleast_2d(v).to(torch.float64) for v in (Q, q_star))
    G, W = _gauss_hermite_4(n_nodes, sigma, Q.dtype, Q.device)  # (N, 2 tokens, 2 coords), (N,)
    step = max(1, 2_000_000 // W.numel())
    out = np.concatenate([_exact_chunk(Q[i:i + step], qs[i:i + step], G, W, omega, sigma, A)
                          for i in range(0, Q.shape[0], step)])
    return float(out[0]) if one else out


def _exact_chunk(Q, qs, G, W, omega, sigma, A) -> np.ndarray:
    R, d = Q.shape
    p1 = positional_encodings(d, device=Q.device, dtype=Q.dtype)[0]
    B, Rm = torch.linalg.qr(torch.stack([qs, Q, p1.expand(R, d)], -1))  # (R, d, 3), (R, 3, 3)
    qsc, qc, pc = Rm[:, :2, 0], Rm[:, :2, 1], Rm[:, :, 2]  # coordinates on e_1, e_2 (p: also e_3)
    sgn = torch.tensor([1.0, -1.0], dtype=Q.dtype, device=Q.device)
    pq = (p1 * Q).sum(-1)  # p_1 . Q
    h = (sgn[None, None] * pq[:, None, None]
         + (G[None] @ qc[:, None, :, None])[..., 0]) / math.sqrt(d)
    hs = (G[None] @ qsc[:, None, :, None])[..., 0] / math.sqrt(d)  # (R, N, 2)
    Sm, Tm = softmax_rows(h), teacher_of_scores(hs, omega=omega, A=A)
    Ss = Sm @ sgn  # (R, N, 2): sum_k S_lk s_k
    D = Sm - Tm
    inplane = Ss[..., None] * pc[:, None, None, :2] + D @ G[None]  # (R, N, 2, 2)
    err = ((inplane ** 2).sum((-1, -2)) + (Ss ** 2).sum(-1) * pc[:, None, 2] ** 2
           + sigma ** 2 * (d - 2) * (D ** 2).sum((-1, -2))) / (2 * d)
    return (err * W).sum(-1).cpu().numpy()
