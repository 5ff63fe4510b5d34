"""Figures of chapter 4 (one function per figure; each returns the figure)."""
from __future__ import annotations

import numpy as np

from stumplib.book import style

C = style.COLORS


def _cycle(k: int) -> list[str]:
    base = [C["attention"], C["midpoint"], C["gd"], C["boundary-aware"], C["reflected"], C["min positive"],
            C["Bayes"], C["population"]]
    return [base[i % len(base)] for i in range(k)]


def head_law(betas, Ns, rmse, fit):
    """The head's law: panel (a) the RMSE against N for each beta with the fitted law, panel (b)
    against beta for each N.

    Parameters
    ----------
    betas : sequence of float, length ``B``
        Attention scales of the head (label score calibrated).
    Ns : sequence of int, length ``KN``
        Context sizes.
    rmse : np.ndarray, shape ``(B, KN)``
        RMSE over fresh contexts at each scale and context size (markers).
    fit : dict
        The fitted law ``sqrt(A beta^(-2p) + B N^(-2q))``: floats ``"A"``, ``"p"``, ``"B"``, ``"q"``
        (lines).

    Returns
    -------
    matplotlib.figure.Figure
        Two panels, half a column each.
    """
    fig, (a0, a1) = style.figure(ncols=2, width=style.COLUMN_WIDTH / 2, height=3.3)
    Bg, Ng = np.meshgrid(betas, Ns, indexing="ij")
    law = lambda b, N: np.sqrt(fit["A"] * b ** (-2 * fit["p"]) + fit["B"] * N ** (-2 * fit["q"]))  # noqa: E731
    Nf = np.geomspace(min(Ns), max(Ns), 60)
    for i, (b, col) in enumerate(zip(betas, _cycle(len(betas)))):
        a0.loglog(Ns, rmse[i], "o", color=col, ms=4, label=rf"$\beta$ = {b:g}")
        a0.loglog(Nf, law(b, Nf), "-", color=col, lw=1)
    a0.set_xlabel("context size $N$")
    a0.set_ylabel("RMSE over fresh contexts")
    style.legend(a0, ncol=2)
    bf = np.geomspace(min(betas), max(betas), 60)
    for k, (N, col) in enumerate(zip(Ns, _cycle(len(Ns)))):
        a1.loglog(betas, rmse[:, k], "s", color=col, ms=4, label=f"$N$ = {N}")
        a1.loglog(bf, law(bf, N), "-", color=col, lw=1)
    a1.set_xlabel(r"attention scale $\beta$ (label score calibrated)")
    style.legend(a1, ncol=2)
    style.label_panels([a0, a1])
    style.finish(fig)
    return fig


def headline(mn, Ns, err, lo, hi, fit, beta_star, show_N, shapes=None, worst=None):
    """The headline: panel (a) the error at the certified stop against m∧n for several N, with the
    bound's rate and the fit; panel (b) against N for each shape. ``err, lo, hi`` have shape
    (shapes, KN); ``shapes``: the ``(m, n)`` of each row, named in (b)'s legend (default: m∧n
    only). With ``worst``, panel (a) shows what the verdict on the ``(m∧n)^-1`` term uses: the
    worst shape at each m∧n with the worst-shape fit, every other shape in grey.

    Parameters
    ----------
    mn : np.ndarray, shape ``(S,)``
        ``min(m, n)`` of each shape.
    Ns : sequence of int, length ``KN``
        Context sizes (the columns of ``err``).
    err, lo, hi : np.ndarray, shape ``(S, KN)``
        RMSE at the certified stop and its interval.
    fit : dict
        The fitted law ``sqrt(A x^(-2p) + B N^(-2q))`` in ``x = m∧n``: floats ``"A"``, ``"p"``,
        ``"B"``, ``"q"``.
    beta_star : np.ndarray, shape ``(S,)``
        The certified stop ``beta*(m, n)`` of each shape, named in (b)'s legend.
    show_N : sequence of int
        The context sizes drawn in (a), each one of ``Ns``; the last one anchors the bound's rate.
    shapes : list of (int, int), length ``S``, optional
        The ``(m, n)`` of each row.
    worst : dict, optional
        ``{"fit": {A, p, B, q}, "rows": indices}``: the worst-shape fit and the rows of the worst
        shape at each m∧n (panel (a) then draws those with that fit; ``None``: every shape with
        ``fit``).

    Returns
    -------
    matplotlib.figure.Figure
        Two panels, half a column each.
    """
    fig, (a0, a1) = style.figure(ncols=2, width=style.COLUMN_WIDTH / 2, height=3.3)

    def law_of(f):
        return lambda x, N: np.sqrt(f["A"] * x ** (-2 * f["p"]) + f["B"] * N ** (-2 * f["q"]))
    law = law_of(fit)
    order = np.argsort(mn, kind="stable")
    rows_a, law_a = order, law
    if worst is not None:
        rows_a = np.array(sorted(worst["rows"], key=lambda i: mn[i]), int)
        law_a = law_of(worst["fit"])
        rest = np.setdiff1d(order, rows_a)
        for j, N in enumerate(show_N):
            k = list(Ns).index(N)
            a0.plot(mn[rest], err[rest, k], "o", color="0.7", ms=3,
                    label="other shapes" if j == 0 and len(rest) else None)
    xf = np.geomspace(mn.min(), mn.max(), 40)
    for N, col in zip(show_N, _cycle(len(show_N))):
        k = list(Ns).index(N)
        r = rows_a
        a0.errorbar(mn[r], err[r, k], yerr=[err[r, k] - lo[r, k], hi[r, k] - err[r, k]],
                    fmt="o", color=col, ms=4, capsize=2, label=f"$N$ = {N}")
        a0.plot(xf, law_a(xf, N), "-", color=col, lw=1)
    ref = err[rows_a[0], list(Ns).index(show_N[-1])] * mn[rows_a[0]]
    a0.plot(xf, ref / xf, "k--", lw=1.2, label=r"bound's rate $(m\wedge n)^{-1}$")
    a0.set_xscale("log", base=2)
    a0.set_yscale("log")
    a0.set_xlabel(r"$m\wedge n$")
    a0.set_ylabel(r"RMSE at the certified stop $\beta^*(m,n)$")
    style.legend(a0)
    Nf = np.geomspace(min(Ns), max(Ns), 60)
    marks = "osD^v<>p"  # one per colour of _cycle; its second round is drawn hollow and larger
    for j, (i, col) in enumerate(zip(order, _cycle(len(mn)))):
        name = f"{shapes[i][0]}×{shapes[i][1]}" if shapes is not None else f"{int(mn[i])}"
        again = j >= len(marks)
        a1.loglog(Ns, err[i], marks[j % len(marks)], color=col, ms=5 if again else 3.5,
                  mfc="none" if again else col, label=f"{name}, {beta_star[i]:.0f}")
        a1.loglog(Nf, law(mn[i], Nf), "-", color=col, lw=0.9)
    a1.loglog(Nf, np.sqrt(2) / Nf, "k:", lw=1.2, label=r"$\sqrt{2}/N$")
    a1.set_xlabel("context size $N$")
    style.legend(a1, ncol=2 if len(mn) > 4 else 1, loc="lower left", title=(r"$m\times n$" if shapes is not None else r"$m\wedge n$") + r", $\beta^*$",
               columnspacing=0.8, handletextpad=0.3)
    style.label_panels([a0, a1])
    style.finish(fig)
    return fig


def past_stop(runs, label_of):
    """Past the stop: panel (a) the large-N error against GD steps for one run per shape, the
    certified stop marked; panel (b) the same error times beta against beta. ``runs``: list of dicts with ``steps, beta, err,
    stop_step, stop_err, key``.

    Parameters
    ----------
    runs : list of dict
        One run per shape: arrays ``"steps"``, ``"beta"``, ``"err"`` (shape ``(K,)``: GD steps,
        the scale and the RMSE at the largest N), floats ``"stop_step"``, ``"stop_beta"``,
        ``"stop_err"`` (the certified stop, a star) and ``"key"`` (the shape, passed to
        ``label_of``).
    label_of : callable
        Maps a run's ``"key"`` to its legend label.

    Returns
    -------
    matplotlib.figure.Figure
        Two panels, half a column each.
    """
    fig, (a0, a1) = style.figure(ncols=2, width=style.COLUMN_WIDTH / 2, height=3.3)
    for r, col in zip(runs, _cycle(len(runs))):
        a0.loglog(r["steps"], r["err"], "-", color=col, lw=1.3, label=label_of(r["key"]))
        a0.loglog([r["stop_step"]], [r["stop_err"]], "*", color=col, ms=11, mec="k", mew=0.5)
        a1.semilogx(r["beta"], r["beta"] * r["err"], "-", color=col, lw=1.3)
        a1.semilogx([r["stop_beta"]], [r["stop_beta"] * r["stop_err"]], "*", color=col, ms=11, mec="k", mew=0.5)
    a0.set_xlabel("GD steps")
    a0.set_ylabel("RMSE at the largest $N$")
    style.legend(a0)
    a1.set_xlabel(r"attention scale $\beta$ of the run")
    a1.set_ylabel(r"$\beta\,\times$ RMSE")
    a1.axhline(1.0, color="0.4", lw=0.8, ls=":")
    style.label_panels([a0, a1])
    style.finish(fig)
    return fig


def calibration(ms, tau_fix, p_meas, p_lo, p_hi, p_pred, mae, mae_lo, mae_hi, rmse, mae_pred, rmse_pred):
    """(a) P(c_T < tau) against m, measured and predicted; (b) prior-averaged MAE and RMSE against m
    with the prediction from sampled label scores and the closed forms.

    Parameters
    ----------
    ms : array_like, shape ``(M,)``
        Numbers of tasks ``m``.
    tau_fix : sequence of float, length ``J``
        The fixed thresholds of panel (a), in ``[0, 1]``.
    p_meas, p_lo, p_hi : np.ndarray, shape ``(M, J)``
        Measured probability ``P(c_T < tau)`` and its interval, per ``m`` and threshold.
    p_pred : np.ndarray, shape ``(M, J)``
        The predicted probability (lines).
    mae, mae_lo, mae_hi : np.ndarray, shape ``(M,)``
        Prior-averaged MAE of the trained heads and its interval.
    rmse : np.ndarray, shape ``(M,)``
        Prior-averaged RMSE of the trained heads.
    mae_pred, rmse_pred : np.ndarray, shape ``(M,)``
        MAE and RMSE predicted from sampled label scores; the closed forms ``0.75/(m+1)`` and
        ``0.8/sqrt(m)`` are drawn too.

    Returns
    -------
    matplotlib.figure.Figure
        Two panels, half a column each.
    """
    fig, (a0, a1) = style.figure(ncols=2, width=style.COLUMN_WIDTH / 2, height=3.3)
    ms = np.asarray(ms, float)
    for j, (t, col) in enumerate(zip(tau_fix, _cycle(len(tau_fix)))):
        a0.errorbar(ms, p_meas[:, j], yerr=[p_meas[:, j] - p_lo[:, j], p_hi[:, j] - p_meas[:, j]], fmt="o",
                    color=col, capsize=2, ms=4, label=rf"measured, $\tau$ = {t:g}")
        a0.plot(ms, p_pred[:, j], "-", color=col, lw=1)
    a0.set_xscale("log", base=2)
    a0.set_xlabel("tasks $m$")
    a0.set_ylabel(r"P(label score $c_T$ below $\tau$)")
    style.legend(a0, title="lines: prediction", title_fontsize=style.MIN_FONT_PT)
    a1.errorbar(ms, mae, yerr=[mae - mae_lo, mae_hi - mae], fmt="o", color=C["attention"], capsize=2,
                label="MAE, trained heads")
    a1.plot(ms, rmse, "s", color=C["midpoint"], label="RMSE, trained heads")
    a1.plot(ms, mae_pred, "-", color=C["attention"], lw=1, label="MAE, sampled label scores")
    a1.plot(ms, rmse_pred, "-", color=C["midpoint"], lw=1, label="RMSE, sampled label scores")
    a1.plot(ms, 0.75 / (ms + 1), "--", color=C["attention"], lw=1, label=r"$0.75/(m+1)$")
    a1.plot(ms, 0.8 / np.sqrt(ms), "--", color=C["midpoint"], lw=1, label=r"$0.8/\sqrt{m}$")
    a1.set_xscale("log", base=2)
    a1.set_yscale("log")
    a1.set_xlabel("tasks $m$")
    a1.set_ylabel(r"error, $\tau$ averaged over the prior")
    style.legend(a1)
    style.label_panels([a0, a1])
    style.finish(fig)
    return fig
