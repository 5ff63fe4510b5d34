"""Figures of chapter 2 (population dynamics)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from stumplib.stump import exponents as EX
from stumplib.stump import flow as FL
from stumplib.stump import landscape as LA
from stumplib.book import style


def _cycle():
    return plt.rcParams["axes.prop_cycle"].by_key()["color"]


def trajectory(flow, starts, t_cal, field, tau_lo, tau_hi, lb_top):
    """Trajectories in the ``(c, log10 beta)`` plane over the streamlines of the gradient field.

    Each run is dashed before its calibration time, solid after, with a dot at its start and a
    star at its calibration point; the valley ``c*(beta)`` and the prior are drawn for reference.

    Parameters
    ----------
    flow : stumplib.stump.flow.FlowResult
        Gradient-flow trajectories of ``R`` runs (``c``, ``beta`` of shape ``(R, K)``); run 0 is
        the main start, drawn on top.
    starts : sequence of (float, float)
        The ``R`` starting points ``(beta0, b0)``, named in the legend.
    t_cal : array_like, shape ``(R,)``
        Calibration time of each run (:func:`stumplib.stump.exponents.calibration_time`); NaN or
        infinite where a run never calibrates (then drawn solid throughout, without a star).
    field : dict
        The gradient field on a grid (:func:`stumplib.stump.landscape.gradient_field`): arrays
        ``"c"``, ``"beta"``, ``"dc_dt"``, ``"dlnbeta_dt"``, ``"speed"``, each of shape
        ``(n_beta, n_c)``.
    tau_lo, tau_hi : float
        The prior's interval in ``[0, 1]``.
    lb_top : float
        Upper limit of the ``log10 beta`` axis; the valley is drawn up to ``beta = 10**lb_top``.

    Returns
    -------
    matplotlib.figure.Figure
        The one-panel figure with a speed colour bar (closed, ready to save or glue).
    """
    u = field["dc_dt"] / field["speed"]
    v = field["dlnbeta_dt"] / np.log(10) / field["speed"]
    fig, ax = style.figure(height=4.6)
    strm = ax.streamplot(field["c"][0], np.log10(field["beta"][:, 0]), u, v,
                         color=np.log10(field["speed"]), cmap="Greys", density=1.1, linewidth=0.7,
                         arrowsize=0.8)
    cb = fig.colorbar(strm.lines, ax=ax, pad=0.01)
    cb.set_label(r"$\log_{10}$ speed $|(\dot c, \dot{\ln\beta})|$")
    colors = _cycle()
    for r in reversed(range(len(starts))):  # the main start last, on top
        col, z = colors[r % len(colors)], 5 if r == 0 else 3
        c_r, lb_r = flow.c[r], np.log10(flow.beta[r])
        cal = flow.t <= t_cal[r] if np.isfinite(t_cal[r]) else np.ones_like(flow.t, bool)
        ax.plot(c_r[cal], lb_r[cal], color=col, lw=1.2, ls="--", zorder=z)
        ax.plot(c_r[~cal], lb_r[~cal], color=col, lw=2.6 if r == 0 else 1.6, zorder=z,
                label=rf"start $(\beta_0, b_0) = ({starts[r][0]:g}, {starts[r][1]:g})$"
                + (" (main)" if r == 0 else ""))
        ax.plot(c_r[0], lb_r[0], "o", color=col, ms=5, zorder=z)
        if np.isfinite(t_cal[r]):
            bc, Bc = FL.interpolate_flow(flow, [t_cal[r]], run=r)
            ax.plot(Bc / bc, np.log10(bc), "*", color=col, ms=11, mec="k", mew=0.6, zorder=z + 1)
    bv = np.geomspace(10 / tau_hi, 10 ** lb_top, 200)
    ax.plot(LA.valley_c(bv, tau_hi), np.log10(bv), color=style.COLORS["fit"], lw=1.2, ls=":",
            label=r"valley $c^*(\beta) = \tau_{hi} + \log(\tau_{hi}\beta/2)/\beta$")
    ax.axvline(tau_hi, color="k", lw=0.8)
    ax.axvspan(tau_lo, tau_hi, color="0.85", alpha=0.35, lw=0, label=r"prior $[\tau_{lo}, \tau_{hi}]$")
    ax.set_xlim(-0.1, 1.25)
    ax.set_ylim(-0.35, lb_top)
    ax.set_xlabel(r"relative label score $c = b/\beta$")
    ax.set_ylabel(r"attention scale $\log_{10}\beta$")
    style.legend(ax, loc="upper left")
    style.finish(fig)
    plt.close(fig)
    return fig


def laws(flow, fit_beta, fit_rmse, local, local_rmse, win, t_cal, tau_hi, p_inf=None,
         q_inf=None):
    """(a) beta(t) with its late-window fit, (b) the RMSE with its late-window fit, (c) the local
    exponents: 2 + 1 panels. The legends name the window fits as such and, when given, the
    exponents extrapolated to ``beta -> infinity`` (the chapter's key numbers).

    Parameters
    ----------
    flow : stumplib.stump.flow.FlowResult
        Gradient-flow trajectories recorded at ``K`` times; run 0 is drawn.
    fit_beta, fit_rmse : PowerLawFit
        Power-law fits of ``beta(t)`` and ``RMSE(t)`` of run 0
        (:func:`stumplib.stump.exponents.fit_exponent`): callables of ``t`` with a ``slope``.
    local : np.ndarray, shape ``(K,)``
        Local exponent ``d log beta / d log t`` of run 0 (its first, ``t = 0``, entry skipped).
    local_rmse : np.ndarray, shape ``(K - 1,)``
        Local exponent ``d log RMSE / d log t`` at ``flow.t[1:]`` (drawn negated).
    win : np.ndarray of bool, shape ``(K,)``
        The records in the fit window, where the fits are drawn and which panel (c) shades.
    t_cal : float
        Calibration time of run 0, a dotted vertical line in every panel.
    tau_hi : float
        Upper end of the prior, in ``(0, 1]``; sets the reference ``(8t/(1+tau_hi^2))^{1/4}``.
    p_inf, q_inf : float, optional
        The exponents of ``beta`` and the RMSE extrapolated to ``beta -> infinity``, named in the
        legends of (a) and (b) (``None``: not named).

    Returns
    -------
    matplotlib.figure.Figure
        The three-panel figure (closed, ready to save or glue).
    """
    fig, axes = style.panels(3)
    tt, tw = flow.t[1:], flow.t[win]
    t_max = flow.t[-1]
    ax = axes[0]
    ext = rf"; extrapolated $p_\infty = {p_inf:.4f}$" if p_inf is not None else ""
    ax.loglog(tt, flow.beta[0][1:], color=style.COLORS["population"],
              label=rf"flow $\beta(t)${ext}")
    ax.loglog(tw, fit_beta(tw), color=style.COLORS["fit"], ls="--",
              label=rf"late-window fit $\propto t^{{{fit_beta.slope:.3f}}}$")
    ax.loglog(tt, (LA.scale_constant(tau_hi) * tt) ** 0.25, color="0.5", ls=":", lw=1.2,
              label=r"$(8t/(1+\tau_{hi}^2))^{1/4}$")
    ax.set_ylim(flow.beta[0].min() / 1.5, flow.beta[0].max() * 1.5)
    ax.set_xlabel("flow time $t$"); ax.set_ylabel(r"attention scale $\beta$")
    ax = axes[1]
    ext = rf"; extrapolated $q_\infty = {q_inf:.4f}$" if q_inf is not None else ""
    ax.loglog(tt, flow.rmse[0][1:], color=style.COLORS["population"],
              label=rf"flow RMSE$(t)${ext}")
    ax.loglog(tw, fit_rmse(tw), color=style.COLORS["fit"], ls="--",
              label=rf"late-window fit $\propto t^{{{fit_rmse.slope:.3f}}}$")
    ax.set_xlabel("flow time $t$"); ax.set_ylabel(r"threshold RMSE $\sqrt{L}$")
    ax = axes[2]
    ax.semilogx(tt, local[1:], color=style.COLORS["population"], label=r"$d\log\beta/d\log t$")
    ax.semilogx(tt, -local_rmse, color=style.COLORS["attention"], ls="-.",
                label=r"$-d\log\mathrm{RMSE}/d\log t$")
    ax.axhline(0.25, color="0.45", lw=1.0, ls="--", label="1/4")
    ax.axvspan(tw.min(), t_max, color="0.9", alpha=0.5, lw=0, label="fit window")
    ax.set_ylim(0.0, 0.6)
    ax.set_xlabel("flow time $t$"); ax.set_ylabel("local exponent")
    for a in axes:
        a.axvline(t_cal, color=style.COLORS["gd"], lw=0.8, ls=":")
    for a in axes:
        style.legend(a)
    style.label_panels(axes)
    style.finish(fig)
    plt.close(fig)
    return fig


def gd(flow, gd_res, lrs, fracs):
    """Constant-step GD against the flow from the main start: (a) scale, (b) relative label score.

    Parameters
    ----------
    flow : stumplib.stump.flow.FlowResult
        Gradient-flow trajectories; run 0 (the main start) is drawn up to 1.2 times GD's last time.
    gd_res : stumplib.stump.flow.GDResult
        Population GD from the same start with one run per step size (``t``, ``beta``, ``c`` of
        shape ``(len(lrs), K)``; ``t`` is steps times the step size).
    lrs : sequence of float
        The step sizes ``eta`` of the GD runs, named in the legend.
    fracs : sequence of float
        Each step size as a fraction of ``2 / lambda_max`` (the stability limit), for the legend.

    Returns
    -------
    matplotlib.figure.Figure
        The two-panel figure (closed, ready to save or glue).
    """
    fig, axes = style.panels(2)
    colors = _cycle()
    sel = (flow.t > 0) & (flow.t <= gd_res.t.max() * 1.2)
    for ax, key in zip(axes, ["beta", "c"]):
        ax.semilogx(flow.t[sel], getattr(flow, key)[0][sel], color=style.COLORS["population"], lw=2.5,
                    alpha=0.6, label="gradient flow")
        for r, lr in enumerate(lrs):
            ax.semilogx(gd_res.t[r][1:], getattr(gd_res, key)[r][1:], "o", ms=3.2, mfc="none",
                        color=colors[(r + 1) % 8],
                        label=rf"GD, $\eta = {lr:.3g}$ ({fracs[r]:g} of $2/\lambda_{{\max}}$)")
        ax.set_xlabel(r"time $t$ (GD: steps $\times\,\eta$)")
    axes[0].set_yscale("log"); axes[0].set_ylabel(r"attention scale $\beta$")
    yt = [v for v in (1, 2, 3, 5, 10, 20, 30, 50, 100)
          if gd_res.beta.min() / 1.3 <= v <= gd_res.beta.max() * 1.3]
    axes[0].set_yticks(yt); axes[0].set_yticklabels([f"{v:g}" for v in yt])
    axes[0].yaxis.set_minor_formatter(plt.NullFormatter())
    axes[1].axhline(flow.tau_hi, color="k", lw=0.8); axes[1].set_ylabel(r"relative label score $c$")
    style.legend(axes[1])
    style.label_panels(axes)
    style.finish(fig)
    plt.close(fig)
    return fig


def constants(prior_flows):
    """(a) beta^4/t, (b) beta * RMSE, (c) the calibration margin, one colour per prior: 2 + 1 panels.

    Parameters
    ----------
    prior_flows : dict
        Maps a prior ``(tau_lo, tau_hi)`` to ``(flow, starts)``: its
        :class:`stumplib.stump.flow.FlowResult` (run 0 is drawn) and the starts (unused here).
        Panel (a) marks each prior's constant ``8 / (1 + tau_hi^2)``, panel (c) the valley margin.

    Returns
    -------
    matplotlib.figure.Figure
        The three-panel figure (closed, ready to save or glue).
    """
    fig, axes = style.panels(3)
    colors = _cycle()
    for j, ((lo, hi), (fl, _)) in enumerate(prior_flows.items()):
        col, lab, tt = colors[j % 8], rf"prior $[{lo:g}, {hi:g}]$", fl.t[1:]
        axes[0].semilogx(tt, fl.beta[0][1:] ** 4 / tt, color=col, label=lab)
        axes[0].axhline(LA.scale_constant(hi), color=col, ls=":", lw=1.2)
        axes[1].semilogx(tt, fl.beta[0][1:] * fl.rmse[0][1:], color=col, label=lab)
        late = (fl.t >= max(EX.calibration_time(fl)[0], 1e-2)) & (fl.beta[0] > 10 / hi)
        axes[2].loglog(fl.t[late], fl.c[0][late] - hi, color=col, lw=1.4, alpha=0.85, label=lab)
        axes[2].loglog(fl.t[late], LA.valley_c(fl.beta[0][late], hi) - hi, color="k", ls=":",
                       lw=1.3, label=r"$\log(\tau_{hi}\beta(t)/2)/\beta(t)$" if j == 0 else None)
    axes[0].set_ylim(0, 8.5); axes[0].axhline(8, color="k", lw=0.8, ls="--", label="naive 8")
    axes[0].set_ylabel(r"$\beta^4 / t$"); style.legend(axes[0])
    axes[1].axhline(1, color="k", lw=0.8); axes[1].set_ylim(0, 1.8)
    axes[1].set_ylabel(r"$\beta\cdot\mathrm{RMSE}$")
    axes[2].set_ylabel(r"calibration margin $c(t) - \tau_{hi}$"); style.legend(axes[2])
    for a in axes:
        a.set_xlabel("flow time $t$")
    style.label_panels(axes)
    style.finish(fig)
    plt.close(fig)
    return fig
