"""Figures of chapter 6 (positional versus semantic attention); one call per figure."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

from stumplib.core import style

__all__ = ["diagram_figure", "theory_figure", "minimiser_figure", "transition_figure", "window_figure"]

#: panel size (inches) and legend font of every figure here: two panels fill the book's text width
WIDTH, HEIGHT, LEGEND = style.COLUMN_WIDTH / 2, 2.9, 9


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


def window_figure(prof: Sequence[Mapping[str, Any]], thetas, rules, alpha_window):
    """Residual g(theta) = F(theta) - theta of the semantic branch along theta, and the test error
    along the same line, for two quadrature rules.

    Parameters
    ----------
    prof : :func:`stumplib.phase.transition.window_profiles`' output, one dict per rule.
    thetas : the grid of theta. rules : ``(label, rule, size)`` per rule (the labels are used).
    alpha_window : the sample ratio (title).

    Returns
    -------
    matplotlib Figure
    """
    fig, axes = style.panels(2, width=WIDTH, height=HEIGHT)
    for k, (label, _, _) in enumerate(rules):
        col = (style.COLORS["semantic"], style.COLORS["fit"])[k]
        axes[0].plot(thetas, prof[k]["residual"], "o-", color=col, ms=3, label=label)
        axes[1].plot(thetas, prof[k]["test_error"], "o-", color=col, ms=3, label=label)
        root = float(prof[k]["root"])
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


def diagram_figure(diag: Mapping[str, Any], published: tuple[float, float] | None = None):
    """The (alpha, omega) plane: alpha_c(omega) and alpha_l(omega) with their intervals, the
    three regions they bound, and the published curves' crossings at omega = 0.3."""
    fig, ax = style.figure(width=style.COLUMN_WIDTH, height=3.8)
    om = np.asarray(diag["omega"], dtype=float)
    lines = {}
    for name, col, lab in (("alpha_c", style.COLORS["positional"], r"$\alpha_c$: global minimum turns semantic"),
                           ("alpha_l", style.COLORS["semantic"], r"$\alpha_l$: semantic beats linear")):
        v, lo, hi = (np.asarray(diag[k], dtype=float) for k in (name, f"{name}_lo", f"{name}_hi"))
        ok = np.isfinite(v)
        ax.errorbar(v[ok], om[ok], xerr=[v[ok] - lo[ok], hi[ok] - v[ok]], fmt="o-", color=col, ms=4,
                    capsize=3, label=lab)
        lines[name] = (v, ok)
    a_max = float(np.nanmax(np.r_[diag["pt_alpha"], 0.0]))
    (vc, okc), (vl, okl) = lines["alpha_c"], lines["alpha_l"]
    if okc.sum() > 1 and okl.sum() > 1:
        ax.fill_betweenx(om[okc], 0, vc[okc], color=style.COLORS["positional"], alpha=0.12, lw=0)
        ax.fill_betweenx(om[okl], vl[okl], a_max, color=style.COLORS["semantic"], alpha=0.12, lw=0)
    if published is not None and np.all(np.isfinite(published)):
        ax.plot(published, [0.3, 0.3], "x", color="k", ms=8, mew=1.5, label="published curves, $\\omega$ = 0.3")
    ax.text(0.02, 0.95, "positional", transform=ax.transAxes, va="top", fontsize=LEGEND)
    ax.text(0.98, 0.05, "semantic, better than linear", transform=ax.transAxes, ha="right",
            fontsize=LEGEND)
    ax.set_xlim(max(0.0, float(np.nanmin(np.asarray(diag["pt_alpha"]))) - 0.05), a_max)
    ax.set_xlabel(r"sample ratio $\alpha = n/d$")
    ax.set_ylabel(r"positional share $\omega$")
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncol=3, fontsize=LEGEND)
    plt.close(fig)
    return fig


def minimiser_figure(decision: Mapping[str, Any], alphas, accurate, accurate_err, published):
    """Per alpha: the minimisers' mean exact test error (bars: two standard errors over seeds)
    against 1/d, the three weighted extrapolations to 1/d = 0 (a straight line, one with a 1/d^2
    term, a line without the smallest d) with their intervals, the accurate theory (band: three
    quadrature errors) and the published theory. A d where an alpha has no runs is left out."""
    fig, axes = style.panels(len(alphas), width=WIDTH, height=HEIGHT)
    x_all = 1.0 / np.asarray(decision["ds"], dtype=float)
    forms = decision.get("forms", {"line": dict(limit=decision["limit"])})
    look = {"line": (1, ":", "straight line"), "quadratic": (2, "-.", r"with $1/d^2$"),
            "drop_smallest": (1, (0, (1, 3)), "without smallest $d$")}
    for j, (ax, a) in enumerate(zip(axes, alphas)):
        m, se = decision["mean"][:, j], decision["se"][:, j]
        ok = np.isfinite(m) & np.isfinite(se) & (se > 0)
        x = x_all[ok]
        ax.errorbar(x, m[ok], yerr=2 * se[ok], fmt="o", color=style.COLORS["semantic"], capsize=3,
                    label="minimisers")
        for k, (name, f) in enumerate(forms.items()):
            deg, ls, label = look.get(name, (1, ":", name))
            lim = f["limit"][j]
            keep = ok.copy()
            if name == "drop_smallest" and keep.any():
                keep[np.flatnonzero(keep)[0]] = False
            if not np.isfinite(lim.value) or keep.sum() <= deg:
                continue
            xk = x_all[keep]
            coef = np.polyfit(xk, m[keep], deg, w=1 / se[keep])
            xx = np.linspace(0, xk.max(), 40)
            ax.plot(xx, np.polyval(coef, xx), ls=ls, color=style.COLORS["fit"], label=label)
            off = -(2 - k) * 0.02 * x.max()  # side by side at and left of 1/d = 0
            ax.errorbar([off], [lim.value], yerr=[[lim.value - lim.lo], [lim.hi - lim.value]], fmt="s",
                        color=style.COLORS["fit"], capsize=3, ms=4)
        acc, err = float(accurate[j]), float(accurate_err[j])
        ax.axhspan(acc - 3 * err, acc + 3 * err, color=style.COLORS["semantic"], alpha=0.25, lw=0)
        ax.axhline(acc, color=style.COLORS["semantic"], label="accurate theory")
        ax.axhline(float(published[j]), color="k", ls="--", label="published theory")
        ax.set_xlim(-0.07 * x.max(), 1.1 * x.max())
        ax.set_xlabel(r"$1/d$")
        ax.set_title(rf"$\alpha$ = {a:.4g}", fontsize=10)
        ax.set_ylabel("test error per sample")
    axes[-1].legend(fontsize=LEGEND, loc="upper left", bbox_to_anchor=(1.02, 1.0))  # off the data
    style.label_panels(axes)
    plt.close(fig)
    return fig
