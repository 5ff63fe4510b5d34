"""The decision between two theories from converged minimisers extrapolated in ``1/d``.

Per ``alpha``, the minimisers' seed-mean exact test error at each ``d`` is extrapolated to
``1/d = 0`` in three ways (:data:`EXTRAPOLATIONS`: a straight line, a parabola, a line without the
smallest ``d``) and its distance from each theory measured in standard errors (:func:`decide`);
:func:`at_alphas` selects the alphas of a stored run, :func:`consistency` compares two decisions,
:func:`gd_gap` measures how far the paper's plain gradient descent stops from the minimiser.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

#: the three extrapolations to ``d -> infinity`` (name: polynomial degree in ``1/d``, smallest
#: ``d`` dropped); the decision stands only where all three agree
EXTRAPOLATIONS = {"line": (1, False), "quadratic": (2, False), "drop_smallest": (1, True)}


def decide(runs: Mapping[int, Mapping[str, np.ndarray]], accurate: Any, accurate_err: Any,
           published: Any, *, follow: float = 2.0, separate: float = 4.0,
           level: float = 0.95) -> dict[str, Any]:
    """The minimisers' test error extrapolated to ``d -> infinity`` against two theories.

    Per ``alpha``: the mean exact test error over the converged runs at each ``d`` and its
    standard error over seeds; three weighted extrapolations in ``1/d``
    (:func:`extrapolations`: a straight line, a line with a ``1/d^2`` term, a line without the
    smallest ``d``) and the distances ``z`` of each value at ``1/d = 0`` from each theory in
    combined standard errors (the accurate theory's quadrature error included; the published
    curve carries none); and the same distances of the mean at the largest ``d`` itself.

    Parameters
    ----------
    runs : mapping
        ``{d: minimiser_runs(...)}`` (:func:`.minimise.minimiser_runs`) with the same alphas
        (:func:`at_alphas` selects them from a stored run).
    accurate, accurate_err, published : array_like, shape ``(A,)``
        The theories at those alphas (the accurate one with its quadrature error).
    follow, separate : float
        The rule of the verdict that chooses between the theories (a theory is followed within
        ``follow`` standard errors, the other excluded beyond ``separate``), used to size the
        seeds that would decide.
    level : float
        The extrapolation's interval coverage.

    Returns
    -------
    dict
        ``ds``; ``mean``, ``se``, ``spread`` (standard deviation over seeds), ``n`` (D, A);
        ``limit`` (A Estimates), ``limit_se`` (A,), ``z_accurate``, ``z_published`` (A,): the
        straight line; ``forms``: ``{name: {"limit", "limit_se", "z_accurate", "z_published"}}``
        for every extrapolation of :data:`EXTRAPOLATIONS` (NaN where too few ``d``); ``dmax``
        (the largest ``d``), ``dmax_mean``, ``dmax_se``, ``dmax_z_accurate``,
        ``dmax_z_published`` (A,): the seed mean there and its distances from the theories;
        ``converged_fraction`` (runs made; a stored run marks them ``ran``); ``spread_slope``
        (log-log slope of the spread in ``d``, NaN with one ``d``); ``seeds_to_decide`` (seeds
        per ``d`` at which the theories would be ``follow + separate`` standard errors apart at
        the best-separated alpha; -1 if unknown).
    """
    from stumplib.core.stats import ols

    ds = sorted(int(d) for d in runs)
    acc, acc_e, pub = (np.asarray(v, dtype=float).ravel()
                       for v in (accurate, accurate_err, published))
    if not ds:
        raise ValueError("runs must hold at least one d")
    if not (acc.size == acc_e.size == pub.size >= 1):
        raise ValueError(f"accurate, accurate_err and published must have one value per alpha; "
                         f"got {acc.size}, {acc_e.size} and {pub.size}")
    for d in ds:
        got = np.shape(runs[d]["test_error"])
        if len(got) != 2 or got[1] != acc.size or np.shape(runs[d]["converged"]) != got:
            raise ValueError(f"runs[{d}]: test_error and converged must be (seeds, {acc.size}) "
                             f"arrays, one column per alpha of accurate; got {got} and "
                             f"{np.shape(runs[d]['converged'])}")
    mean, se, sd, n = (np.zeros((len(ds), acc.size)) for _ in range(4))
    for i, d in enumerate(ds):
        te, ok = np.asarray(runs[d]["test_error"]), np.asarray(runs[d]["converged"], dtype=bool)
        for j in range(acc.size):
            v = te[ok[:, j], j]
            n[i, j], mean[i, j] = v.size, v.mean() if v.size else np.nan
            sd[i, j] = v.std(ddof=1) if v.size > 1 else np.nan
    se = sd / np.sqrt(np.maximum(n, 1))
    forms = {}
    for name, (lim, lim_se) in extrapolations(ds, mean, se, level=level).items():
        val = np.array([e.value for e in lim])
        forms[name] = dict(limit=lim, limit_se=lim_se,
                           z_accurate=(val - acc) / np.hypot(lim_se, acc_e),
                           z_published=(val - pub) / lim_se)
    line = forms["line"]
    gap = np.abs(acc - pub) / np.hypot(line["limit_se"], acc_e)
    n_last = np.array([n[n[:, j] > 0, j][-1] if (n[:, j] > 0).any() else np.nan
                       for j in range(acc.size)])
    need_j = n_last * ((follow + separate) / gap) ** 2  # seeds at the largest d each alpha ran
    need = int(np.ceil(np.nanmin(need_j))) if np.any(np.isfinite(need_j)) else -1
    sd_m = sd.mean(1)
    fin = np.isfinite(sd_m) & (sd_m > 0)
    slope = (ols(np.log(np.asarray(ds)[fin]), np.log(sd_m[fin]))[0] if fin.sum() > 1
             else float("nan"))
    made = [np.asarray(runs[d].get("ran", np.ones_like(runs[d]["converged"])), dtype=bool)
            for d in ds]
    conv = np.concatenate([np.asarray(runs[d]["converged"], dtype=bool)[m]
                           for d, m in zip(ds, made)])
    return dict(ds=np.asarray(ds), mean=mean, se=se, spread=sd, n=n, limit=line["limit"],
                limit_se=line["limit_se"], z_accurate=line["z_accurate"],
                z_published=line["z_published"], forms=forms, dmax=ds[-1], dmax_mean=mean[-1],
                dmax_se=se[-1],
                dmax_z_accurate=(mean[-1] - acc) / np.hypot(se[-1], acc_e),
                dmax_z_published=(mean[-1] - pub) / se[-1],
                converged_fraction=float(conv.mean()) if conv.size else float("nan"),
                spread_slope=float(slope), seeds_to_decide=need)


def extrapolations(ds: Sequence[int], mean: Any, se: Any, *, level: float = 0.95
                   ) -> dict[str, tuple[list, np.ndarray]]:
    """The seed means extrapolated to ``1/d = 0`` in the three ways of :data:`EXTRAPOLATIONS`:
    a weighted straight line in ``1/d`` through every ``d``; a weighted parabola (a ``1/d^2``
    term added); a straight line without the smallest ``d``
    (:func:`stumplib.core.stats.extrapolate_linear`, standard errors known from the seeds).

    Parameters
    ----------
    ds : Sequence[int], shape (D,)
        The dimensions ``d``, increasing.
    mean, se : array_like, shape (D, A)
        Seed means of the minimiser at each ``d`` (rows) and alpha (columns), and their standard
        errors (NaN where an alpha has no runs at a ``d``).
    level : float
        The intervals' coverage, in (0, 1) (default 0.95).

    Returns
    -------
    dict
        ``{name: (limits, limit_se)}``: (A,) :class:`~stumplib.core.stats.Estimate` list and (A,)
        standard errors; NaN where the form has fewer ``d`` than it needs (3 for the parabola, 2
        for the lines).
    """
    from stumplib.core.stats import Estimate, extrapolate_linear

    ds = np.asarray(ds, dtype=float)
    mean = np.atleast_2d(np.asarray(mean, dtype=float))
    se = np.atleast_2d(np.asarray(se, dtype=float))
    if mean.shape != se.shape or mean.shape[0] != ds.size:
        raise ValueError(f"mean and se must be (D, A) with D = {ds.size}; got {mean.shape}, "
                         f"{se.shape}")
    out: dict[str, tuple[list, np.ndarray]] = {}
    for name, (degree, drop) in EXTRAPOLATIONS.items():
        lims, errs = [], []
        for j in range(mean.shape[1]):
            ok = np.isfinite(mean[:, j]) & np.isfinite(se[:, j]) & (se[:, j] > 0)
            if drop and ok.any():
                ok[np.flatnonzero(ok)[0]] = False
            if ok.sum() < degree + 1:
                lims.append(Estimate.nan("seeds"))
                errs.append(float("nan"))
                continue
            e, s = extrapolate_linear(1.0 / ds[ok], mean[ok, j], se[ok, j], level=level,
                                      degree=degree)
            lims.append(e)
            errs.append(s)
        out[name] = (lims, np.asarray(errs))
    return out


def consistency(here: Mapping[str, Any], stored: Mapping[str, Any]) -> np.ndarray:
    """How far two decisions' straight-line limits lie apart: per alpha, their difference in
    combined standard errors (the page's own run against a stored one, independent seeds).

    Parameters
    ----------
    here, stored : mapping
        :func:`decide` outputs at the same alphas.

    Returns
    -------
    np.ndarray, shape ``(A,)``
        ``z = (limit_here - limit_stored) / hypot(se_here, se_stored)``.
    """
    a = np.array([e.value for e in here["limit"]])
    b = np.array([e.value for e in stored["limit"]])
    if a.shape != b.shape:
        raise ValueError(f"the decisions have different alphas: {a.size} and {b.size}")
    return (a - b) / np.hypot(here["limit_se"], stored["limit_se"])


def at_alphas(runs: Mapping[int, Mapping[str, np.ndarray]], alphas: Sequence[float]
              ) -> dict[int, dict[str, np.ndarray]]:
    """A stored run restricted to ``alphas`` (columns in that order), at every ``d`` that ran at
    least one of them; an alpha missing at a ``d`` becomes a column of runs not made (NaN, not
    converged).

    Parameters
    ----------
    runs : mapping
        ``{d: {key: (S, A_d) array, "alphas": (A_d,), ...}}`` (a stored run as
        :func:`stumplib.book.runs.read_runs` reads it, or :func:`.minimise.study`'s output).
    alphas : sequence of float
        The sample ratios wanted.

    Returns
    -------
    dict
        ``{d: {key: (S, len(alphas)) array, ...}}``, the per-``d`` keys ``alphas``, ``seeds``,
        ``d``, ``seconds`` kept (``alphas`` replaced by the selection).
    """
    out = {}
    want = np.asarray(alphas, dtype=float)
    for d, r in runs.items():
        have = np.asarray(r["alphas"], dtype=float)
        idx = [int(np.flatnonzero(np.isclose(have, a, rtol=0, atol=1e-9))[0])
               if np.isclose(have, a, rtol=0, atol=1e-9).any() else -1 for a in want]
        if all(i < 0 for i in idx):
            continue
        sel: dict[str, np.ndarray] = {}
        for k, v in r.items():
            v = np.asarray(v)
            if v.ndim == 2 and v.shape[1] == have.size:
                fill = False if v.dtype == bool else (-1 if v.dtype.kind == "i" else np.nan)
                col = np.full((v.shape[0], want.size), fill, dtype=v.dtype)
                for j, i in enumerate(idx):
                    if i >= 0:
                        col[:, j] = v[:, i]
                sel[k] = col
            else:
                sel[k] = v
        sel["alphas"] = want.copy()
        out[int(d)] = sel
    return out


def gd_gap(runs: Mapping[int, Mapping[str, np.ndarray]]) -> dict[str, Any]:
    """How far the paper's plain GD stops from the minimiser: per ``d`` (with GD) and alpha, the
    mean relative difference of the test errors over the seeds that ran both, and its largest
    relative gradient.

    Only the seeds on which GD ran count (a run records GD on its first ``gd_seeds`` seeds: the
    others hold NaN in every GD entry); a seed whose GD ran but whose GD or minimiser test error is
    not finite at some alpha is left out at that ``d`` and counted (``n_dropped``;
    :func:`stumplib.book.sections.minimisers.dropped_seeds` says it).

    Parameters
    ----------
    runs : mapping
        ``{d: {key: array}}`` as :func:`.minimise.study` returns them; the ``d`` holding
        ``gd_test_error`` (seeds, alphas) and ``gd_rel_grad`` are used, with ``test_error``
        (seeds, alphas).

    Returns
    -------
    dict
        ``ds`` (D,); ``rel_diff`` (D, A) and ``rel_diff_se`` (D, A): the mean relative difference
        and its standard error; ``gd_rel_grad_max`` (D,); ``n_seeds`` (D,): seeds used;
        ``n_dropped`` (D,): seeds left out (no finite GD or minimiser test error); ``max_abs``,
        ``mean``, ``rel_grad_max`` (floats over all).
    """
    ds = [d for d in sorted(runs) if "gd_test_error" in runs[d]]
    diff, se, gmax, used, lost, ran_ = [], [], [], [], [], []
    for d in ds:
        r = runs[d]
        S_ = np.shape(r["gd_test_error"])[0]
        ran = ~(np.isnan(np.asarray(r["gd_test_error"], float)).all(1)
                & np.isnan(np.asarray(r["gd_rel_grad"], float).reshape(S_, -1)).all(1))
        x = (r["gd_test_error"] / r["test_error"] - 1)[ran]
        ok = np.isfinite(x).all(1)
        ran_.append(int(ran.sum()))
        used.append(int(ok.sum()))
        lost.append(int((~ok).sum()))
        diff.append(x[ok].mean(0) if ok.any() else np.full(x.shape[1], np.nan))
        se.append(x[ok].std(0, ddof=1) / np.sqrt(max(1, ok.sum())) if ok.sum() > 1
                  else np.full(x.shape[1], np.nan))
        gmax.append(float(np.nanmax(r["gd_rel_grad"])))
    rd = np.asarray(diff, dtype=float)
    fin = rd[np.isfinite(rd)]
    return dict(ds=np.asarray(ds), rel_diff=rd, rel_diff_se=np.asarray(se),
                gd_rel_grad_max=np.asarray(gmax), n_ran=np.asarray(ran_, dtype=int),
                n_seeds=np.asarray(used, dtype=int),
                n_dropped=np.asarray(lost, dtype=int),
                max_abs=float(np.abs(fin).max()) if fin.size else float("nan"),
                mean=float(fin.mean()) if fin.size else float("nan"),
                rel_grad_max=float(np.nanmax(gmax)) if gmax else float("nan"))
