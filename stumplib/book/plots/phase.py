"""Figures of chapter 6 (positional versus semantic attention); one call per figure."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from stumplib.book import style

#: panel size (inches) and legend font of every figure here: two panels fill the book's text width
WIDTH, HEIGHT, LEGEND = style.COLUMN_WIDTH / 2, 2.9, style.MIN_FONT_PT


def _conv(th: Mapping[str, np.ndarray], key: str):
    ok = th[f"{key}_outcome"] == "converged"
    return ok


def theory_figure(th: Mapping[str, Any], pub: Mapping[str, Any], baseline: float, sigma: float):
    """(a) test error, (b) semantic overlap: accurate theory with quadrature bands (both branches),
    the published curves, and the published rule's own fixed points (144 nodes).

    Parameters
    ----------
    th : Mapping[str, Any]
        The accurate theory per branch (``key`` ``"sem"``, ``"pos"``): arrays of shape ``(K,)``
        ``{key}_alpha``, ``{key}_outcome`` (only ``"converged"`` points are drawn),
        ``{key}_test_error``, ``{key}_test_error_err`` and, for the semantic branch, ``{key}_theta``
        and ``{key}_theta_err`` (bands: three quadrature errors).
    pub : Mapping[str, Any] or None
        The published curves per branch: ``{key}_alpha``, ``{key}_test_error``, ``{key}_theta`` and
        the 144-node replay ``{key}_replay_test_error``, ``{key}_replay_theta`` (shape ``(P,)``),
        drawn from 0.3 below the smallest converged alpha; ``None`` draws the accurate theory only.
    baseline : float
        The linear baseline's test error per sample, a horizontal line in panel (a).
    sigma : float
        The noise scale; panel (b) shows ``theta / sigma**2`` (positive).

    Returns
    -------
    matplotlib.figure.Figure
        The figure, already closed (for display or saving by the caller).
    """
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
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncol=2, fontsize=LEGEND)
    style.label_panels(axes)
    style.finish(fig)
    plt.close(fig)
    return fig


def transition_figure(alpha, dloss, dloss_err, test_error, test_error_err, baseline: float, alpha_c, alpha_l):
    """(a) training-loss difference (semantic - positional) with bands of three errors; (b) semantic
    test error against the baseline; the crossings ``alpha_c``, ``alpha_l`` (estimates) with their
    intervals. The arrays are the alphas where both branches converged, increasing.

    Parameters
    ----------
    alpha : array_like, shape (K,)
        Sample ratios ``alpha = n/d``, increasing.
    dloss, dloss_err : array_like, shape (K,)
        Training loss per ``d``, semantic minus positional, and its error (band: three errors).
    test_error, test_error_err : array_like, shape (K,)
        The semantic branch's test error per sample and its error (band: three errors).
    baseline : float
        The linear baseline's test error per sample, a dashed line in panel (b).
    alpha_c, alpha_l : stumplib.core.stats.Estimate
        The crossings: ``alpha_c`` (loss difference through zero) in panel (a), ``alpha_l``
        (semantic beats linear) in panel (b), each a dotted line with its interval shaded; not
        drawn when the value is not finite.

    Returns
    -------
    matplotlib.figure.Figure
        The figure, already closed (for display or saving by the caller).
    """
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
    style.legend(axes[1], fontsize=LEGEND)
    style.label_panels(axes)
    style.finish(fig)
    plt.close(fig)
    return fig


def window_figure(prof: Sequence[Mapping[str, Any]], thetas, rules, alpha_window):
    """Residual g(theta) = F(theta) - theta of the semantic branch along theta, and the test error
    along the same line, for two quadrature rules.

    Parameters
    ----------
    prof : :func:`stumplib.book.studies.curves.window_profiles`' output, one dict per rule.
    thetas : array_like, shape (T,)
        The grid of the semantic overlap theta (held fixed), the x axis.
    rules : Sequence[tuple]
        ``(label, rule, size)`` per rule, at most two, in the order of ``prof`` (only the labels
        are used).
    alpha_window : float
        The sample ratio of the profiles (the title).

    Returns
    -------
    matplotlib.figure.Figure
        The figure, already closed (for display or saving by the caller).
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
    axes[0].set_title(rf"$\alpha$ = {alpha_window}", fontsize=style.MIN_FONT_PT)
    style.legend(axes[0], fontsize=LEGEND)
    style.label_panels(axes)
    style.finish(fig)
    plt.close(fig)
    return fig


def diagram_figure(diag: Mapping[str, Any], published: tuple[float, float] | None = None):
    """The (alpha, omega) plane: alpha_c(omega) and alpha_l(omega) with their intervals, the
    three regions they bound, and the published curves' crossings at omega = 0.3.

    Parameters
    ----------
    diag : Mapping[str, Any]
        The phase diagram: ``omega`` (shape ``(W,)``, positional share), ``alpha_c``,
        ``alpha_c_lo``, ``alpha_c_hi``, ``alpha_l``, ``alpha_l_lo``, ``alpha_l_hi`` (shape ``(W,)``,
        NaN where not located) and ``pt_alpha`` (the alphas computed, which set the x range).
    published : tuple[float, float] or None
        The published curves' ``(alpha_c, alpha_l)`` at omega = 0.3, drawn as crosses when both
        are finite; ``None``: not drawn.

    Returns
    -------
    matplotlib.figure.Figure
        The figure, already closed (for display or saving by the caller).
    """
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
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncol=2, fontsize=LEGEND)
    style.finish(fig)
    plt.close(fig)
    return fig


def minimiser_figure(decision: Mapping[str, Any], alphas, accurate, accurate_err, published):
    """Per alpha: the minimisers' mean exact test error (bars: two standard errors over seeds)
    against 1/d, the three weighted extrapolations to 1/d = 0 (a straight line, one with a 1/d^2
    term, a line without the smallest d) with their intervals, the accurate theory (band: three
    quadrature errors) and the published theory. A d where an alpha has no runs is left out.

    Parameters
    ----------
    decision : Mapping[str, Any]
        :func:`stumplib.book.studies.decision.decide`'s output: ``ds`` (shape ``(D,)``), ``mean`` and
        ``se`` (shape ``(D, A)``), and ``forms`` (``{name: {"limit": A Estimates}}``; without it the
        single ``limit`` is drawn as a straight line).
    alphas : Sequence[float], shape (A,)
        The sample ratios, one panel each.
    accurate, accurate_err : array_like, shape (A,)
        The accurate theory's test error per sample at ``alphas`` and its quadrature error.
    published : array_like, shape (A,)
        The published theory's test error per sample at ``alphas``.

    Returns
    -------
    matplotlib.figure.Figure
        The figure, already closed (for display or saving by the caller).
    """
    fig, axes = style.panels(len(alphas), width=WIDTH, height=HEIGHT)
    x_all = 1.0 / np.asarray(decision["ds"], dtype=float)
    forms = decision.get("forms", {"line": dict(limit=decision["limit"])})
    # each extrapolation its own colour and line (Okabe-Ito), its limit a square of that colour
    look = {"line": (1, ":", "straight line", "#D55E00"),
            "quadratic": (2, "-.", r"with $1/d^2$", "#009E73"),
            "drop_smallest": (1, (0, (1, 3)), "without smallest $d$", "#CC79A7")}
    spare = ("#E69F00", "#56B4E9", "#000000")
    drawn = {}  # legend: label -> handle, in drawing order
    for j, (ax, a) in enumerate(zip(axes, alphas)):
        m, se = decision["mean"][:, j], decision["se"][:, j]
        ok = np.isfinite(m) & np.isfinite(se) & (se > 0)
        x = x_all[ok]
        xmax = float(x.max()) if x.size else float(x_all.max())  # no seed spread (one seed): no points
        h = ax.errorbar(x, m[ok], yerr=2 * se[ok], fmt="o", color=style.COLORS["semantic"],
                        capsize=3, label="minimisers")
        drawn.setdefault("minimisers", h)
        n_forms = len(forms)
        for k, (name, f) in enumerate(forms.items()):
            deg, ls, label, col = look.get(name, (1, ":", name, spare[k % len(spare)]))
            lim = f["limit"][j]
            keep = ok.copy()
            if name == "drop_smallest" and keep.any():
                keep[np.flatnonzero(keep)[0]] = False
            if not np.isfinite(lim.value) or keep.sum() <= deg:
                continue
            xk = x_all[keep]
            coef = np.polyfit(xk, m[keep], deg, w=1 / se[keep])
            xx = np.linspace(0, xk.max(), 40)
            ax.plot(xx, np.polyval(coef, xx), ls=ls, color=col, lw=1.6, label=label)
            # side by side in the forms' order, the last at 1/d = 0, a marker's width apart
            off = -(n_forms - 1 - k) * 0.06 * xmax
            ax.errorbar([off], [lim.value], yerr=[[lim.value - lim.lo], [lim.hi - lim.value]],
                        fmt="s", color=col, capsize=3, ms=5, mec="white", mew=0.6, zorder=4)
            drawn.setdefault(label, Line2D([], [], ls=ls, color=col, lw=1.6, marker="s", ms=5,
                                           mec="white", mew=0.6))
        acc, err = float(accurate[j]), float(accurate_err[j])
        ax.axhspan(acc - 3 * err, acc + 3 * err, color=style.COLORS["semantic"], alpha=0.25, lw=0)
        drawn.setdefault("accurate theory", ax.axhline(acc, color=style.COLORS["semantic"]))
        drawn.setdefault("published theory",
                         ax.axhline(float(published[j]), color="k", ls="--"))
        ax.axvline(0, color="0.6", lw=0.6)
        ax.set_xlim(-(0.06 * max(n_forms - 1, 0) + 0.05) * xmax, 1.05 * xmax)
        ax.set_xlabel(r"$1/d$")
        ax.set_title(rf"$\alpha$ = {a:.4g}", fontsize=style.MIN_FONT_PT)
        ax.set_ylabel("test error per sample")
    # one legend for both panels, below them in three columns
    fig.legend(list(drawn.values()), list(drawn), loc="outside lower center", ncol=3,
               fontsize=LEGEND)
    style.label_panels(axes)
    style.finish(fig)
    plt.close(fig)
    return fig


# ----------------------------------------------------------------------------------------------
# the flat window
# ----------------------------------------------------------------------------------------------
_FW_LABELS = {"train_loss": "training loss / d", "theta": r"semantic overlap $\theta$",
              "q": r"norm $q = \sigma^2 |Q|^2 / d$", "abs_m": r"positional overlap $|m|$",
              "test_error": "test error per sample"}
_FW_COLORS = ("#0072B2", "#009E73", "#E69F00", "#CC79A7", "#D55E00")  # one per d (or alpha)
#: the two kinds of minima and the mean curve's minimum (never a d's colour)
_KIND_STYLE = {"free": dict(fmt="o", color="#7F7F7F", mfc="none"),
               "best": dict(fmt="o", color="#000000"),
               "mean_curve_min": dict(fmt="x", color="#000000")}


def flat_overlaps_figure(table: Mapping[str, Any], theory: Mapping[str, Any],
                         fits: Mapping[str, Mapping[str, Any]] | None = None):
    """The minimisers' overlaps against 1/d, per alpha (points: seed means, bars: two standard
    errors), the accurate theory at 1/d = 0 (line and band of three quadrature errors; ``|m| = 0`` on
    the semantic branch) and, for the first alpha, the chosen scaling form (dotted) with its
    limit (square, 95% interval); panel (f): every overlap at the first alpha relative to the
    theory.

    Parameters
    ----------
    table : Mapping[str, Any]
        :func:`stumplib.book.studies.overlaps.overlap_table`'s output.
    theory : Mapping[str, Any]
        :func:`stumplib.book.studies.overlaps.theory_points` at the same alphas.
    fits : Mapping[str, Mapping[str, Any]] or None
        Quantity to :func:`stumplib.book.studies.scaling_forms.choose_form`'s output at the first alpha
        (``None``: no scaling form drawn).

    Returns
    -------
    matplotlib Figure
    """
    from stumplib.book.studies.overlaps import QUANTITIES
    from stumplib.book.studies.scaling_forms import FORMS

    fig, axes = style.panels(6, width=WIDTH, height=2.6)
    ds = np.asarray(table["ds"], dtype=float)
    x = 1 / ds
    xx = np.linspace(0, x.max(), 50)
    for ax, k in zip(axes, QUANTITIES):
        for i, a in enumerate(table["alphas"]):
            col = _FW_COLORS[i % len(_FW_COLORS)]
            m, se = table[k][i], table[f"{k}_se"][i]
            ok = np.isfinite(m)
            ax.errorbar(x[ok], m[ok], yerr=2 * se[ok], fmt="o", ms=3, color=col, capsize=2,
                        label=rf"$\alpha$ = {a:.4g}")
            t = 0.0 if k == "abs_m" else float(theory[k][i])
            e = 0.0 if k == "abs_m" else float(theory[f"{k}_err"][i])
            ax.plot([0, x.max()], [t, t], "-", color=col, lw=1)
            ax.fill_between([0, x.max()], t - 3 * e, t + 3 * e, color=col, alpha=0.25, lw=0)
            if i == 0 and fits is not None and k in fits:
                f = fits[k]
                X = np.column_stack([np.ones_like(xx)] + FORMS[f["form"]](np.maximum(1 / np.maximum(xx, 1e-12), 1)))
                ax.plot(xx, X @ f["fits"][f["form"]]["coef"], ":", color=col, lw=1.2)
                lim = f["limit"]
                ax.errorbar([0], [lim.value], yerr=[[lim.value - lim.lo], [lim.hi - lim.value]], fmt="s",
                            ms=4, color=col, capsize=2)
        ax.set_xlabel(r"$1/d$")
        ax.set_ylabel(_FW_LABELS[k])
        ax.set_xlim(-0.05 * x.max(), 1.1 * x.max())
    ax = axes[5]
    for j, k in enumerate(("train_loss", "theta", "q", "test_error")):
        t = float(theory[k][0])
        m, se = table[k][0] / t - 1, table[f"{k}_se"][0] / t
        ok = np.isfinite(m)
        ax.errorbar(x[ok] * (1 + 0.03 * (j - 1.5)), 100 * m[ok], yerr=200 * se[ok], fmt="o-", ms=3,
                    capsize=2, color=_FW_COLORS[j], label=_FW_LABELS[k].split(" $")[0].split(" per")[0])
    ax.axhline(0, color="k", lw=0.8)
    ax.set_xlabel(r"$1/d$")
    ax.set_ylabel("relative to the theory (%)")
    ax.set_title(rf"$\alpha$ = {table['alphas'][0]:.4g}", fontsize=style.MIN_FONT_PT)
    ax.legend(fontsize=LEGEND, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.3))
    axes[0].legend(fontsize=LEGEND)
    style.label_panels(axes)
    plt.close(fig)
    return fig


def _centred(E: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Seed mean and standard error of curves ``E`` (R, T) after removing each curve's mean."""
    E0 = E - E.mean(1, keepdims=True)
    return E0.mean(0), E0.std(0, ddof=1) / np.sqrt(E.shape[0])


def flat_landscape_figure(land: Mapping[int, Mapping[str, Any]], held: Mapping[str, Any],
                          minima: Mapping[str, Any], *, theory_theta: float,
                          appendix: Mapping[str, Any] | None = None):
    """The landscape along theta.

    (a) The constrained training loss (theta held) per d: seed mean of each seed's curve minus
    its own mean, shifted so that its minimum is 0 (band: two standard errors), with the theory's
    (theta held by a multiplier; band: two standard errors over scramblings) and, dashed, Appendix
    D's line (q from the unconstrained update) where given. (b) The test error along the same line.
    (c) Where the minimum lies against 1/d: the minimisers from ``Q = Q*``, the lowest minimisers
    found, the seed-mean curve's minimum, and the theory's root. (d) Curvature of the loss at its
    minimum, left and right of it, per d and in the theory.

    Parameters
    ----------
    land : Mapping[int, Mapping[str, Any]]
        ``{d: landscape output}`` (:func:`stumplib.book.studies.lowest_summary.as_landscape`).
    held : Mapping[str, Any]
        :func:`stumplib.book.studies.held_theory.held_theory`'s output.
    minima : Mapping[str, Any]
        ``ds`` and Estimates per d: ``free``, ``best``, ``mean_curve_min``, ``curvature_left``,
        ``curvature_right`` (lists over ``ds``), ``theory_left``, ``theory_right`` (Estimates).
    theory_theta : float
        The accurate theory's theta.
    appendix : Mapping[str, Any] or None
        :func:`stumplib.phase.replica.theta_profile`'s output (Appendix D's line; ``None``: not
        drawn).

    Returns
    -------
    matplotlib Figure
    """
    fig, axes = style.panels(4, width=WIDTH, height=2.9)
    ds = sorted(land)
    th_h = np.asarray(held["thetas"])
    for i, d in enumerate(ds):
        col = _FW_COLORS[i % len(_FW_COLORS)]
        L = land[d]
        th = np.asarray(L["thetas"])
        m, se = _centred(np.asarray(L["train_loss"]))
        c = np.polyval(np.polyfit(th, m, 3), np.linspace(th.min(), th.max(), 200)).min()
        axes[0].fill_between(th, 1e6 * (m - c - 2 * se), 1e6 * (m - c + 2 * se), color=col, alpha=0.2, lw=0)
        axes[0].plot(th, 1e6 * (m - c), "o-", ms=3, color=col, label=f"d = {d} ({len(L['seeds'])} seeds)")
        te = np.asarray(L["test_error"])
        axes[1].errorbar(th, te.mean(0), yerr=2 * te.std(0, ddof=1) / np.sqrt(te.shape[0]), fmt="o-", ms=3,
                         color=col, capsize=2, label=f"d = {d}")
    mh, seh = _centred(np.asarray(held["train_loss"]))
    c = np.polyval(np.polyfit(th_h, mh, 3), np.linspace(th_h.min(), th_h.max(), 200)).min()
    axes[0].fill_between(th_h, 1e6 * (mh - c - 2 * seh), 1e6 * (mh - c + 2 * seh), color="k", alpha=0.15, lw=0)
    axes[0].plot(th_h, 1e6 * (mh - c), "k-", lw=1.5, label=r"theory, $\theta$ held")
    if appendix is not None:
        ta, ea = np.asarray(appendix["theta"]), np.asarray(appendix["train_loss"])
        ea = ea - ea.mean() + (mh.mean() if np.allclose(ta, th_h) else 0)
        ca = np.polyval(np.polyfit(ta, ea, 3), np.linspace(ta.min(), ta.max(), 200)).min()
        top = axes[0].get_ylim()[1]
        axes[0].plot(ta, 1e6 * (ea - ca), "k--", lw=1, label="theory, Appendix D's line")
        axes[0].set_ylim(top=1.3 * top)  # Appendix D's line leaves the panel
    te_h = np.asarray(held["test_error"])
    axes[1].plot(th_h, te_h.mean(0), "k-", lw=1.5, label="theory")
    for ax in axes[:2]:
        ax.axvline(theory_theta, color="k", ls=":", lw=1)
        ax.set_xlabel(r"semantic overlap $\theta$ (held)")
    axes[0].set_ylabel(r"$E(\theta) - E_{\min}$ ($10^{-6}$)")
    axes[1].set_ylabel("test error per sample")
    ax = axes[2]
    x = 1 / np.asarray(minima["ds"], dtype=float)
    for j, (key, lab) in enumerate((("free", r"minimisers from $Q = Q^\star$"), ("best", "lowest minima found"),
                                    ("mean_curve_min", "minimum of the mean curve"))):
        est = minima[key]
        v = np.array([e.value for e in est])
        lo, hi = np.array([e.lo for e in est]), np.array([e.hi for e in est])
        ax.errorbar(x * (1 + 0.04 * (j - 1)), v, yerr=[v - lo, hi - v], ms=4, capsize=2, ls="-", lw=0.8,
                    label=lab, **_KIND_STYLE[key])
    ax.axhline(theory_theta, color="k", lw=1.2, label="theory's root")
    ax.set_xlim(0, 1.15 * x.max())
    ax.set_xlabel(r"$1/d$")
    ax.set_ylabel(r"$\theta$ at the minimum")
    ax = axes[3]
    for j, (side, col, mk) in enumerate((("left", "#000000", "<"), ("right", "#7F7F7F", ">"))):
        est = minima[f"curvature_{side}"]
        v = np.array([e.value for e in est])
        lo, hi = np.array([e.lo for e in est]), np.array([e.hi for e in est])
        ax.errorbar(x * (1 + 0.04 * (2 * j - 1)), v, yerr=[v - lo, hi - v], fmt=mk, ms=4, capsize=2,
                    color=col, label=f"{side} of the minimum")
        t = minima[f"theory_{side}"]
        ax.axhspan(t.lo, t.hi, color=col, alpha=0.15, lw=0)
        ax.axhline(t.value, color=col, lw=1, ls="-" if side == "left" else "--")
    ax.set_xlim(0, 1.15 * x.max())
    ax.set_xlabel(r"$1/d$ (lines, bands: theory)")
    ax.set_ylabel(r"curvature $d^2 E / d\theta^2$")
    hl = [ax_.get_legend_handles_labels() for ax_ in (axes[0], axes[2], axes[3])]
    fig.legend(sum((h for h, _ in hl), []), sum((lab for _, lab in hl), []),
               loc="outside lower center", ncol=2, fontsize=LEGEND)  # 2 columns fit 7 inches
    style.label_panels(axes)
    plt.close(fig)
    return fig


def lowest_minima_figure(summ: Mapping[str, Any], limits: Mapping[str, Any],
                         searches: Mapping[int, Mapping[str, Any]], *, accurate: float,
                         accurate_err: float, published: float, theory_theta: float,
                         published_theta: float = float("nan"), theory_theta_err: float = 0.0,
                         reach: float = 2.0):
    """The lowest minima against the theory, and how saturated their search is.

    (a) Test error against ``1/d``: the minimisers from ``Q = Q*`` (open grey) and the lowest
    minima found (filled black), seed means with two standard errors; the chosen approach form of
    the lowest minima (dotted) and the limit at ``1/d = 0`` of every acceptable form (squares,
    the chosen one filled, the others open and set to the left, each with a bar of ``reach``
    combined standard errors: its own fit's standard error and the accurate theory's quadrature
    error, the denominator of its z-score, so a bar reaches the accurate theory exactly when
    ``|z| <= reach``, the rule's "follows"); the accurate theory (line, band: three quadrature
    errors) and the published one (dashed). (b) theta the same way (the published theta dashed).
    (c) Saturation: the share of seeds whose lowest minimum had been found after ``k`` starts, per
    ``d`` (the vertical line: half the starts; integer ticks).

    Parameters
    ----------
    summ : Mapping[str, Any]
        :func:`stumplib.book.studies.lowest_summary.summary`'s output.
    limits : Mapping[str, Any]
        :func:`stumplib.book.studies.lowest_summary.limits`' output.
    searches : Mapping[int, Mapping[str, Any]]
        ``{d: search records, seeds stacked}``.
    accurate, accurate_err, published : float
        The theories' test errors at this alpha (the accurate one with its quadrature error).
    theory_theta : float
        The accurate theory's theta.
    published_theta : float, optional
        The published theory's theta (dashed in (b); NaN: not drawn).
    theory_theta_err : float, optional
        The accurate theory's quadrature error of theta (one standard error; default 0).
    reach : float, optional
        The bars' half-width in combined standard errors: the ``follow`` threshold of chapter 6's
        rule (claim ``lowest_min``, 2).

    Returns
    -------
    matplotlib Figure
    """
    from stumplib.book.studies.scaling_forms import FORMS

    fig, axes = style.panels(3, width=WIDTH, height=3.2)
    x = 1 / np.asarray(summ["ds"], dtype=float)
    xx = np.linspace(0, 1.1 * x.max(), 200)
    for ax, q, unit, t_err in ((axes[0], "test_error", 1e3, accurate_err),
                               (axes[1], "theta", 1.0, theory_theta_err)):
        for j, (which, lab) in enumerate((("informed", r"from $Q = Q^\star$"),
                                         ("lowest", "lowest minimum found"))):
            m, se = np.asarray(summ[f"{which}_{q}"]), np.asarray(summ[f"{which}_{q}_se"])
            st = _KIND_STYLE["free" if which == "informed" else "best"]
            ax.errorbar(x * (1 + 0.03 * (2 * j - 1)), unit * m, yerr=2 * unit * se, ms=4,
                        capsize=2, ls="none", label=lab, **st)
        f = limits.get(f"lowest_{q}")
        if f is not None:
            coef = np.asarray(f["fits"][f["form"]]["coef"])
            X = np.column_stack([np.ones_like(xx[1:])] + FORMS[f["form"]](1 / xx[1:]))
            ax.plot(xx[1:], unit * (X @ coef), ":", color="#000000", lw=1,
                    label=f"lowest: {f['form']} fit")
            order = [f["form"]] + [g for g in f["acceptable"] if g != f["form"]]
            for j, g in enumerate(order):  # each acceptable form's limit, its own fit's SE
                e = f["fits"][g]["limit"]
                half = reach * float(np.hypot(float(f["fits"][g]["se"]), float(t_err)))
                ax.errorbar([-0.025 * x.max() * j], [unit * e.value], yerr=unit * half,
                            fmt="s", color="#000000", mfc="#000000" if j == 0 else "white", ms=5,
                            capsize=3, label=(rf"limit at $1/d = 0$ $\pm$ {reach:g} SE, per form"
                                              if j == 0 else None))
        ax.set_xlim(-0.08 * x.max(), 1.1 * x.max())
        ax.xaxis.set_major_locator(MaxNLocator(3))  # 11-pt tick labels side by side
        ax.set_xlabel(r"$1/d$")
    t_acc = 1e3 * accurate
    axes[0].axhspan(t_acc - 3e3 * accurate_err, t_acc + 3e3 * accurate_err, color=style.COLORS["semantic"],
                    alpha=0.25, lw=0)
    axes[0].axhline(t_acc, color=style.COLORS["semantic"], lw=1.2, label="accurate theory")
    if np.isfinite(published):
        axes[0].axhline(1e3 * published, color=style.COLORS["semantic"], ls="--", lw=1,
                        label="published theory")
    axes[0].set_ylabel(r"test error per sample ($10^{-3}$)")
    axes[1].axhline(theory_theta, color=style.COLORS["semantic"], lw=1.2)
    if np.isfinite(published_theta):
        axes[1].axhline(published_theta, color=style.COLORS["semantic"], ls="--", lw=1)
    axes[1].set_ylabel(r"semantic overlap $\theta$")
    ax = axes[2]
    K = 1
    for i, d in enumerate(sorted(searches)):
        r = searches[d]
        lab = np.asarray(r["label"])
        low = np.asarray(r["lowest"], int).reshape(lab.shape[0])
        K = lab.shape[1]
        target = lab[np.arange(lab.shape[0]), np.maximum(low, 0)]
        found = np.cumsum(lab == target[:, None], axis=1) > 0
        ax.step(np.arange(1, K + 1), found.mean(0), where="post", color=_FW_COLORS[i % len(_FW_COLORS)],
                label=f"d = {d} ({lab.shape[0]} seeds)")
    ax.axvline(np.ceil(K / 2), color="#7F7F7F", ls=":", lw=1)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # starts are counted
    ax.set_xlabel("starts tried")
    ax.set_ylabel("share of seeds at their lowest")
    ax.set_ylim(0, 1.05)
    style.legend(axes[0], fontsize=LEGEND)
    style.legend(axes[2], fontsize=LEGEND, ncol=2, locations=("lower right", "center right"))
    style.label_panels(axes)
    style.finish(fig)
    plt.close(fig)
    return fig
