"""Exact corpus losses and gradients at any parameters, on unsorted corpora of equal shape.

For each corpus of ``m`` tasks (thresholds ``tau_j``, contexts ``(x_j, y_j)`` of ``n`` examples)

    L = (1/m) sum_j (f_j - tau_j)^2,
    dL/dbeta = (2/m) sum_j (f_j - tau_j) (-Var_w(x)),
    dL/db = (2/m) sum_j (f_j - tau_j) Cov_w(x, y),

with ``f_j`` the estimator of :mod:`stumplib.stump.model`. :func:`corpus_moments` is the fused
kernel (max-shifted softmax, two-pass centred moments, reusable buffers) and :func:`corpus_grad`
the loss and gradient built on it, for evaluating many ``(beta, b)`` on fixed corpora
(:mod:`stumplib.book.studies.transfer`, :mod:`stumplib.book.studies.certified`,
:mod:`stumplib.book.studies.calibration`). Training goes through the sorted fast kernel of
:mod:`stumplib.stump.fast_kernel` instead, which computes the same quantity (both are tested
against :func:`stumplib.stump.model.estimate_and_grad`).
"""
from __future__ import annotations

import torch


def corpus_moments(x: torch.Tensor, y: torch.Tensor, beta: torch.Tensor, b: torch.Tensor,
                   ny: torch.Tensor | None = None, work: list | None = None
                   ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Fused ``f, -Var_w(x), Cov_w(x, y)`` over the last axis of unsorted corpora (no checks).

    The general-purpose kernel behind :func:`corpus_grad`, which :mod:`stumplib.book.studies.transfer`
    and :mod:`stumplib.book.studies.certified` use to evaluate many scales on one set of corpora
    (``beta`` broadcast against ``x``); the trainer itself uses the sorted fast kernel
    (:mod:`stumplib.stump.fast_kernel`). Fresh large temporaries cost page faults at every step (a
    third of the time), hence the reusable buffers. Centred moments (two passes: the mean, then the
    centred sums), so no cancellation at large ``beta``. Dot products over the last axis go through
    ``einsum`` (batched matrix products) instead of temporaries.

    Parameters
    ----------
    x, y : torch.Tensor, shape ``(..., n)``
        Examples and labels (0/1) of each context.
    beta, b : torch.Tensor
        Attention scale and label score, broadcast against ``x.shape[:-1]``.
    ny : torch.Tensor, optional
        The precomputed ``1 - y`` (shape of ``y``).
    work : list, optional
        Holds two reusable buffers of the broadcast shape (filled on first use).

    Returns
    -------
    f, df_dbeta, df_db : torch.Tensor, each of the broadcast shape of ``x.shape[:-1]``
        The estimate ``f = E_w[x]``, ``df_dbeta = -Var_w(x)`` and ``df_db = Cov_w(x, y)``.
    """
    shape = torch.broadcast_shapes(x.shape, beta.shape + (1,), b.shape + (1,))
    if work is not None and len(work) == 2 and work[0].shape == shape and work[0].dtype == x.dtype \
            and work[0].device == x.device:
        s_buf, d_buf = work
    else:
        s_buf = torch.empty(shape, dtype=x.dtype, device=x.device)
        d_buf = torch.empty(shape, dtype=x.dtype, device=x.device)
        if work is not None:
            work[:] = [s_buf, d_buf]
    s = torch.mul(y, b[..., None], out=s_buf).addcmul_(x, beta[..., None], value=-1.0)
    w = s.sub_(s.amax(-1, keepdim=True)).exp_()  # in place: s is a buffer
    Z = w.sum(-1)
    f = _dot(w, x) / Z
    p_pos = _dot(w, y) / Z
    dx = torch.sub(x, f[..., None], out=d_buf)
    wdx = w.mul_(dx)  # w is not needed any more
    var = _dot(wdx, dx) / Z
    # Cov_w(x, y) = sum w dx y = -sum w dx (1 - y): take the side holding less weight, whose rounding
    # error is proportional to that small weight (no cancellation when one side dominates)
    s_pos = _dot(wdx, y)
    s_neg = _dot(wdx, 1.0 - y) if ny is None else _dot(wdx, ny)
    cov = torch.where(p_pos > 0.5, -s_neg, s_pos) / Z
    return f, -var, cov


def _dot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``(a * b).sum(-1)`` without the temporary (a batched matrix product)."""
    return torch.einsum("...n,...n->...", a, b)


def corpus_grad(x: torch.Tensor, y: torch.Tensor, tau: torch.Tensor, beta: torch.Tensor,
                b: torch.Tensor, ny: torch.Tensor | None = None, work: list | None = None
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Loss and exact gradient of corpora of equal shape at any parameters (no argument checks).

    The book's one corpus gradient for evaluating many ``(beta, b)`` on fixed corpora (chapters 3
    and 4: :mod:`stumplib.book.studies.transfer`, :mod:`stumplib.book.studies.calibration`); training goes
    through the sorted fast kernel of :func:`stumplib.stump.trainer.train_gd`, which computes the
    same quantity (both are tested against :func:`stumplib.stump.model.estimate_and_grad`). For
    each corpus

        L = (1/m) sum_j (f_j - tau_j)^2,
        dL/dbeta = (2/m) sum_j (f_j - tau_j) (-Var_w(x)),
        dL/db = (2/m) sum_j (f_j - tau_j) Cov_w(x, y),

    with centred moments (no cancellation at large ``beta``).

    Parameters
    ----------
    x, y : torch.Tensor, shape ``(..., m, n)``: examples and labels (0/1) of unpadded corpora.
    tau : torch.Tensor, shape ``(..., m)``: the thresholds.
    beta, b : torch.Tensor, broadcast against ``tau.shape[:-1]`` (e.g. ``(K, C)`` scales for ``C``
        corpora, or ``(C,)``).
    ny : optional precomputed ``1 - y``.
    work : optional list holding two reusable buffers (filled on first use, see
        :func:`corpus_moments`).

    Returns
    -------
    L, dL_dbeta, dL_db : torch.Tensor, of the broadcast shape of ``tau.shape[:-1]`` and ``beta``.
    """
    f, dfb, dfbb = corpus_moments(x, y, beta[..., None], b[..., None], ny=ny, work=work)
    e = f - tau
    m = tau.shape[-1]
    return (e * e).sum(-1) / m, 2 * (e * dfb).sum(-1) / m, 2 * (e * dfbb).sum(-1) / m
