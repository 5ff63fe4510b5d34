"""Figures of chapter 1 (the task and the one-head estimator)."""
from __future__ import annotations

import matplotlib.pyplot as plt

from stumplib.book import style
from stumplib.stump.model import attention_weights, estimate


def weights(x, y, betas, c, tau=0.5):
    """Attention weights over one context (``x``, ``y`` of shape ``(1, N)``) for each scale in
    ``betas`` (four panels, 2 x 2) at the fixed ratio ``c = b / beta``.

    Parameters
    ----------
    x : torch.Tensor, shape ``(1, N)``
        Features of the one context, in ``[0, 1]``.
    y : torch.Tensor, shape ``(1, N)``
        Its labels, 0 or 1 (``1`` where ``x >= tau``).
    betas : sequence of float
        Attention scales, one panel each (the first four fill the 2 x 2 grid).
    c : float
        Relative label score ``b / beta``; each panel uses ``b = c * beta``.
    tau : float, optional
        True threshold drawn as a dashed line, in ``[0, 1]`` (default 0.5).

    Returns
    -------
    matplotlib.figure.Figure
        The 2 x 2 figure (closed, ready to save or glue).
    """
    fig, axes = style.figure(ncols=2, nrows=2, height=2.5, sharey=True, sharex=True)
    xs, ys = x[0].cpu().numpy(), y[0].cpu().numpy()
    for ax, beta in zip(axes.ravel(), betas):
        w = attention_weights(x, y, beta, c * beta)[0].cpu().numpy()
        f = float(estimate(x, y, beta, c * beta)[0])
        for lab, col, name in [(0, style.COLORS["max negative"], "negative ($y=0$)"),
                               (1, style.COLORS["attention"], "positive ($y=1$)")]:
            sel = ys == lab
            ax.vlines(xs[sel], 0, w[sel], color=col, lw=1.5)
            ax.plot(xs[sel], w[sel], "o", color=col, ms=3.5, label=name)
        ax.axvline(tau, color="k", ls="--", lw=1, label=r"true $\tau$")
        ax.axvline(f, color=style.COLORS["fit"], ls=":", lw=1.5, label=r"estimate $f$")
        ax.set_title(rf"$\beta = {beta:g}$, $f = {f:.3f}$")
    for ax in axes[1]:
        ax.set_xlabel(r"feature $x_i$")
    for ax in axes[:, 0]:
        ax.set_ylabel(r"attention weight $w_i$")
    style.legend(axes[0, 0], loc="upper left")
    style.finish(fig)
    plt.close(fig)
    return fig


def estimator(taus, R, betas, c, N, tau_lo, tau_hi):
    """The estimate against the threshold: mean, 10-90% band and exact population curve per scale
    (``R`` from chapter 1's cached computation), three single contexts at the largest scale.

    Parameters
    ----------
    taus : array_like, shape ``(T,)``
        True thresholds in ``[0, 1]``, the x axis.
    R : dict
        Arrays ``"mean"``, ``"q10"``, ``"q90"`` (the mean and 10%/90% quantiles of the estimate
        over contexts) and ``"pop"`` (the exact population estimator), each of shape
        ``(len(betas), T)``, and ``"single"``, shape ``(S, T)``: single contexts at the largest
        scale (all ``S`` rows drawn).
    betas : sequence of float
        Attention scales, one colour each (three colours: small, mid, large).
    c : float
        Relative label score ``b / beta``, drawn as a vertical line.
    N : int
        Context size, named in the legend.
    tau_lo, tau_hi : float
        The prior's interval ``[tau_lo, tau_hi]`` in ``[0, 1]``, shaded.

    Returns
    -------
    matplotlib.figure.Figure
        The one-panel figure (closed, ready to save or glue).
    """
    cols = [style.COLORS[k] for k in ("beta small", "beta mid", "beta large")]
    fig, ax = style.figure(height=3.9)
    ax.plot([0, 1], [0, 1], color="0.45", ls="-.", lw=1.2, label=r"$f = \tau$")
    for i, (beta, col) in enumerate(zip(betas, cols)):
        ax.fill_between(taus, R["q10"][i], R["q90"][i], color=col, alpha=0.18, lw=0)
        ax.plot(taus, R["mean"][i], color=col, label=rf"$\beta={beta:g}$, $N={N}$ (mean)")
        ax.plot(taus, R["pop"][i], color=col, ls="--", lw=1,
                label=r"exact $N\to\infty$ estimator (dashed)" if i == 0 else None)
    for k in range(R["single"].shape[0]):  # the same draws, labels moving with tau
        ax.plot(taus, R["single"][k], color=cols[-1], lw=0.6, alpha=0.7,
                label="three single contexts" if k == 0 else None)
    ax.axvline(c, color=style.COLORS["fit"], ls=":", lw=1, label=rf"$c = b/\beta = {c}$")
    ax.axvspan(tau_lo, tau_hi, color="0.9", alpha=0.5, lw=0, label="interior prior")
    ax.set_xlabel(r"true threshold $\tau$")
    ax.set_ylabel(r"estimate $f_{\beta,b}$")
    style.legend(ax, loc="upper left")
    style.finish(fig)
    plt.close(fig)
    return fig
