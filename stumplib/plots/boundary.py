"""Figures of chapter 5 (the boundary limitation and reflected symmetrization)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from stumplib.core import style
from stumplib.stump.boundary import exact_mse, side_empty_probability

CURVES = ("one-head", "reflected", "symmetrized", "boundary-aware", "Bayes")


def profiles(PROF, head, N_grid, N_ref):
    """MSE x N^2 against the threshold at two context sizes, and the upper boundary layer for every
    ``N`` (2 + 1 panels). ``PROF[head, N]`` holds ``tau``, ``beta``, ``b`` and per estimator
    ``(mse, se)`` (chapter 5's profile records)."""
    C = style.COLORS
    fig, axes = style.panels(3, height=3.0)
    pair = [N_grid[0], N_ref] if N_ref != N_grid[0] else [N_grid[0], N_grid[-1]]
    for ax, N in zip(axes[:2], pair):
        rec = PROF[head, N]
        tg = rec["tau"]
        for name in CURVES:
            bayes, aware = name == "Bayes", name == "boundary-aware"
            # the boundary-aware curve lies on the Bayes one: markers on top keep it visible
            ax.plot(tg, rec[name][0] * N ** 2, "--" if bayes else "-", color=C[name],
                    lw=2.2 if bayes else 1.4, marker="o" if aware else None, ms=3.5,
                    markevery=max(len(tg) // 15, 1), mfc="none", zorder=4 if aware else 3 if bayes else 2,
                    label=name + (" = midpoint" if bayes else "") + (" (circles)" if aware else ""))
        if head == "sharp":
            ax.plot(tg, exact_mse("one-head", tg, N) * N ** 2, ":", color="k", lw=1,
                    label=r"exact, $\beta\to\infty$")
            ax.plot(tg, exact_mse("midpoint", tg, N) * N ** 2, ":", color="k", lw=1)
        ax.axhline(2.0, color="0.5", lw=0.8, ls="-.")
        ax.axhline(0.5, color="0.5", lw=0.8, ls="-.")
        ax.set_yscale("log")
        ax.set_ylim(1e-3, 2 * N ** 2)  # room for the legend below the Bayes level
        ax.set_xlabel(r"threshold $\tau$")
        ax.set_title(rf"$N = {N}$, $\beta = {rec['beta']:.0f}$, $c = {rec['b'] / rec['beta']:.3f}$",
                     fontsize=10)
    axes[0].set_ylabel(r"MSE $\times N^2$")
    style.legend(axes[0], loc="lower center", ncol=2)
    axes[1].sharey(axes[0])
    ax = axes[2]  # the upper boundary layer for every N, against the expected number of positives
    cmap = plt.get_cmap("viridis")
    for i, N in enumerate(N_grid):
        rec = PROF[head, N]
        s_ = N * (1 - rec["tau"])
        sel = s_ <= 12
        colr = cmap(i / max(len(N_grid) - 1, 1))
        ax.plot(s_[sel], rec["one-head"][0][sel], "-", color=colr, lw=1.4, label=rf"$N={N}$")
        ax.plot(s_[sel], rec["boundary-aware"][0][sel], "--", color=colr, lw=1.2)
    sg = np.linspace(0, 12, 200)
    ax.plot(sg, np.exp(-sg), "k:", lw=1.4, label=r"$e^{-N(1-\tau)}$")
    ax.set_yscale("log")
    ax.set_xlim(0, 12)
    ax.set_xlabel(r"expected positives $N(1-\tau)$")
    ax.set_ylabel("MSE (not rescaled)")
    ax.set_title("upper end: one-head (solid), boundary-aware (dashed)", fontsize=9)
    style.legend(ax, loc="upper right")
    style.label_panels(axes)
    style.finish(fig)
    plt.close(fig)
    return fig


def mechanism(PROF, tau_r, err_r, k, N_grid, N_ref):
    """(a) P(no positive) against N(1 - tau), (b) errors at ``tau_r[k]`` (about 1 - 1/N), (c) the
    one-head MSE split by whether the positive side is empty (2 + 1 panels)."""
    C = style.COLORS
    fig, axes = style.panels(3, height=3.0)
    ax = axes[0]
    for N in N_grid:
        rec = PROF["sharp", N]
        tg = rec["tau"]
        s = N * (1 - tg)
        sel = s <= 8
        ax.plot(s[sel], rec["p_no_pos"][sel], "o", ms=3, alpha=0.7, label=rf"$N={N}$ (counted)")
        ax.plot(s[sel], side_empty_probability(tg[sel], N)["no_positive"], "-", lw=0.8, color="0.4")
    sg = np.linspace(0, 8, 200)
    ax.plot(sg, np.exp(-sg), "k--", lw=1.5, label=r"tail $e^{-N(1-\tau)}$")
    ax.set_yscale("log"); ax.set_ylim(1e-4, 1.5)
    ax.set_xlabel(r"expected positives $N(1-\tau)$")
    ax.set_ylabel("P(no positive example)")
    style.legend(ax)

    ax = axes[1]
    bins = np.concatenate([-np.geomspace(1.05 * N_ref, 2.0, 40)[:-1], np.linspace(-2.0, 2.0, 41)])
    for name in ("one-head", "reflected", "boundary-aware"):
        e = err_r[name][k].cpu().numpy() * N_ref
        ax.hist(e, bins=bins, histtype="step", color=C[name], lw=1.4, label=name, density=True)
    ax.set_yscale("log")
    ax.set_xscale("symlog", linthresh=2.0)
    ax.axvline(N_ref * (1 - float(tau_r[k])), color="k", ls=":", lw=1, label=r"$N(1-\tau)$")
    ax.set_xlabel(r"error $\times N$ (symlog)")
    ax.set_ylabel("density")
    ax.set_title(rf"$N = {N_ref}$, $\tau = 1 - 1/N$", fontsize=10)
    style.legend(ax, loc="upper left")

    ax = axes[2]
    e2 = err_r["one-head"] ** 2
    empty = (err_r["n_pos"] == 0).double()
    part_empty = (e2 * empty).mean(1).cpu().numpy() * N_ref ** 2
    part_full = (e2 * (1 - empty)).mean(1).cpu().numpy() * N_ref ** 2
    tg = tau_r.cpu().numpy()
    s = N_ref * (1 - tg)
    sel = (s <= 12) & (s > 0)
    pe_ = np.where(part_empty > 0, part_empty, np.nan)
    ax.plot(s[sel], pe_[sel], "o-", ms=3, color=C["one-head"], label="contexts with no positive example")
    ax.plot(s[sel], part_full[sel], "s-", ms=3, color=C["min positive"], label="the other contexts")
    th = tg[sel] ** (N_ref + 2) * N_ref / (N_ref + 2) * N_ref ** 2
    ax.plot(s[sel], th, "k:", lw=1.2, label=r"$\tau^{N+2} N/(N+2)$, $\times N^2$")
    ax.set_yscale("log")
    ax.set_xlabel(r"expected positives $N(1-\tau)$")
    ax.set_ylabel(r"one-head MSE $\times N^2$, by part")
    style.legend(ax)
    style.label_panels(axes)
    style.finish(fig)
    plt.close(fig)
    return fig


def _errorbars(ax, x, ests, fmt, col, **kw):
    v = np.array([e.value for e in ests])
    lo = np.array([e.lo for e in ests])
    hi = np.array([e.hi for e in ests])
    ax.errorbar(x, v, yerr=[v - lo, hi - v], fmt=fmt, color=col, capsize=2, **kw)


def ratios(sweep, PROF, N_grid, N_ref, c_sharp):
    """Interior MSE ratios (a) against the sharpness beta/N at ``N_ref`` (``sweep``: rows
    ``(beta/N, one-head/sym, sym/Bayes)``), (b) against N for the sharp and trained heads."""
    C = style.COLORS
    fig, axes = style.panels(2, height=3.2)
    ax = axes[0]
    rs = np.array([s[0] for s in sweep])
    for j, (lab, col, ref) in enumerate([("one-head / symmetrized", C["one-head"], 4.0),
                                         ("symmetrized / Bayes", C["symmetrized"], 1.0)]):
        _errorbars(ax, rs, [s[1 + j] for s in sweep], "o-", col, label=lab)
        ax.axhline(ref, color=col, ls=":", lw=1)
    ax.axvline(10, color="0.5", ls="--", lw=1, label=r"$\beta = 10N$")
    ax.set_xscale("log"); ax.set_yscale("log")
    ax.set_xlabel(r"sharpness $\beta / N$")
    ax.set_ylabel("interior MSE ratio")
    ax.set_title(rf"$N = {N_ref}$, $c = {c_sharp}$", fontsize=10)
    style.legend(ax)
    ax = axes[1]
    for head, mk in (("sharp", "o"), ("trained", "s")):
        for key, col, lab in [("ratio_sym", C["one-head"], "one-head / symmetrized"),
                              ("ratio_bayes", C["symmetrized"], "symmetrized / Bayes")]:
            _errorbars(ax, N_grid, [PROF[head, N][key] for N in N_grid], mk + ("-" if head == "sharp" else "--"),
                       col, mfc="white" if head == "trained" else col, label=f"{lab} ({head})")
    ax.axhline(4.0, color=C["one-head"], ls=":", lw=1)
    ax.axhline(1.0, color=C["symmetrized"], ls=":", lw=1)
    ax.set_xscale("log", base=2); ax.set_yscale("log")
    ax.set_xlabel(r"context size $N$")
    ax.set_ylabel("interior MSE ratio")
    style.legend(ax)
    style.label_panels(axes)
    style.finish(fig)
    plt.close(fig)
    return fig
