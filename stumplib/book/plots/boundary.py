"""Figures of chapter 5 (the boundary limitation and reflected symmetrization)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from stumplib.book import style
from stumplib.stump.boundary import exact_mse, side_empty_probability

CURVES = ("one-head", "reflected", "symmetrized", "boundary-aware", "Bayes")


def profiles(PROF, head, N_grid, N_ref):
    """MSE x N^2 against the threshold at two context sizes, and the upper boundary layer for every
    ``N`` (2 + 1 panels). ``PROF[head, N]`` holds ``tau``, ``beta``, ``b`` and per estimator
    ``(mse, se)`` (chapter 5's profile records).

    Parameters
    ----------
    PROF : dict
        Maps ``(head, N)`` to a profile record (:func:`stumplib.stump.boundary.profile_record`):
        ``"tau"`` (shape ``(T,)``), ``"beta"``, ``"b"`` and, per estimator of :data:`CURVES`,
        ``(mse, se)`` of shape ``(T,)`` each.
    head : str
        ``"sharp"`` or ``"trained"``; the sharp head adds the exact ``beta -> inf`` curves.
    N_grid : sequence of int
        Context sizes, all drawn in the third panel.
    N_ref : int
        The second context size of the first two panels (with ``N_grid[0]``; if equal, the last).

    Returns
    -------
    matplotlib.figure.Figure
        Three panels (closed, ready to save or glue).
    """
    C = style.COLORS
    fig, axes = style.panels(3, height=3.0)
    pair = [N_grid[0], N_ref] if N_ref != N_grid[0] else [N_grid[0], N_grid[-1]]
    lows = []
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
        low = min((float(np.nanmin(v[v > 0])) for ln in ax.get_lines()
                   for v in [np.asarray(ln.get_ydata(), float)] if np.any(v > 0)), default=0.1)
        lows.append(low)
        ax.set_xlabel(r"threshold $\tau$")
        ax.set_title(rf"$N = {N}$, $\beta = {rec['beta']:.0f}$, $c = {rec['b'] / rec['beta']:.3f}$",
                     fontsize=style.MIN_FONT_PT)
    axes[0].set_ylabel(r"MSE $\times N^2$")
    # one legend for (a) and (b), above both: inside a panel it would lie on the curves
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside upper center", ncol=3)
    # (b) shares (a)'s axis; the bottom just below the lowest curve of either panel
    axes[0].set_ylim(max(1e-3, 0.5 * min(lows)), 2 * pair[0] ** 2)
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
    ax.set_title("upper end: one-head (solid), boundary-aware (dashed)", fontsize=style.MIN_FONT_PT)
    style.legend(ax, loc="upper right")
    style.label_panels(axes)
    style.finish(fig)
    plt.close(fig)
    return fig


def mechanism(PROF, tau_r, err_r, k, N_grid, N_ref):
    """(a) P(no positive) against N(1 - tau), (b) errors at ``tau_r[k]`` (about 1 - 1/N), (c) the
    one-head MSE split by whether the positive side is empty (2 + 1 panels).

    Parameters
    ----------
    PROF : dict
        Profile records by ``(head, N)`` (see :func:`profiles`); ``PROF["sharp", N]["p_no_pos"]``,
        shape ``(T,)``, for each ``N`` of ``N_grid``.
    tau_r : torch.Tensor, shape ``(T,)``
        The threshold grid at ``N_ref``.
    err_r : dict of torch.Tensor
        :func:`stumplib.stump.boundary.profile_errors` of the sharp head at ``N_ref``: errors of
        shape ``(T, C)`` per estimator and ``"n_pos"`` (positive examples, ``(T, C)``).
    k : int
        Index into ``tau_r`` of the threshold of panel (b), about ``1 - 1/N_ref``.
    N_grid : sequence of int
        Context sizes of panel (a).
    N_ref : int
        Context size of ``tau_r`` and ``err_r``.

    Returns
    -------
    matplotlib.figure.Figure
        Three panels (closed, ready to save or glue).
    """
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
    ax.set_title(rf"$N = {N_ref}$, $\tau = 1 - 1/N$", fontsize=style.MIN_FONT_PT)
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
    ``(beta/N, one-head/sym, sym/Bayes)``), (b) against N for the sharp and trained heads.

    Parameters
    ----------
    sweep : list of (float, Estimate, Estimate)
        Rows ``(beta/N, one-head/symmetrized, symmetrized/Bayes)``: the sharpness and the two
        interior MSE ratios with their intervals (``value``, ``lo``, ``hi``).
    PROF : dict
        Profile records by ``(head, N)`` (see :func:`profiles`) with the estimates
        ``"ratio_sym"`` and ``"ratio_bayes"``, for both heads and each ``N`` of ``N_grid``.
    N_grid : sequence of int
        Context sizes of panel (b).
    N_ref : int
        Context size of the sweep, in (a)'s title.
    c_sharp : float
        Relative label score ``b / beta`` of the sweep, in (a)'s title.

    Returns
    -------
    matplotlib.figure.Figure
        Two panels (closed, ready to save or glue).
    """
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
    ax.set_title(rf"$N = {N_ref}$, $c = {c_sharp}$", fontsize=style.MIN_FONT_PT)
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


# ----------------------------------------------------------------------------- two heads (issue 31)
TERM_COLORS = ("one-head", "reflected", "Bayes")  # head f1, mirror f2, constant


def two_head_training(res, groups, N):
    """Trajectories of two-head GD (:class:`stumplib.stump.two_head.TwoHeadResult` ``res``):
    (a) each head's scale, (b) the weights at a balanced context (``n1 = N/2``), (c) the count
    slope ``dw1/dq`` and the fallback ``w0`` at ``n1 = 0``. ``groups`` maps a label to the run
    indices drawn with it (first label solid, second dashed, a third dotted); ``N`` the context
    size of the weights.

    Parameters
    ----------
    res : stumplib.stump.two_head.TwoHeadResult
        Trajectories of ``R`` runs at ``K`` records (``steps``, shape ``(K,)``; ``heads``,
        ``(R, K, 4)``; ``A``, ``(R, K, 3, 4)``).
    groups : dict
        Maps a legend label to the run indices (a list of ints into ``res``) drawn with it; at
        most three groups.
    N : int
        Context size at which the weights are evaluated.

    Returns
    -------
    matplotlib.figure.Figure
        Three panels (closed, ready to save or glue).
    """
    from stumplib.stump.two_head import weights

    from matplotlib.lines import Line2D

    C = style.COLORS
    fig, axes = style.panels(3, height=2.8)
    t = np.maximum(res.steps, 0.5)
    styles = ("-", "--", ":")
    seen = set()  # colour = quantity (the panels' legends), line style = start (figure legend)

    def once(ax, key):
        if (ax, key) in seen:
            return {}
        seen.add((ax, key))
        return {"label": key}

    for (lab, idx), ls in zip(groups.items(), styles):
        H, A = res.heads[idx], res.A[idx]  # (r, K, 4), (r, K, 3, 4)
        for r in range(len(idx)):
            axes[0].plot(t, H[r, :, 0], ls, color=C["one-head"], lw=1.2, **once(0, "head"))
            if A[r, :, 1].any():  # a mirror that is never used is not drawn
                axes[0].plot(t, H[r, :, 2], ls, color=C["reflected"], lw=1.2,
                             **once(0, "mirror"))
            wb = weights(A[r], [N // 2], N)[:, 0]  # (K, 3)
            for k, name in enumerate(("$w_1$", "$w_2$", "$w_0$")):
                axes[1].plot(t, wb[:, k], ls, color=C[TERM_COLORS[k]], lw=1.2, **once(1, name))
            w0 = weights(A[r], [0], N)[:, 0]
            axes[2].plot(t, A[r, :, 0, 1], ls, color=C["one-head"], lw=1.2,
                         **once(2, r"$\partial w_1/\partial q$"))
            axes[2].plot(t, w0[:, 2], ls, color=C["Bayes"], lw=1.2,
                         **once(2, r"$w_0$ at $n_1 = 0$"))
    fig.legend([Line2D([], [], ls=ls, color="0.25", lw=1.2) for ls in styles[:len(groups)]],
               list(groups), loc="outside lower center", ncol=len(groups))
    axes[0].set_ylabel(r"attention scale $\beta$")
    axes[1].set_ylabel(rf"weight at $n_1 = N/2$ ($N = {N}$)")
    axes[2].set_ylabel("weight")
    for ref, txt in ((1.0, "count weighting"), (0.5, "Bayes fallback"), (0.0, "plain / Bayes")):
        axes[2].axhline(ref, color="0.6", lw=0.8, ls="-.")
        axes[2].annotate(txt, (1.0, ref), xycoords=("axes fraction", "data"), xytext=(-4, 2),
                         textcoords="offset points", ha="right", va="bottom", fontsize=style.MIN_FONT_PT,
                         color="0.35")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlabel("gradient-descent step")
        style.legend(ax, fontsize=style.MIN_FONT_PT)  # placed by style.finish where it covers no line
    axes[2].set_ylim(-0.3, 1.35)
    style.label_panels(axes)
    style.finish(fig)
    plt.close(fig)
    return fig


def two_head_profiles(PROF2, N_show, names):
    """MSE x N^2 against the threshold for the two-head model and the one-head rules at the
    context sizes ``N_show``: ``PROF2[N]`` holds ``tau`` and, per name in ``names``, the MSE
    averaged over contexts and corpora. The last panel zooms on the upper end (every ``N``).

    Parameters
    ----------
    PROF2 : dict
        Maps a context size ``N`` to a record: ``"tau"`` (shape ``(T,)``) and per rule name the
        MSE at each threshold (shape ``(T,)``); the zoom needs ``"one-head"``, ``"two-head"``
        and ``"Bayes"``.
    N_show : sequence of int
        Context sizes, one panel each.
    names : sequence of str
        The rules drawn in the per-``N`` panels.

    Returns
    -------
    matplotlib.figure.Figure
        ``len(N_show) + 1`` panels (closed, ready to save or glue).
    """
    C = dict(style.COLORS)
    C.setdefault("two-head", "#D55E00")
    C.setdefault("count-weighted", "#56B4E9")
    fig, axes = style.panels(len(N_show) + 1, height=2.9)
    for ax, N in zip(axes, N_show):
        rec = PROF2[N]
        for name in names:
            ax.plot(rec["tau"], rec[name] * N ** 2, "--" if name == "Bayes" else "-",
                    color=C.get(name, "k"), lw=2.2 if name == "two-head" else 1.3, label=name)
        ax.set_yscale("log")
        ax.set_xlabel(r"threshold $\tau$")
        ax.set_title(rf"$N = {N}$", fontsize=style.MIN_FONT_PT)
    axes[0].set_ylabel(r"MSE $\times N^2$")
    # one column when a rule's name is long (the comparator of the two-head claim can be),
    # so that a legend placed below its panel does not widen the figure
    style.legend(axes[0], fontsize=style.MIN_FONT_PT, ncol=1 if max(map(len, names)) > 20 else 2)
    ax = axes[-1]
    for i, N in enumerate(N_show):
        rec = PROF2[N]
        s_ = N * (1 - rec["tau"])
        sel = s_ <= 10
        for name, ls in (("one-head", ":"), ("two-head", "-"), ("Bayes", "--")):
            ax.plot(s_[sel], rec[name][sel] * N ** 2, ls, color=C[name], lw=1.0 + 0.5 * i,
                    label=f"{name}, N = {N}" if name == "two-head" else (name if i == 0 else None))
    ax.set_yscale("log")
    ax.set_xlabel(r"expected positives $N(1-\tau)$")
    ax.set_ylabel(r"MSE $\times N^2$")
    ax.set_title("upper end (wider: larger N)", fontsize=style.MIN_FONT_PT)
    style.legend(ax, fontsize=style.MIN_FONT_PT)
    style.label_panels(axes)
    style.finish(fig)  # each legend where it covers no curve, else below its panel
    plt.close(fig)
    return fig


def two_head_weights(A_learned, N, rules, K=10):
    """The learned combination near both ends: weights ``(w1, w2, w0)`` against the number of
    positive examples ``n1`` (a) and of negative examples ``n0`` (b) in a context of ``N``
    examples; ``A_learned`` of shape ``(R, 3, 4)`` (one line per corpus), ``rules`` a dict name ->
    ``(3, 4)`` drawn as references (first dashed, second dotted). Panel (b) adds ``w2 + w0``: the
    mirror returns about 1 when the negative side is empty, so that sum is what it contributes.

    Parameters
    ----------
    A_learned : array_like, shape ``(R, 3, 4)``
        The learned combinations, one per corpus.
    N : int
        Context size.
    rules : dict
        Maps a reference rule's name to its combination, shape ``(3, 4)``; at most two are drawn.
    K : int, optional
        The counts ``0..K`` of positives (a) and negatives (b) drawn (default 10).

    Returns
    -------
    matplotlib.figure.Figure
        Two panels with a shared legend below (closed, ready to save or glue).
    """
    from stumplib.stump.two_head import weights

    from matplotlib.lines import Line2D

    C = style.COLORS
    fig, axes = style.panels(2, height=2.8)
    k = np.arange(K + 1)
    labels = ("head $w_1$", "mirror $w_2$", "constant $w_0$")
    looks = ("o-", "--", ":")  # learned (one line per corpus), then the reference rules
    for ax, n1, xl in ((axes[0], k, r"positive examples $n_1$ (upper end)"),
                       (axes[1], N - k, r"negative examples $n_0 = N - n_1$ (lower end)")):
        W = weights(np.asarray(A_learned), n1, N)  # (R, P, 3)
        for j in range(3):
            for r in range(W.shape[0]):
                ax.plot(k, W[r, :, j], "o-", ms=3, color=C[TERM_COLORS[j]], lw=1.2, alpha=0.85)
            for A_r, ls in zip(rules.values(), looks[1:]):
                ax.plot(k, weights(np.asarray(A_r), n1, N)[:, j], ls, color=C[TERM_COLORS[j]],
                        lw=1.0)
        ax.set_xlabel(xl)
        ax.set_ylabel(rf"weight ($N = {N}$)")
        ax.axhline(0, color="0.8", lw=0.6)
    W = weights(np.asarray(A_learned), N - k, N)
    for r in range(W.shape[0]):
        axes[1].plot(k, W[r, :, 1] + W[r, :, 2], "s-", ms=3, color="k", lw=0.8,
                     label=r"$w_2 + w_0$, learned" if r == 0 else None)
    style.legend(axes[1], fontsize=style.MIN_FONT_PT)
    # colour: the term; line: learned or a reference rule (one legend for both panels)
    handles = [Line2D([], [], color=C[TERM_COLORS[j]], lw=2.5) for j in range(3)]
    handles += [Line2D([], [], ls="-" if ls == "o-" else ls, marker="o" if ls == "o-" else None,
                       ms=3, color="0.3", lw=1.2) for ls in looks[:len(rules) + 1]]
    names = list(labels) + ["learned, one line per corpus"] + list(rules)
    fig.legend(handles, names, loc="outside lower center", ncol=2, fontsize=style.MIN_FONT_PT)
    style.label_panels(axes)
    style.finish(fig)
    plt.close(fig)
    return fig
