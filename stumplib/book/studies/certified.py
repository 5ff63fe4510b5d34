"""The certified scale ``beta*(m, n)``, measured once per shape with a bootstrap over corpora.

Chapters 3 and 4 both need ``beta*(m, n)`` (chapter 3 measures how it grows with the corpus,
chapter 4 stops training there). :func:`certified_scales` is the one computation: for each shape it
draws ``n_corpora`` seeded corpora, evaluates every corpus's gradient along the population path
(:mod:`stumplib.book.studies.transfer`), and returns

- ``beta*``: where the root mean square over corpora of the relative gradient error along the
  progress direction first comes back up to ``level`` (:func:`stumplib.book.studies.transfer.certified_interval`);
- its bootstrap replicates, corpora resampled with replacement (:func:`stumplib.core.stats.resample`).

The result is cached (:func:`stumplib.core.memo.remember`, under a file lock of its own so that two
chapters executed at once compute it once, while other seeds' scales compute alongside): the same
shapes, corpora and seed give the same numbers in both chapters.

**The scan.** The scales are scanned upwards one octave at a time from ``beta_min`` until the RMS
error has come back above ``level`` and stayed there for an octave; then ``per_octave`` points per
octave are added over the octave below and the octave above the one holding the crossing, where the
crossings of the bootstrap replicates lie. The corpus gradients are summed task by task in blocks that fit in
the processor's cache (three times faster than one pass over all corpora).

**Seeds.** The corpora of each shape are drawn from their own seed (:func:`shape_seed`), so shapes are
independent and their bootstraps can be resampled independently.

**The worst case.** An upper bound in ``m ∧ n`` constrains, at each value of ``m ∧ n``, the worst
shape with that value: the smallest ``beta*`` (largest error at the stop). :func:`worst_slope` fits
the growth of ``beta*`` over that worst shape, taking the minimum in every bootstrap replicate, so
that the interval holds the choice of the shape; :func:`worst_per_value` is the selection, shared
with :func:`stumplib.book.studies.frozen.bootstrap_stop_law`.

**Shapes without a certified interval.** Where the RMS error never drops below ``level`` (very small
corpora), ``beta*`` is NaN; a bootstrap replicate without one is NaN too. Fits over shapes leave such
shapes out (:func:`slope`) and drop replicates that are NaN at a kept shape; the chapters report how
many.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch

from stumplib.core.device import DEFAULT_DTYPE, resolve_device
from stumplib.core.stats import PowerLawFit, fit_replicates, resample
from stumplib.stump.corpus_grad import corpus_moments
from stumplib.book.studies.transfer import (DEFAULT_LEVEL, TransferProfile, certified_interval, draw_corpus_batch,
                       population_path)
from stumplib.core.validation import check_int, check_real, check_shapes
from stumplib.stump.prior import DEFAULT_PRIOR, Prior, as_prior

#: the book's grid of shapes per profile (chapters 3 and 4 share it, hence one beta* per shape):
#: ``diag`` sizes ``m = n`` with ``diag_corpora`` corpora each; ``m`` and then ``n`` varied over
#: ``cross`` with the other fixed at ``base`` (``cross_corpora`` each); ``n_boot`` resamples
GRID = {
    "smoke": dict(diag=[128, 256], diag_corpora=[24, 12], base=256, cross=[128], cross_corpora=12,
                  n_boot=40),
    "quick": dict(diag=[128, 256, 512, 1024, 2048], diag_corpora=[256, 192, 128, 96, 64], base=512,
                  cross=[128, 256], cross_corpora=128, n_boot=400),
    "full": dict(diag=[128, 256, 512, 1024, 2048, 4096],
                 diag_corpora=[512, 384, 256, 192, 128, 96],
                 base=1024, cross=[128, 256, 512], cross_corpora=192, n_boot=1000),
}

#: elements of a task block evaluated at once (a block of x, y and two buffers fits in L2)
_BLOCK_ELEMS = 2 ** 15


def book_grid(profile: str, token: bool = False) -> dict[str, Any]:
    """The shapes of :data:`GRID` for a profile.

    Parameters
    ----------
    profile : str
        ``"smoke"``, ``"quick"`` or ``"full"``.
    token : bool
        The smallest and the largest diagonal shapes only, 2 corpora each, 10 resamples.

    Returns
    -------
    dict
        ``{"shapes", "n_corpora", "n_boot", "series"}`` with ``series`` = ``{"m=n": [...], "m":
        [(v, base)...], "n": [(base, v)...]}`` (each ending at ``(base, base)``).
    """
    if profile not in GRID:
        raise ValueError(f"profile must be one of {', '.join(GRID)}; got {profile!r}")
    g = GRID[profile]
    if token:  # the largest shape (memory, time) and the smallest (what the profile's
        # own-scale runs use: they stop at 512, so a token run need not run them at the largest)
        small, big = (g["diag"][0],) * 2, (g["diag"][-1],) * 2
        return {"shapes": [small, big], "n_corpora": [2, 2], "n_boot": 10,
                "series": {"m=n": [small, big], "m": [big], "n": [big]}}
    diag = [(v, v) for v in g["diag"]]
    base = g["base"]
    cm = [(v, base) for v in g["cross"]]
    cn = [(base, v) for v in g["cross"]]
    return {"shapes": diag + cm + cn,
            "n_corpora": list(g["diag_corpora"]) + [g["cross_corpora"]] * (2 * len(g["cross"])),
            "n_boot": g["n_boot"], "series": {"m=n": diag, "m": cm + [(base, base)],
                                              "n": cn + [(base, base)]}}


def shape_seed(seed: int, m: int, n: int) -> int:
    """The seed of the corpora of shape ``(m, n)`` for the chapter seed ``seed``.

    Parameters
    ----------
    seed : int
        The chapter seed (>= 0).
    m, n : int
        The shape.

    Returns
    -------
    int
        Distinct shapes get distinct, reproducible seeds in ``[0, 2^31 - 1)``.
    """
    seed, m, n = check_int("seed", seed, minimum=0), check_int("m", m), check_int("n", n)
    return (seed * 1_000_003 + m * 7_919 + n * 104_729) % (2 ** 31 - 1)


def _blocked_grads(tau: torch.Tensor, x: torch.Tensor, y: torch.Tensor, beta: float,
                   b: float) -> np.ndarray:
    """Corpus gradients ``(dL/dbeta, dL/db)`` of every corpus at one point, shape ``(C, 2)``.

    Equal to :func:`stumplib.stump.corpus_grad.corpus_grad` (the same moments), summed over blocks
    of tasks."""
    C, m, n = x.shape
    X, Y, T = x.reshape(-1, n), y.reshape(-1, n), tau.reshape(-1)
    block = _BLOCK_ELEMS if x.device.type == "cpu" else 2 ** 24  # big blocks on an accelerator
    rows = max(1, block // n)
    gb = torch.empty(C * m, dtype=x.dtype, device=x.device)
    gbb = torch.empty(C * m, dtype=x.dtype, device=x.device)
    work: list = []
    for r0 in range(0, X.shape[0], rows):
        xs, ys = X[r0:r0 + rows], Y[r0:r0 + rows]
        k = xs.shape[0]
        bt = torch.full((k,), beta, dtype=x.dtype, device=x.device)
        bb = torch.full((k,), b, dtype=x.dtype, device=x.device)
        f, dfb, dfbb = corpus_moments(xs, ys, bt, bb, work=work if k == rows else None)
        e = f - T[r0:r0 + rows]
        gb[r0:r0 + k] = e * dfb
        gbb[r0:r0 + k] = e * dfbb
    g = torch.stack([gb.reshape(C, m).sum(1), gbb.reshape(C, m).sum(1)], -1) * (2.0 / m)
    return g.cpu().numpy()


def _evaluate(corp: tuple, betas: np.ndarray, prior: Prior
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Path ``c``, population and corpus gradients at ``betas``: ``(K,), (K, 2), (K, C, 2)``."""
    path = population_path(betas, prior, device="cpu")
    c, gp = path["c"].numpy(), path["g"].numpy()
    g = np.stack([_blocked_grads(*corp, float(bk), float(ck * bk)) for bk, ck in zip(betas, c)])
    return c, gp, g


def _rms_along(gp: np.ndarray, g: np.ndarray) -> np.ndarray:
    """RMS over corpora of the relative error along the progress direction, shape ``(K,)``."""
    nrm = np.linalg.norm(gp, axis=-1)
    u = gp / nrm[:, None]
    r = ((g - gp[:, None, :]) * u[:, None, :]).sum(-1) / nrm[:, None]
    return np.sqrt((r ** 2).mean(1))


def _coarse_done(curve: np.ndarray, level: float) -> bool:
    """Whether a coarse (one point per octave) curve has crossed back above ``level`` and stayed
    above for one more octave."""
    below = np.flatnonzero(curve < level)
    if below.size == 0:
        return False
    after = np.flatnonzero(~(curve[below[0]:] < level))
    return after.size > 0 and curve.size - (below[0] + after[0]) >= 2


def scan_profile(m: int, n: int, *, n_corpora: int, seed: int = 0, level: float = DEFAULT_LEVEL,
                 beta_min: float = 1.0, beta_max: float = 2.0 ** 16, per_octave: int = 4,
                 prior: Prior = DEFAULT_PRIOR, device: Any = "cpu") -> TransferProfile:
    """Corpus gradients of ``n_corpora`` corpora along the path, on an adaptive grid around ``beta*``.

    Parameters
    ----------
    m, n : tasks per corpus and examples per task (>= 1).
    n_corpora : corpora (>= 2), drawn with :func:`stumplib.book.studies.transfer.draw_corpus_batch` from ``seed``.
    seed : the corpora's seed.
    level : the relative-error level (> 0) that ends the certified interval.
    beta_min, beta_max : the scan's first scale and its cap (octaves ``beta_min * 2^k``).
    per_octave : points per octave near the crossing (>= 1).
    prior : Prior
        The threshold prior ``U[tau_lo, tau_hi]`` (a :class:`~stumplib.stump.Prior`, checked
        where it is built; default :data:`~stumplib.stump.DEFAULT_PRIOR`, ``U[0.2, 0.8]``).
    device : where the corpus gradients are computed.

    Returns
    -------
    TransferProfile on the merged grid (increasing scales). If the RMS error never comes back above
    ``level`` below ``beta_max``, the grid is the coarse one up to ``beta_max``.
    """
    m, n = check_int("m", m), check_int("n", n)
    n_corpora = check_int("n_corpora", n_corpora, minimum=2)
    seed = check_int("seed", seed, minimum=0)
    level = check_real("level", level, low=0.0, low_open=True)
    beta_min = check_real("beta_min", beta_min, low=0.0, low_open=True)
    beta_max = check_real("beta_max", beta_max, low=2 * beta_min)
    per_octave = check_int("per_octave", per_octave, minimum=1, maximum=16)
    corp = draw_corpus_batch(m, n, n_corpora, seed=seed, prior=prior,
                             device=resolve_device(device), dtype=DEFAULT_DTYPE)
    betas, cs, gps, gs = [], [], [], []
    k, kmax = 0, int(np.floor(np.log2(beta_max / beta_min) + 1e-9))
    while k <= kmax:
        bk = np.array([beta_min * 2.0 ** k])
        c, gp, g = _evaluate(corp, bk, prior)
        betas.append(bk), cs.append(c), gps.append(gp), gs.append(g)
        k += 1
        if _coarse_done(_rms_along(np.concatenate(gps), np.concatenate(gs)), level):
            break
    beta = np.concatenate(betas)
    curve = _rms_along(np.concatenate(gps), np.concatenate(gs))
    lo, hi = certified_interval(beta, curve, level)
    if np.isfinite(hi) and per_octave > 1:
        kc = int(np.floor(np.log2(hi / beta_min)))  # the octave holding the crossing
        fine = beta_min * 2.0 ** (np.arange((kc - 1) * per_octave, (kc + 1) * per_octave + 1)
                                  / per_octave)
        fine = fine[(fine >= beta_min) & ~np.isin(np.round(np.log2(fine / beta_min) * per_octave),
                                                  np.round(np.log2(beta / beta_min) * per_octave))]
        if fine.size:
            c, gp, g = _evaluate(corp, fine, prior)
            betas.append(fine), cs.append(c), gps.append(gp), gs.append(g)
    order = np.argsort(np.concatenate(betas))
    return TransferProfile(m, n, n_corpora, seed, np.concatenate(betas)[order],
                           np.concatenate(cs)[order], np.concatenate(gps)[order],
                           np.concatenate(gs)[order])


def bootstrap_scales(prof: TransferProfile, level: float = DEFAULT_LEVEL, *, n_boot: int = 400,
                     seed: int = 0) -> tuple[float, np.ndarray]:
    """``beta*`` of a profile and its bootstrap replicates over corpora.

    Corpora are resampled with :func:`stumplib.core.stats.resample`; each replicate's RMS curve is the
    root mean square of ``|rel_along|`` over the resampled corpora, and its ``beta*`` the end of
    the first certified interval (NaN where it has none, ``inf`` where the grid ends first).

    Parameters
    ----------
    prof : the corpora's :class:`~stumplib.book.studies.transfer.TransferProfile`.
    level : the relative-error level (> 0).
    n_boot : resamples (>= 10).
    seed : seed of the resampler.

    Returns
    -------
    (beta_star, replicates) : a float and an array of shape ``(n_boot,)``.
    """
    level = check_real("level", level, low=0.0, low_open=True)
    n_boot = check_int("n_boot", n_boot, minimum=10)
    value = prof.certified(level)
    r = np.abs(prof.rel_along).T  # (C, K): corpora are the units
    curves = resample(r, lambda rr: np.sqrt((rr ** 2).mean(1)), n_boot=n_boot, seed=seed,
                      vectorised=True)  # (n_boot, K)
    boot = np.array([certified_interval(prof.beta, cv, level)[1] for cv in curves])
    return float(value), boot


@dataclass(frozen=True)
class CertifiedScales:
    """Certified scales of several shapes with their bootstrap over corpora.

    Attributes
    ----------
    shapes : the ``(m, n)`` pairs, in the order given.
    n_corpora : corpora per shape, shape ``(P,)``.
    value : ``beta*`` per shape, ``(P,)`` (NaN: no certified interval).
    beta_lo : where each shape's certified interval starts, ``(P,)``.
    boot : bootstrap replicates, ``(n_boot, P)``.
    profiles : the :class:`~stumplib.book.studies.transfer.TransferProfile` of each shape (for figures).
    """

    shapes: tuple
    n_corpora: np.ndarray
    value: np.ndarray
    beta_lo: np.ndarray
    boot: np.ndarray
    profiles: tuple

    def of(self, shape: tuple[int, int]) -> float:
        """``beta*`` of one shape.

        Parameters
        ----------
        shape : tuple of int
            ``(m, n)``, one of :attr:`shapes`.

        Returns
        -------
        float
            NaN without a certified interval.
        """
        return float(self.value[self.shapes.index(tuple(shape))])

    def kept(self, keep_all: bool = False) -> tuple[list[int], int, str]:
        """The shapes with a certified scale, and how many are left out and why.

        Parameters
        ----------
        keep_all : bool
            Keep every shape (a token run, whose few corpora certify nothing, uses placeholders).

        Returns
        -------
        keep : list of int
            Indices into :attr:`shapes` of the shapes kept (``beta*`` finite).
        n_dropped : int
            Shapes left out.
        why : str
            The reason, naming the shapes (empty when none is left out).
        """
        ok = [bool(np.isfinite(v) and v > 0) or keep_all for v in self.value]
        out = [s for s, k in zip(self.shapes, ok) if not k]
        why = (f"{len(out)} of {len(ok)} shapes without a certified interval (the RMS error never "
               f"drops below the level): " + ", ".join(f"{m}x{n}" for m, n in out)) if out else ""
        return [i for i, k in enumerate(ok) if k], len(out), why

    def stop_scales(self, keep: Sequence[int], placeholder: float = 0.08) -> np.ndarray:
        """``beta*`` of the shapes ``keep`` (from :meth:`kept`), where training stops.

        A shape kept without a certified interval (a token run, ``kept(keep_all=True)``, whose
        few corpora certify nothing) gets ``placeholder * (m∧n)`` so that the run can proceed;
        no result of a real run uses it.

        Parameters
        ----------
        keep : sequence of int
            Indices into :attr:`shapes`.
        placeholder : float
            The token runs' stand-in ``beta* / (m∧n)``.

        Returns
        -------
        np.ndarray, shape ``(len(keep),)``
        """
        return np.array([self.value[i] if np.isfinite(self.value[i]) and self.value[i] > 0
                         else placeholder * min(self.shapes[i]) for i in keep], dtype=float)

    def interval(self, shape: tuple[int, int], level: float = 0.95) -> tuple[float, float]:
        """The percentile bootstrap interval of one shape's ``beta*``.

        Parameters
        ----------
        shape : tuple of int
            ``(m, n)``, one of :attr:`shapes`.
        level : float
            The coverage.

        Returns
        -------
        (lo, hi) : tuple of float
        """
        from stumplib.core.stats import interval

        return interval(self.boot[:, self.shapes.index(tuple(shape))], level)


def _compute(shapes, n_corpora, seed, level, n_boot, tau_lo, tau_hi, device) -> CertifiedScales:
    profs, value, lo, boot = [], [], [], []
    for (m, n), C in zip(shapes, n_corpora):
        s = shape_seed(seed, m, n)  # corpora and resamples depend on the shape alone
        prof = scan_profile(m, n, n_corpora=C, seed=s, level=level, prior=Prior(tau_lo, tau_hi),
                            device=device)
        val, bt = bootstrap_scales(prof, level, n_boot=n_boot, seed=s)
        profs.append(prof)
        value.append(float(val))
        lo.append(float(certified_interval(prof.beta, prof.curve(), level)[0]))
        boot.append(bt)
    return CertifiedScales(tuple(shapes), np.array(n_corpora), np.array(value), np.array(lo),
                           np.stack(boot, 1), tuple(profs))


def certified_scales(shapes: Sequence[tuple[int, int]], n_corpora: int | Sequence[int], *,
                     seed: int = 0, level: float = DEFAULT_LEVEL, n_boot: int = 400,
                     prior: Prior = DEFAULT_PRIOR, device: Any = "cpu",
                     cache: bool = True) -> CertifiedScales:
    """``beta*(m, n)`` of every shape with its bootstrap over corpora: the book's one computation.

    Parameters
    ----------
    shapes : ``(m, n)`` pairs.
    n_corpora : corpora per shape (>= 2): one number for all, or one per shape.
    seed : the chapter seed (each shape's corpora use :func:`shape_seed`).
    level : relative-error level ending the certified interval (> 0).
    n_boot : bootstrap resamples (>= 10).
    prior : Prior
        The threshold prior ``U[tau_lo, tau_hi]`` (a :class:`~stumplib.stump.Prior`, checked
        where it is built; default :data:`~stumplib.stump.DEFAULT_PRIOR`, ``U[0.2, 0.8]``).
    device : where the corpus gradients are computed.
    cache : reuse a stored result of the same arguments (:func:`stumplib.core.memo.remember`, silent).

    Returns
    -------
    CertifiedScales
    """
    shp = check_shapes(shapes)
    Cs = [n_corpora] * len(shp) if isinstance(n_corpora, (int, np.integer)) else list(n_corpora)
    if len(Cs) != len(shp):
        raise ValueError(f"n_corpora must be one number or one per shape; got {len(Cs)} for "
                         f"{len(shp)} shapes")
    Cs = [check_int(f"n_corpora[{i}]", c, minimum=2) for i, c in enumerate(Cs)]
    seed = check_int("seed", seed, minimum=0)
    level = check_real("level", level, low=0.0, low_open=True)
    n_boot = check_int("n_boot", n_boot, minimum=10)
    tau_lo, tau_hi = as_prior(prior).as_tuple()
    dev = resolve_device(device)
    args = (shp, Cs, seed, level, n_boot, tau_lo, tau_hi, dev)
    if cache:
        from stumplib.core.memo import remember

        config = {"shapes": shp, "n_corpora": Cs, "seed": seed, "level": level, "n_boot": n_boot,
                  "prior": [tau_lo, tau_hi]}
        return remember("certified_scales", config, lambda: _compute(*args), exclusive=True)
    return _compute(*args)


def slope(cs: CertifiedScales, x: str = "mn", shapes: Sequence[tuple[int, int]] | None = None,
          level: float = 0.95) -> PowerLawFit | None:
    """Log-log slope of ``beta*`` against ``x`` with the interval from refitting every replicate.

    Shapes without a certified scale are left out; replicates with a non-finite ``beta*`` at a
    kept shape are dropped (:func:`stumplib.core.stats.fit_replicates`).

    Parameters
    ----------
    cs : the certified scales.
    x : ``"mn"`` (``m ∧ n``), ``"m"`` or ``"n"``.
    shapes : the shapes to fit over (default: all of ``cs``).
    level : the interval's level.

    Returns
    -------
    PowerLawFit, or ``None`` when fewer than two distinct ``x`` remain.
    """
    if x not in ("mn", "m", "n"):
        raise ValueError(f"x must be one of 'mn', 'm', 'n'; got {x!r}")
    sel = list(cs.shapes) if shapes is None else [tuple(s) for s in shapes]
    idx = [cs.shapes.index(s) for s in sel if np.isfinite(cs.of(s)) and cs.of(s) > 0]
    xv = np.array([{"mn": min, "m": lambda a, b: a, "n": lambda a, b: b}[x](*cs.shapes[i])
                   for i in idx], float)
    if np.unique(xv).size < 2:
        return None
    return fit_replicates(xv, cs.value[idx], cs.boot[:, idx], level=level)


def worst_per_value(x: Any, y: Any, *, worst: str = "min") -> tuple[np.ndarray, np.ndarray]:
    """The worst entry at each distinct ``x``: the column with the smallest (``worst="min"``) or
    largest (``"max"``) ``y`` among the columns that share that ``x``.

    A NaN counts as the worst (a shape without a certified scale is worse than any with one), so
    it propagates to the selected value.

    Parameters
    ----------
    x : shape ``(P,)``: the variable per column (``m ∧ n`` per shape).
    y : shape ``(..., P)``: the values (one row per bootstrap replicate, or a single row).
    worst : ``"min"`` or ``"max"``.

    Returns
    -------
    (xs, idx) : ``xs`` the distinct ``x`` in increasing order, shape ``(V,)``; ``idx`` the column
    index of the worst entry at each, shape ``(..., V)``.
    """
    if worst not in ("min", "max"):
        raise ValueError(f"worst must be 'min' or 'max'; got {worst!r}")
    x = np.asarray(x, float).ravel()
    y = np.asarray(y, float)
    if y.shape[-1:] != x.shape:
        raise ValueError(f"y must end in an axis of length {x.size} (one entry per x); got {y.shape}")
    xs = np.unique(x)
    pick = np.argmin if worst == "min" else np.argmax  # both return the first NaN
    idx = []
    for v in xs:
        cols = np.flatnonzero(x == v)
        idx.append(cols[pick(y[..., cols], axis=-1)])
    return xs, np.stack(idx, -1)


def worst_slope(cs: CertifiedScales, shapes: Sequence[tuple[int, int]] | None = None,
                level: float = 0.95) -> tuple[PowerLawFit | None, list[tuple[int, int]]]:
    """Log-log slope of the *smallest* ``beta*`` at each ``m ∧ n`` against ``m ∧ n``.

    The worst shape is chosen again in every bootstrap replicate (the replicate's minimum over the
    shapes sharing ``m ∧ n``), so the interval holds the uncertainty of which shape is worst.

    Parameters
    ----------
    cs : the certified scales.
    shapes : the shapes to choose from (default: all of ``cs``).
    level : the interval's level.

    Returns
    -------
    (fit, worst) : the :class:`~stumplib.core.stats.PowerLawFit` (``None`` with fewer than two
    distinct ``m ∧ n`` of finite worst ``beta*``) and the worst shape at each ``m ∧ n`` by the
    point estimate, in increasing ``m ∧ n``.
    """
    sel = list(cs.shapes) if shapes is None else [tuple(s) for s in shapes]
    cols = [cs.shapes.index(s) for s in sel]
    mn = np.array([min(s) for s in sel], float)
    value, boot = cs.value[cols], cs.boot[:, cols]
    xs, idx = worst_per_value(mn, value, worst="min")
    _, idx_b = worst_per_value(mn, boot, worst="min")
    y, yb = value[idx], np.take_along_axis(boot, idx_b, axis=1)
    worst = [sel[i] for i in idx]
    ok = np.isfinite(y) & (y > 0)
    if ok.sum() < 2:
        return None, worst
    return fit_replicates(xs[ok], y[ok], yb[:, ok], level=level), worst
