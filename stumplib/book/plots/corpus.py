"""Figures of chapter 3 (one function per figure; each returns the figure)."""
from __future__ import annotations

import numpy as np

from stumplib.book import style

C = style.COLORS
_BASE = [C["attention"], C["midpoint"], C["gd"], C["boundary-aware"], C["reflected"], C["min positive"], C["Bayes"],
         C["population"]]


def _col(i: int) -> str:
    return _BASE[i % len(_BASE)]


def trajectories(t, beta, c, labels, flow_t, flow_beta, flow_c, path_beta, path_c, tau_hi):
    """(a) beta against time for GD runs and the flow; (b) the runs in the (beta, c) plane.

    Parameters
    ----------
    t : np.ndarray, shape ``(K,)``
        Times ``t = eta x steps`` of the GD records (the first, ``t = 0``, skipped in (a)).
    beta, c : np.ndarray, shape ``(R, K)``
        Attention scale and relative label score ``c = b / beta`` of the ``R`` GD runs.
    labels : list of str, length ``R``
        The legend label of each run; runs sharing a label share a colour and one legend entry.
    flow_t, flow_beta, flow_c : np.ndarray, shape ``(F,)``
        The population gradient flow: times, scale and relative label score (dashed).
    path_beta, path_c : np.ndarray, shape ``(P,)``
        The calibrated path ``c*(beta)``, drawn in (b).
    tau_hi : float
        Upper end of the threshold prior, in ``(0, 1]``; a dotted line in (b).

    Returns
    -------
    matplotlib.figure.Figure
        Two panels, half a column each.
    """
    fig, (a0, a1) = style.figure(ncols=2, width=style.COLUMN_WIDTH / 2, height=3.3)
    keys = list(dict.fromkeys(labels))
    for r, lab in enumerate(labels):
        col = _col(keys.index(lab))
        first = labels.index(lab) == r
        a0.loglog(t[1:], beta[r, 1:], color=col, lw=1.3, label=lab if first else None)
        a1.semilogx(beta[r], c[r], color=col, lw=1.3, label=lab if first else None)
    a0.loglog(flow_t, flow_beta, "--", color=C["population"], lw=1.8, label="population gradient flow")
    a0.set_xlabel(r"time $t = \eta \times$ steps")
    a0.set_ylabel(r"attention scale $\beta$")
    style.legend(a0)
    a1.semilogx(flow_beta, flow_c, "--", color=C["population"], lw=1.8, label="population gradient flow")
    a1.semilogx(path_beta, path_c, color=C["Bayes"], lw=1, label=r"calibrated path $c^*(\beta)$")
    a1.axhline(tau_hi, color=C["Bayes"], ls=":", lw=1, label=r"$\tau_{hi}$")
    a1.set_xlabel(r"attention scale $\beta$")
    a1.set_ylabel(r"relative label score $c = b/\beta$")
    style.legend(a1)
    style.label_panels([a0, a1])
    style.finish(fig)
    return fig


def transfer_curves(series, P, E, level):
    """Path-based relative error along the progress direction: (a) m varied, (b) n varied.

    Parameters
    ----------
    series : dict
        ``{"m": shapes, "n": shapes}``: the ``(m, n)`` shapes of each panel, one line each.
    P : dict
        Maps a shape ``(m, n)`` to its profile along the population path (``beta``, shape
        ``(B,)``, and ``curve(which="along")``, the RMS relative gradient error, shape ``(B,)``).
    E : dict
        Maps a shape to the scale where its error crosses ``level`` (a vertical line; NaN: none).
    level : float
        The tolerated relative error (positive, e.g. 0.05), a dashed horizontal line.

    Returns
    -------
    matplotlib.figure.Figure
        Two panels sharing the y axis.
    """
    fig, axes = style.figure(ncols=2, width=style.COLUMN_WIDTH / 2, height=3.3, sharey=True)
    for ax, key, title in zip(axes, ("m", "n"), ("m varied", "n varied")):
        for i, sh in enumerate(series[key]):
            p = P[sh]
            ax.loglog(p.beta, p.curve(which="along"), "-", color=_col(i), lw=1.6, label=rf"$m\times n$ = {sh[0]}x{sh[1]}")
            if np.isfinite(E[sh]):
                ax.axvline(E[sh], color=_col(i), lw=0.8, alpha=0.6)
        ax.axhline(level, color="k", lw=1, ls="--", label=f"level {level:g}")
        ax.set_xlabel(r"scale $\beta$ on the population path")
        ax.set_title(title)
        style.legend(ax)
    axes[0].set_ylabel("RMS relative gradient error")
    style.label_panels(axes)
    style.finish(fig)
    return fig


def own_tracking(profiles, level, scales_path, scales_own, censored, mn):
    """(a) own-calibration RMS error curves against beta/(m∧n); (b) both scales against m∧n.

    ``profiles``: list of (label, OwnProfile); ``scales_*`` arrays over the shapes of (b).

    Parameters
    ----------
    profiles : list of (str, OwnProfile)
        A legend label and an own-calibration profile (``beta``, shape ``(B,)``, and
        ``curve("rms")``, the RMS relative error of the reduced gradient, shape ``(B,)``) per line.
    level : float
        The tolerated relative error (positive), a dashed horizontal line in (a).
    scales_path : np.ndarray, shape ``(S,)``
        The path-based scale ``beta*`` per shape of (b) (NaN where not certified; not drawn).
    scales_own : np.ndarray, shape ``(S,)``
        The own-calibration tracking scale per shape (NaN where not measured).
    censored : np.ndarray of bool, shape ``(S,)``
        Where ``scales_own`` is only a lower bound (open triangles).
    mn : np.ndarray, shape ``(S,)``
        ``min(m, n)`` of each shape, the x axis of (b).

    Returns
    -------
    matplotlib.figure.Figure
        Two panels, half a column each.
    """
    fig, (a0, a1) = style.figure(ncols=2, width=style.COLUMN_WIDTH / 2, height=3.3)
    for i, (lab, p) in enumerate(profiles):
        a0.loglog(p.beta, p.curve("rms"), "-", color=_col(i), lw=1.4, label=lab)
    a0.axhline(level, color="k", lw=1, ls="--", label=f"level {level:g}")
    a0.set_xlabel(r"scale $\beta$ (each corpus at its own calibrated $c$)")
    a0.set_ylabel("RMS relative error, reduced gradient")
    style.legend(a0)
    ok = np.isfinite(scales_path)
    a1.set_xscale("log", base=2)
    a1.set_yscale("log")
    a1.plot(mn[ok], scales_path[ok], "o", color=C["attention"], label=r"path-based $\beta^*$ (certificate)")
    unc = np.isfinite(scales_own) & ~censored
    if unc.any():
        a1.plot(mn[unc], scales_own[unc], "s", color=C["gd"], label="own-calibration scale")
    if np.any(censored):
        a1.plot(mn[censored], scales_own[censored], "^", color=C["gd"], mfc="none", ms=8,
                label="own-calibration scale, lower bound")
    xx = np.geomspace(mn.min(), mn.max(), 10)
    a1.plot(xx, xx, ":", color=C["Bayes"], lw=1, label=r"$\beta = m\wedge n$")
    a1.set_xlabel(r"$m\wedge n$")
    a1.set_ylabel(r"scale $\beta$")
    style.legend(a1)
    style.label_panels([a0, a1])
    style.finish(fig)
    return fig


def certified_growth(shapes, beta, lo, hi, fit, own=None, own_censored=None, fit_all=None):
    """beta*(m, n) against m∧n with bootstrap bars and the power law fitted to the worst shape
    (smallest beta*) at each m∧n, the statistic the claim is judged on; optionally the fit over
    every shape (dashed, robustness); the diagonal, m < n and m > n marked apart; optionally the
    own-calibration tracking scale (squares; open triangles: lower bounds). The legend stands below
    the panel, where it covers no data.

    Parameters
    ----------
    shapes : list of (int, int), length ``S``
        The ``(m, n)`` shapes.
    beta, lo, hi : np.ndarray, shape ``(S,)``
        ``beta*`` per shape and its bootstrap interval (NaN: no certified interval; not drawn).
    fit : PowerLawFit or None
        The power-law fit in m∧n of the worst shape at each m∧n (callable, ``slope``, ``ci``);
        ``None`` (fewer than two distinct m∧n) draws no fit line.
    own : np.ndarray, shape ``(S,)``, optional
        The own-calibration scale per shape (NaN where not measured); ``None``: not drawn.
    own_censored : np.ndarray of bool, shape ``(S,)``, optional
        Whether each ``own`` is a lower bound; required when ``own`` is given.
    fit_all : PowerLawFit or None, optional
        The fit over every shape, drawn dashed as robustness (``None``: not drawn).

    Returns
    -------
    matplotlib.figure.Figure
        :data:`stumplib.book.style.COLUMN_WIDTH` wide.
    """
    fig, ax = style.figure(width=style.COLUMN_WIDTH, height=3.9)
    mn = np.array([min(s) for s in shapes], float)
    groups = (("m = n", [s[0] == s[1] for s in shapes], "o"),
              ("m < n", [s[0] < s[1] for s in shapes], "v"),
              ("m > n", [s[0] > s[1] for s in shapes], "^"))
    for i, (lab, sel, mk) in enumerate(groups):
        sel = np.array(sel) & np.isfinite(beta)
        if sel.any():
            ax.errorbar(mn[sel], beta[sel], yerr=[beta[sel] - lo[sel], hi[sel] - beta[sel]], fmt=mk,
                        color=_col(i), ms=6, capsize=3, label=rf"$\beta^*$, {lab}")
    xx = np.geomspace(mn.min(), mn.max(), 20)
    if fit is not None:  # None: fewer than two distinct m∧n (a token run)
        ax.plot(xx, fit(xx), "-", color=C["population"], lw=1.2,
                label=rf"worst-shape fit, slope {fit.slope:.2f} [{fit.ci[0]:.2f}, {fit.ci[1]:.2f}]")
    if fit_all is not None:
        ax.plot(xx, fit_all(xx), "--", color="0.45", lw=1.0,
                label=rf"all-shape fit, slope {fit_all.slope:.2f}")
    if own is not None:
        unc = np.isfinite(own) & ~own_censored
        if unc.any():
            ax.plot(mn[unc], own[unc], "s", color=C["gd"], label="own-calibration scale")
        if np.any(own_censored):
            ax.plot(mn[own_censored], own[own_censored], "^", color=C["gd"], mfc="none", ms=8,
                    label="own-calibration scale, lower bound")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(r"$m\wedge n$")
    ax.set_ylabel(r"scale $\beta$")
    h, lab = ax.get_legend_handles_labels()
    order = sorted(range(len(lab)), key=lambda i: not lab[i].startswith(r"$\beta^*$"))  # beta* first
    fig.legend([h[i] for i in order], [lab[i] for i in order], loc="outside lower center", ncols=2,
               columnspacing=1.0, handlelength=1.6)  # two columns within the 7-inch column
    style.finish(fig)
    return fig
