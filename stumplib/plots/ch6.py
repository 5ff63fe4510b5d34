"""Figures of chapter 6 (positional versus semantic attention); one call per figure."""
from __future__ import annotations

from typing import Any, Mapping

import matplotlib.pyplot as plt
import numpy as np

from .. import style

__all__ = ["theory_figure", "replay_figure", "gd_figure", "transition_figure", "window_figure"]

#: panel size (inches) and legend font of every figure here: two panels fill the book's text width
WIDTH, HEIGHT, LEGEND = 3.9, 3.1, 8


def _conv(th: Mapping[str, np.ndarray], key: str):
    ok = th[f"{key}_outcome"] == "converged"
    return ok


def theory_figure(th: Mapping[str, Any], pub: Mapping[str, Any], baseline: float, sigma: float):
    """(a) test error, (b) semantic overlap: accurate theory with quadrature bands (both branches),
    the published curves, and the published rule's own fixed points (144 nodes)."""
    fig, axes = style.panels(2, width=WIDTH, height=HEIGHT)
    for br, key in (("semantic", "sem"), ("positional", "pos")):
        ok = _conv(th, key)
        a = th[f"{key}_alpha"][ok]
        a_min = a.min() if a.size else th[f"{key}_alpha"].min()  # a token run may converge nowhere
        for ax, k, scale in ((axes[0], "test_error", 1.0), (axes[1], "theta", sigma ** -2)):
            if br == "positional" and k == "theta":
                continue
            y, e = th[f"{key}_{k}"][ok] * scale, th[f"{key}_{k}_err"][ok] * scale
            ax.fill_between(a, y - 3 * e, y + 3 * e, color=style.COLORS[br], alpha=0.3, lw=0)
            ax.plot(a, y, "-", color=style.COLORS[br], lw=1.5, label=f"accurate theory, {br}")
            if pub is None:
                continue
            pa, py = pub[f"{key}_alpha"], pub[f"{key}_{k}"] * scale
            sel = pa >= a_min - 0.3
            ax.plot(pa[sel], py[sel], "--", color=style.COLORS[br], lw=1, label=f"published, {br}")
            ax.plot(pa[sel], pub[f"{key}_replay_{k}"][sel] * scale, "x", color="k", ms=4,
                    label="144-node rule (our replay)" if br == "semantic" else None)
    axes[0].axhline(baseline, color=style.COLORS["linear"], ls=":", label="linear baseline")
    axes[0].set_ylabel("test error per sample")
    axes[1].set_ylabel(r"semantic overlap $\theta/\sigma^2$")
    for ax in axes:
        ax.set_xlabel(r"sample ratio $\alpha = n/d$")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncol=3, fontsize=LEGEND)
    style.label_panels(axes)
    plt.close(fig)
    return fig


def replay_figure(pub: Mapping[str, Any], th: Mapping[str, Any]):
    """Relative difference from the published semantic theta: our replay of the authors' rule (144
    nodes) and the accurate rule (with 3 quadrature errors)."""
    fig, ax = style.figure(width=6.0, height=3.4)
    pa, pt = pub["sem_alpha"], pub["sem_theta"]
    ax.plot(pa, pub["sem_replay_theta"] / pt - 1, "x-", color="k", label="144-node rule, exact fixed point")
    ok = _conv(th, "sem")
    a = th["sem_alpha"][ok]
    ref = np.interp(a, pa[::-1] if pa[0] > pa[-1] else pa, pt[::-1] if pa[0] > pa[-1] else pt)
    y, e = th["sem_theta"][ok] / ref - 1, th["sem_theta_err"][ok] / ref
    ax.errorbar(a, y, yerr=3 * e, fmt="o-", color=style.COLORS["semantic"], ms=4, capsize=2,
                label="accurate rule (bars: 3 errors)")
    ax.axhline(0, color="0.5", lw=0.8)
    ax.set_xlabel(r"sample ratio $\alpha = n/d$")
    ax.set_ylabel(r"$\theta / \theta_{\rm published} - 1$")
    ax.set_xlim(min(a.min(), 0.9) - 0.05, pa.max() + 0.05)
    ax.legend(fontsize=LEGEND)
    plt.close(fig)
    return fig


def gd_figure(rows: list[dict[str, Any]]):
    """GD test error (mean, 2 standard errors over seeds) against both theories, per alpha and d."""
    alphas = sorted({r["alpha"] for r in rows})
    fig, axes = style.panels(len(alphas), width=WIDTH, height=HEIGHT)
    for ax, a in zip(axes, alphas):
        rr = [r for r in rows if r["alpha"] == a]
        ds = np.array([r["d"] for r in rr], dtype=float)
        ax.errorbar(1 / ds, [r["gd"] for r in rr], yerr=[2 * r["gd_se"] for r in rr], fmt="o",
                    color=style.COLORS["semantic"], capsize=3, label="GD, semantic init")
        acc, err = rr[0]["accurate"], rr[0]["accurate_err"]
        ax.axhspan(acc - 3 * err, acc + 3 * err, color=style.COLORS["semantic"], alpha=0.25, lw=0)
        ax.axhline(acc, color=style.COLORS["semantic"], label="accurate theory")
        ax.axhline(rr[0]["published"], color="k", ls="--", label="published theory")
        ax.set_xlim(0, 1.15 / ds.min())
        ax.set_xlabel(r"$1/d$")
        ax.set_title(rf"$\alpha$ = {a:.3g}", fontsize=10)
        ax.set_ylabel("test error per sample")
    axes[0].legend(fontsize=LEGEND)
    style.label_panels(axes)
    plt.close(fig)
    return fig


def transition_figure(alpha, dloss, dloss_err, test_error, test_error_err, baseline: float, alpha_c, alpha_l):
    """(a) training-loss difference (semantic - positional) with bands of three errors; (b) semantic
    test error against the baseline; the crossings ``alpha_c``, ``alpha_l`` (estimates) with their
    intervals. The arrays are the alphas where both branches converged, increasing."""
    fig, axes = style.panels(2, width=WIDTH, height=HEIGHT)
    a, dl, de, te, tee = (np.asarray(v, dtype=float) for v in (alpha, dloss, dloss_err, test_error, test_error_err))
    axes[0].fill_between(a, dl - 3 * de, dl + 3 * de, color="0.6", alpha=0.4, lw=0)
    axes[0].plot(a, dl, "o-", color="k", ms=3)
    axes[0].axhline(0, color="0.5", lw=0.8)
    axes[0].set_ylabel("training loss / d:\nsemantic - positional")
    axes[1].fill_between(a, te - 3 * tee, te + 3 * tee, color=style.COLORS["semantic"], alpha=0.3, lw=0)
    axes[1].plot(a, te, "o-", color=style.COLORS["semantic"], ms=3, label="semantic branch")
    axes[1].axhline(baseline, color=style.COLORS["linear"], ls="--", label="linear baseline")
    axes[1].set_ylabel("test error per sample")
    for ax, est in ((axes[0], alpha_c), (axes[1], alpha_l)):
        if np.isfinite(est.value):
            ax.axvline(est.value, color=style.COLORS["fit"], ls=":")
            ax.axvspan(est.lo, est.hi, color=style.COLORS["fit"], alpha=0.15, lw=0)
        ax.set_xlabel(r"sample ratio $\alpha = n/d$")
    axes[1].legend(fontsize=LEGEND)
    style.label_panels(axes)
    plt.close(fig)
    return fig


def window_figure(prof: Mapping[str, Any], thetas, rules, alpha_window):
    """Residual g(theta) = F(theta) - theta of the semantic branch along theta, and the test error
    along the same line, for two quadrature rules."""
    fig, axes = style.panels(2, width=WIDTH, height=HEIGHT)
    for k, (label, _, _) in enumerate(rules):
        col = (style.COLORS["semantic"], style.COLORS["fit"])[k]
        axes[0].plot(thetas, prof[f"residual_{k}"], "o-", color=col, ms=3, label=label)
        axes[1].plot(thetas, prof[f"test_error_{k}"], "o-", color=col, ms=3, label=label)
        root = float(prof[f"root_{k}"])
        if np.isfinite(root):
            axes[0].axvline(root, color=col, ls=":", lw=1)
    axes[0].axhline(0, color="k", lw=0.8)
    axes[0].set_ylabel(r"residual $g(\theta) = F(\theta) - \theta$")
    axes[1].set_ylabel("test error (per sample)")
    for ax in axes:
        ax.set_xlabel(r"semantic overlap $\theta$ (held fixed)")
    axes[0].set_title(rf"$\alpha$ = {alpha_window}", fontsize=10)
    axes[0].legend(fontsize=LEGEND)
    style.label_panels(axes)
    plt.close(fig)
    return fig
