"""The lowest minima of many seeds, summarised: per dimension the lowest minima and the informed
start's, their paired difference, the search's saturation and the minima counted
(:func:`summary`); the seed means extrapolated in ``d`` (:func:`limits`); the paired theta gaps
pooled over dimensions (:func:`paired_gaps`); the searches of two runs pooled per dimension
(:func:`pool_searches`); and the landscape layout of searches (:func:`as_landscape`, the layout of
:func:`.held_theta.landscape`).

The searches are :func:`.lowest_minima.search`'s records with the seeds stacked (a sweep store read
back by :func:`stumplib.sweep.readers.landscape_from_store`, or
:func:`.lowest_minima.search_seeds`).
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Mapping, Sequence

import numpy as np

from stumplib.core.validation import check_real

def summary(searches: dict[int, dict[str, np.ndarray]], *, level: float = 0.95,
            loss_tol: float = 1e-9) -> dict[str, np.ndarray]:
    """Per dimension, the seed statistics of :func:`search` records: the lowest minima and the
    informed start's, their difference per seed, the search's saturation and the minima counted.

    Parameters
    ----------
    searches : dict of int to dict of np.ndarray
        ``{d: search records with the seeds stacked}`` (arrays ``(S, K)`` per start: ``loss``,
        ``theta``, ``test_error``, ``converged``, ``label``; ``(S,)``: ``lowest``, ``saturated``,
        ``n_distinct``, ``seconds``, ``objective_seconds``).
    level : float
        Level of the Student intervals over seeds, in ``(0, 1)``.
    loss_tol : float
        The informed start's minimum counts as higher than the lowest when its loss exceeds the
        lowest's by more than this, relative.

    Returns
    -------
    dict of np.ndarray, each of shape ``(D,)``
        ``ds``; ``seeds`` (seeds searched) and ``seeds_ok`` (whose informed and lowest minima
        converged); for ``which`` in ``lowest``, ``informed``: ``<which>_test_error`` and
        ``<which>_theta`` (seed means) with ``_se`` (standard errors); ``theta_gap`` (informed
        minus lowest, paired, mean) with ``theta_gap_se``, ``theta_gap_lo``, ``theta_gap_hi``
        (Student interval); ``share_lower`` (share of seeds whose lowest minimum lies below the
        informed start's); ``saturated`` (share of seeds whose lowest minimum was found in the
        first half of the starts); ``distinct_mean``, ``distinct_max`` (minima found per seed);
        ``seconds`` (mean seconds per seed); ``objective_seconds`` (one objective and gradient,
        median over seeds).
    """
    from scipy.stats import t as student

    check_real("level", level, low=0.0, low_open=True, high=1.0, high_open=True)
    ds = sorted(int(d) for d in searches)
    if not ds:
        raise ValueError("searches must hold at least one d")
    keys = ("seeds", "seeds_ok", "lowest_test_error", "lowest_test_error_se", "lowest_theta",
            "lowest_theta_se", "informed_test_error", "informed_test_error_se", "informed_theta",
            "informed_theta_se", "theta_gap", "theta_gap_se", "theta_gap_lo", "theta_gap_hi",
            "share_lower", "saturated", "distinct_mean", "distinct_max", "seconds",
            "objective_seconds")
    out = {k: np.full(len(ds), np.nan) for k in keys}
    for i, d in enumerate(ds):
        r = searches[d]
        loss, ok = np.asarray(r["loss"], float), np.asarray(r["converged"], bool)
        S_ = loss.shape[0]
        lo = np.asarray(r["lowest"], int).reshape(S_)
        rows = np.arange(S_)
        good = (lo >= 0) & ok[:, 0] & ok[rows, np.maximum(lo, 0)]
        out["seeds"][i], out["seeds_ok"][i] = S_, good.sum()
        for which, idx in (("lowest", np.maximum(lo, 0)), ("informed", np.zeros(S_, int))):
            for k in ("test_error", "theta"):
                v = np.asarray(r[k], float)[rows, idx][good]
                out[f"{which}_{k}"][i] = v.mean() if v.size else np.nan
                out[f"{which}_{k}_se"][i] = v.std(ddof=1) / math.sqrt(v.size) if v.size > 1 \
                    else np.nan
        th = np.asarray(r["theta"], float)
        gap = (th[:, 0] - th[rows, np.maximum(lo, 0)])[good]
        if gap.size > 1:
            se = gap.std(ddof=1) / math.sqrt(gap.size)
            q = float(student.ppf(0.5 + level / 2, gap.size - 1))
            out["theta_gap"][i], out["theta_gap_se"][i] = gap.mean(), se
            out["theta_gap_lo"][i], out["theta_gap_hi"][i] = gap.mean() - q * se, gap.mean() + q * se
        lower = loss[rows, np.maximum(lo, 0)] < loss[:, 0] - loss_tol * np.abs(loss[:, 0])
        out["share_lower"][i] = lower[good].mean() if good.any() else np.nan
        out["saturated"][i] = np.asarray(r["saturated"], bool).reshape(S_).mean()
        nd = np.asarray(r["n_distinct"], float).reshape(S_)
        out["distinct_mean"][i], out["distinct_max"][i] = nd.mean(), nd.max()
        out["seconds"][i] = np.asarray(r["seconds"], float).mean()
        out["objective_seconds"][i] = float(np.median(r["objective_seconds"]))
    return dict(out, ds=np.asarray(ds))


def as_landscape(r: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The landscape layout (the constrained curve along theta and two kinds of minima per seed)
    from the records of
    :func:`stumplib.book.studies.lowest_minima.search` (seeds stacked): the line of held theta, the
    informed start's minimum as ``free_*`` and the lowest minimum found as ``best_*``.

    Parameters
    ----------
    r : mapping of np.ndarray
        Stacked search records: ``line_*`` (S, T), per-start ``loss``, ``theta``, ``q``, ``m``,
        ``test_error``, ``converged`` (S, K), ``lowest`` (S,), ``line_theta`` (T,).

    Returns
    -------
    dict of np.ndarray
        ``thetas`` (T,); ``d`` and ``alpha`` where the records hold them; (S, T) ``train_loss``, ``q``, ``m``, ``test_error``, ``converged``,
        ``sweeps_differ``; (S,) ``free_<k>`` and ``best_<k>`` for ``k`` in ``theta``,
        ``train_loss``, ``q``, ``m``, ``test_error``, ``converged``.
    """
    out = {"thetas": np.asarray(r["line_theta"]),
           **{k: np.asarray(r[k]) for k in ("d", "alpha") if k in r},
           "train_loss": np.asarray(r["line_loss"]), "q": np.asarray(r["line_q"]),
           "m": np.asarray(r["line_m"]), "test_error": np.asarray(r["line_test_error"]),
           "converged": np.asarray(r["line_converged"], bool),
           "sweeps_differ": np.asarray(r["line_sweeps_differ"], bool)}
    S_ = np.asarray(r["loss"]).shape[0]
    lowest = np.asarray(r["lowest"], int).reshape(S_)
    for which, idx in (("free", np.zeros(S_, int)), ("best", np.maximum(lowest, 0))):
        for k, src in (("theta", "theta"), ("train_loss", "loss"), ("q", "q"), ("m", "m"),
                       ("test_error", "test_error"), ("converged", "converged")):
            v = np.asarray(r[src])[np.arange(S_), idx]
            out[f"{which}_{k}"] = v.astype(bool) if k == "converged" else v
    return out


def limits(summ: Mapping[str, np.ndarray], *, level: float = 0.95,
           accept: str = "aicc") -> dict[str, dict[str, Any]]:
    """The seed means of :func:`summary` extrapolated to ``d -> infinity`` by every acceptable
    approach form, each with its own fit and standard error.

    Parameters
    ----------
    summ : mapping
        :func:`summary`'s output.
    level : float
        Interval level, in ``(0, 1)``.
    accept : {"aicc", "p_value"}
        Which forms are acceptable: ``"aicc"`` (:func:`.scaling_forms.choose_form`, four or
        more ``d``: the small-sample Akaike criterion over ``1/d``, ``1/sqrt(d)``,
        ``1/d + 1/d^2`` and a crossover, every form within 2 of the best; ``envelope`` spans
        them) or ``"p_value"`` (:func:`.scaling_forms.accept_forms`, three or more ``d``: every
        form not rejected at 5%, as chapter 6's confirmatory run fixed in advance).

    Returns
    -------
    dict
        ``{"lowest_test_error", "lowest_theta", "informed_test_error", "informed_theta"}`` to
        the chosen function's output (``form``, ``limit``, ``fits`` with each form's ``limit``
        and ``se``, ``acceptable``, and for ``"aicc"`` ``envelope``), for the quantities with
        enough usable ``d`` (two or more seeds); every interval is cut at 0 (a test error and
        theta are not negative).
    """
    from stumplib.book.studies.scaling_forms import accept_forms, choose_form

    if accept not in ("aicc", "p_value"):
        raise ValueError(f"accept must be 'aicc' or 'p_value'; got {accept!r}")
    fn, need = (choose_form, 4) if accept == "aicc" else (accept_forms, 3)
    out: dict[str, dict[str, Any]] = {}
    for k in ("lowest_test_error", "lowest_theta", "informed_test_error", "informed_theta"):
        y, se, ds = (np.asarray(summ[x], float) for x in (k, f"{k}_se", "ds"))
        ok = np.isfinite(y) & np.isfinite(se) & (se > 0)
        if ok.sum() >= need:
            f = fn(ds[ok], y[ok], se[ok], level=level)
            for e in ("limit", "envelope"):  # both quantities are >= 0: the interval stays there
                if e in f and np.isfinite(f[e].lo):
                    f[e] = replace(f[e], lo=max(f[e].lo, 0.0))
            for fit in f["fits"].values():
                fit["limit"] = replace(fit["limit"], lo=max(fit["limit"].lo, 0.0))
            out[k] = f
    return out


#: the per-seed records of a search that :func:`summary` reads (and :func:`pool_searches` joins)
SEED_KEYS = ("loss", "theta", "test_error", "converged", "label", "lowest", "saturated",
             "n_distinct", "seconds", "objective_seconds")


def pool_searches(*parts: Mapping[int, Mapping[str, np.ndarray]]
                  ) -> dict[int, dict[str, np.ndarray]]:
    """The searches of several runs (independent seeds) pooled per dimension: the per-seed
    records :data:`SEED_KEYS` joined along the seed axis.

    Parameters
    ----------
    *parts : mapping
        ``{d: search records with the seeds stacked}`` each. Runs that tried different numbers
        of starts are padded to the most (a start not tried: loss NaN, not converged, label -1),
        which changes none of :func:`summary`'s statistics.

    Returns
    -------
    dict
        ``{d: {key: array}}`` over every ``d`` of any part (a ``d`` of one part only is that
        part's), with ``d`` and ``seeds`` (seeds per part, in order).
    """
    fills = {"converged": False, "label": -1}
    ds = sorted({int(d) for p in parts for d in p})
    out: dict[int, dict[str, np.ndarray]] = {}
    for d in ds:
        have = [p[d] for p in parts if d in p]
        K = max(np.asarray(r["loss"]).shape[1] for r in have)

        def padded(r: Mapping[str, np.ndarray], k: str) -> np.ndarray:
            v = np.asarray(r[k])
            if v.ndim < 2 or v.shape[1] == K:
                return v
            fill = fills.get(k, np.nan)
            extra = np.full((v.shape[0], K - v.shape[1]), fill,
                            dtype=v.dtype if k in fills else float)
            return np.concatenate([v, extra], axis=1)

        out[d] = {k: np.concatenate([padded(r, k) for r in have]) for k in SEED_KEYS}
        out[d].update(d=np.asarray(d), seeds=np.asarray([np.asarray(r["loss"]).shape[0]
                                                         for r in have]))
    return out


def paired_gaps(searches: Mapping[int, Mapping[str, np.ndarray]],
                ds: Sequence[int] | None = None) -> np.ndarray:
    """Per seed, theta of the informed start's minimum minus theta of the lowest minimum, over
    the seeds of ``ds`` whose two minima converged.

    Parameters
    ----------
    searches : mapping
        ``{d: search records with the seeds stacked}``.
    ds : sequence of int, optional
        The dimensions pooled (default: all).

    Returns
    -------
    np.ndarray, shape ``(n,)``
    """
    out = []
    for d in (sorted(searches) if ds is None else ds):
        r = searches[int(d)]
        th, ok = np.asarray(r["theta"], float), np.asarray(r["converged"], bool)
        lo = np.asarray(r["lowest"], int).reshape(th.shape[0])
        rows = np.arange(th.shape[0])
        good = (lo >= 0) & ok[:, 0] & ok[rows, np.maximum(lo, 0)]
        out.append((th[:, 0] - th[rows, np.maximum(lo, 0)])[good])
    return np.concatenate(out) if out else np.zeros(0)

