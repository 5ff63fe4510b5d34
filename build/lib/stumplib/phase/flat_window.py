"""The flat window of the semantic branch: why converged minimisers and the accurate theory part
near ``alpha = 1``, measured.

Four measurements, each a function here (chapter 6's section "The flat window" calls them):

- **Overlaps per d** (:func:`read_minimisers`, :func:`overlap_table`): the recorded minimisers'
  training loss, ``theta = sigma^2 Q*.Q / d``, ``q = sigma^2 |Q|^2 / d``, ``|m|`` and exact test
  error, seed means and standard errors per ``(alpha, d)``.
- **The landscape along theta** (:func:`hold_theta`, :func:`landscape`): the minimiser of the
  regularised empirical risk with ``theta`` held (the constraint ``Q*.Q = theta d / sigma^2`` is a
  plane in ``Q``; the gradient and the start are projected onto it, so L-BFGS stays on it), per
  seed over a window of ``theta``. Its theory, :func:`held_theory`, is the state evolution with a
  Lagrange multiplier on ``theta``: holding ``theta`` frees the conjugate ``theta_hat`` of the
  prior (ridge) channel, which then takes the value that returns the held ``theta``,
  ``theta_hat = theta (lambda + V_hat sigma^2) / sigma^4``; the output channel's conjugates
  (``q_hat, V_hat`` and the ``theta theta_hat / q`` term of ``V_hat``) are unchanged, so

      q = sigma^2 (q_hat sigma^2 + m_hat^2) / (lambda + V_hat sigma^2)^2 + theta^2 / sigma^2,
      V = sigma^2 / (lambda + V_hat sigma^2),

  iterated to their fixed point at each ``theta``. The multiplier is the slope of the constrained
  training loss: ``dE/dtheta = -(F(theta) - theta) / (sigma^2 V)`` with ``F(theta) = sigma^4
  theta_hat_out / (lambda + V_hat sigma^2)`` the ``theta`` the unconstrained update returns, so
  ``E`` is smallest at the fixed point and its curvature there is ``-g'(theta) / (sigma^2 V)``:
  a flat residual ``g = F - theta`` (chapter 6, Appendix D) is a flat loss. (Appendix D's
  :func:`.se.theta_profile` updates ``q`` with the output channel's ``theta_hat`` instead; the
  two agree at the root only.)
- **Finite-size scaling** (:func:`choose_form`): the approach in ``d`` of a seed mean, chosen by
  Akaike's criterion among ``a + b/d``, ``a + b/sqrt(d)``, ``a + b/d + c/d^2`` and the crossover
  ``a + b/sqrt(d) + c/d``, with the limit ``a`` and its interval.
- **The theory checked** (:func:`held_theory`'s root, a second route to the fixed point, and
  :func:`replicon`): the replica-symmetric point's stability against replica symmetry breaking
  (the de Almeida-Thouless condition of ridge-regularised empirical risk minimisation,
  ``alpha E |I - J|_F^2 < 1`` with ``J`` the Jacobian of the proximal map in its centre).

:func:`explanation_verdict` turns them into the section's verdict.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from stumplib.core.stats import Estimate
from stumplib.core.validation import check_int, check_real
from stumplib.book.verdicts import Verdict, against_target
from stumplib.phase.minimise import (Problem, exact_test_error, make_problem, minimise, read_runs,
                                     summaries)

__all__ = ["MINIMISER_FILES", "FLAT_WINDOW_RUN", "QUANTITIES", "FORMS", "read_minimisers",
           "overlap_table", "theory_points", "scaling_rows", "held_root", "HeldTheta", "hold_theta", "constrained_minimise", "landscape",
           "held_theory", "landscape_fit", "landscape_summary", "minima_rows", "replicon", "choose_form", "explanation_verdict",
           "read_flat_window"]

_SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
#: the recorded minimiser runs, in order of preference (the extended deciding run first)
MINIMISER_FILES = (_SCRIPTS / "PHASE_MINIMISERS_4000.npz", _SCRIPTS / "PHASE_MINIMISERS.npz")
#: this section's recorded run (``scripts/phase_flat_window.py``)
FLAT_WINDOW_RUN = _SCRIPTS / "PHASE_FLAT_WINDOW.npz"
#: the overlaps of the figure, in its order (keys of :func:`overlap_table`)
QUANTITIES = ("train_loss", "theta", "q", "abs_m", "test_error")


# ----------------------------------------------------------------------------------------------
# the recorded minimisers
# ----------------------------------------------------------------------------------------------
def _requested_ds(command: str) -> list[int]:
    """The ``--d`` values of a recorded command line (empty if none)."""
    m = re.search(r"--d((?:\s+\d+)+)", command)
    return [int(v) for v in m.group(1).split()] if m else []


def read_minimisers(paths: Sequence[str | Path] | None = None) -> tuple[dict[int, dict], dict[str, Any]] | None:
    """The recorded minimiser run to use: among ``paths`` (default :data:`MINIMISER_FILES`), the
    complete files (every ``--d`` of the recorded command finished), the one with the largest
    ``d`` (ties: the first listed).

    Parameters
    ----------
    paths : candidate files written by ``scripts/phase_minimisers.py``.

    Returns
    -------
    ``(runs, meta)`` or ``None`` when no complete file exists: ``runs`` as
    :func:`.minimise.read_runs` gives them, ``meta`` the file's ``path``, ``command``, ``commit``,
    ``machine``, ``seconds`` and its model parameters (``sigma``, ``lam``, ``omega``; the defaults
    0.5, 0.01, 0.3 where the file does not record them, as the first deciding run did not).
    """
    best = None
    for p in [Path(x) for x in (MINIMISER_FILES if paths is None else paths)]:
        if not p.is_file():
            continue
        with np.load(p) as flat:
            ds = [int(d) for d in np.atleast_1d(flat["ds"])]
            command = str(flat["command"])
            want = _requested_ds(command)
            if not ds or (want and not set(want) <= set(ds)):
                continue
            meta = dict(path=str(p), command=command, commit=str(flat["commit"]),
                        machine=str(flat["machine"]), seconds=float(flat["seconds"]),
                        **{k: float(flat[k]) if k in flat else v
                           for k, v in (("sigma", 0.5), ("lam", 0.01), ("omega", 0.3))})
            if best is None or max(ds) > max(best[0]):
                best = (read_runs(flat), meta)
    return best


def overlap_table(runs: Mapping[int, Mapping[str, np.ndarray]], alphas: Sequence[float], *,
                  sigma: float = 0.5) -> dict[str, np.ndarray]:
    """Seed means and standard errors of every overlap per ``(alpha, d)``, over converged runs.

    Parameters
    ----------
    runs : mapping
        ``{d: minimiser_runs output}`` (each with ``alphas`` and ``(S, A_d)`` arrays
        ``train_loss``, ``theta_emp``, ``q_emp``, ``m``, ``test_error``, ``converged``; a ``d``
        without an ``alpha`` gives NaN there).
    alphas : sequence of float, shape ``(A,)``
        The sample ratios to tabulate (matched to a run's to within ``1e-6``).
    sigma : float, optional
        Token noise (default 0.5): ``theta`` is given in the theory's normalisation,
        ``theta = sigma^2 theta_emp``.

    Returns
    -------
    dict: ``ds`` (D,), ``alphas`` (A,); for each of :data:`QUANTITIES` ``<k>`` (A, D) mean,
    ``<k>_se`` (A, D) standard error, ``<k>_sd`` (A, D) spread over seeds; ``n`` (A, D) seeds.
    """
    ds = sorted(int(d) for d in runs)
    al = np.asarray(alphas, dtype=float)
    out: dict[str, np.ndarray] = {"ds": np.asarray(ds), "alphas": al, "n": np.zeros((al.size, len(ds)))}
    for k in QUANTITIES:
        for suf in ("", "_se", "_sd"):
            out[k + suf] = np.full((al.size, len(ds)), np.nan)
    for j, d in enumerate(ds):
        r = runs[d]
        vals = dict(train_loss=r["train_loss"], theta=sigma ** 2 * r["theta_emp"], q=r["q_emp"],
                    abs_m=np.abs(r["m"]), test_error=r["test_error"])
        for i, a in enumerate(al):
            col = np.flatnonzero(np.isclose(np.asarray(r["alphas"], dtype=float), a, atol=1e-6))
            if not col.size:
                continue
            ok = np.asarray(r["converged"], dtype=bool)[:, col[0]]
            out["n"][i, j] = ok.sum()
            for k, v in vals.items():
                x = np.asarray(v)[ok, col[0]]
                out[k][i, j] = x.mean() if x.size else np.nan
                out[k + "_sd"][i, j] = x.std(ddof=1) if x.size > 1 else np.nan
                out[k + "_se"][i, j] = out[k + "_sd"][i, j] / math.sqrt(max(x.size, 1))
    return out


def theory_points(alphas: Sequence[float], *, known: Mapping[str, np.ndarray] | None = None,
                  omega: float = 0.3, sigma: float = 0.5, lam: float = 0.01, rtol: float = 1e-3,
                  seed: int = 0, cache: bool = True) -> dict[str, np.ndarray]:
    """The accurate theory (semantic branch) at each of ``alphas``, with quadrature errors.

    Points that ``known`` (chapter 6's :func:`.diagram.omega_curves` output) holds converged are
    taken from it; the others are solved with :func:`.solver.state_evolution` at ``rtol`` (kept
    with :func:`stumplib.core.memo.remember` when ``cache``).

    Parameters
    ----------
    alphas : sequence of float, shape ``(A,)``
        Sample ratios.
    known : mapping or None, optional
        Solved curves (``sem_alpha``, ``sem_<key>``, ``sem_<key>_err``, ``sem_outcome``); a point
        within ``1e-4`` of an ``alpha`` and converged is reused. ``None``: solve every point.
    omega, sigma, lam : float, optional
        The model: positional weight ``omega`` (default 0.3), token noise ``sigma`` (0.5) and
        ridge ``lam`` (0.01).
    rtol : float, optional
        The solver's relative accuracy target (default ``1e-3``).
    seed : int, optional
        Seed of the solver's quadrature scramblings (default 0).
    cache : bool, optional
        Whether to keep the solved points with :func:`stumplib.core.memo.remember` (under
        ``ch6_flat_theory``; default ``True``).

    Returns
    -------
    dict of (A,) arrays: ``<k>`` and ``<k>_err`` for ``k`` in ``q, m, V, theta, test_error,
    train_loss`` (NaN where no converged point), ``alphas``.
    """
    from stumplib.phase.solver import OUTPUT_KEYS, state_evolution

    al = np.asarray(alphas, dtype=float)
    out = {k: np.full(al.size, np.nan) for key in OUTPUT_KEYS for k in (key, f"{key}_err")}
    missing = []
    for i, a in enumerate(al):
        hit = np.array([], dtype=int)
        if known is not None:
            hit = np.flatnonzero(np.isclose(known["sem_alpha"], a, rtol=0, atol=1e-4)
                                 & (np.asarray(known["sem_outcome"]) == "converged"))
        if hit.size:
            for key in OUTPUT_KEYS:
                out[key][i], out[f"{key}_err"][i] = known[f"sem_{key}"][hit[0]], known[f"sem_{key}_err"][hit[0]]
        else:
            missing.append(i)
    if missing:
        def compute() -> dict[str, np.ndarray]:
            r = state_evolution(al[missing], omega=omega, sigma=sigma, lam=lam, rtol=rtol, seed=seed,
                                stability=False, on_accuracy="undecided")
            conv = np.asarray(r["outcome"]) == "converged"
            return {k: np.where(conv, np.asarray(r[k], dtype=float), np.nan)
                    for key in OUTPUT_KEYS for k in (key, f"{key}_err")}

        if cache:
            from stumplib.core.memo import remember
            got = remember("theory_points", dict(alphas=al[missing].tolist(), omega=omega, sigma=sigma,
                                                 lam=lam, rtol=rtol, seed=seed), compute)
        else:
            got = compute()
        for k, v in got.items():
            out[k][missing] = np.asarray(v, dtype=float)
    return dict(out, alphas=al)


def scaling_rows(table: Mapping[str, np.ndarray], alpha_index: int = 0, *,
                 quantities: Sequence[str] = ("train_loss", "theta", "q", "test_error"),
                 theory: Mapping[str, np.ndarray] | None = None) -> tuple[list[dict], dict[str, dict]]:
    """:func:`choose_form` for each overlap at one alpha, as table rows.

    Parameters
    ----------
    table : mapping
        :func:`overlap_table`'s output.
    alpha_index : int, optional
        Row of ``table`` (index into its ``alphas``; default 0). Only ``d`` with a finite
        ``theta`` and more than one converged seed are used; a quantity with fewer than four such
        ``d`` gets no row.
    quantities : sequence of str, optional
        Keys of ``table`` to extrapolate (default ``train_loss``, ``theta``, ``q``,
        ``test_error``).
    theory : mapping or None, optional
        :func:`theory_points`' output (the rows show the theory and the distance to it).

    Returns
    -------
    (rows, fits): one row per quantity (chosen form, its limit and interval, the acceptable forms'
    hull, the theory, the limit's relative distance to it), and ``{quantity: choose_form output}``.
    """
    rows, fits = [], {}
    ok = np.isfinite(table["theta"][alpha_index]) & (table["n"][alpha_index] > 1)
    d = table["ds"][ok]
    for k in quantities:
        y, se = table[k][alpha_index][ok], table[f"{k}_se"][alpha_index][ok]
        if d.size < 4:
            continue
        f = choose_form(d, y, se)
        fits[k] = f
        row = {"quantity": k.replace("_", " "), "form": f["form"], "limit": f["limit"].value,
               "95% interval": f"[{f['limit'].lo:.5g}, {f['limit'].hi:.5g}]",
               "forms within 2 AIC": f"[{f['envelope'].lo:.5g}, {f['envelope'].hi:.5g}]",
               "chi2 / dof": f"{f['fits'][f['form']]['chi2']:.1f} / {f['fits'][f['form']]['dof']}"}
        if theory is not None and k in theory:
            t = float(theory[k][alpha_index])
            row.update(theory=t, **{"limit / theory - 1": f["limit"].value / t - 1})
        rows.append(row)
    return rows, fits


def held_root(theory: Mapping[str, np.ndarray], *, sigma: float = 0.5,
              level: float = 0.95) -> dict[str, Estimate]:
    """The fixed point along ``theta`` by a second route: per scrambling of :func:`held_theory`, the
    root of the residual ``g = F - theta`` (a least-squares polynomial of degree up to 3 through
    it; the root inside the window nearest its first sign change from + to -) and the minimum of the constrained training loss (:func:`landscape_fit`'s cubic); Student
    intervals over the scramblings.

    Parameters
    ----------
    theory : mapping
        :func:`held_theory`'s output (``thetas``, shape ``(T,)``; ``residual``, ``train_loss``,
        ``V``, shape ``(K, T)``).
    sigma : float, optional
        Token noise (default 0.5).
    level : float, optional
        Interval coverage, in ``(0, 1)`` (default 0.95).

    Returns
    -------
    dict of Estimates: ``root``, ``loss_min``, ``curvature`` (the loss's, at its minimum),
    ``curvature_from_g`` (``-g' / (sigma^2 V)``, ``g'`` the slope of a line through the residual
    over the window, ``V`` its mean there).
    """
    from stumplib.core.stats import crossing, mean_interval

    th, g = np.asarray(theory["thetas"], dtype=float), np.asarray(theory["residual"], dtype=float)
    deg, roots = min(3, th.size - 1), []
    for gk in g:
        near = crossing(th, gk, 0.0, direction="down", which="first")
        r = np.roots(np.polyfit(th - near, gk, deg)) + near if np.isfinite(near) else np.array([])
        r = r[np.isreal(r)].real
        r = r[(r >= th.min()) & (r <= th.max())]
        roots.append(r[np.argmin(np.abs(r - near))] if r.size else np.nan)
    roots = np.asarray(roots)
    fit = landscape_fit(th, theory["train_loss"])
    slopes = np.array([np.polyfit(th, gk, 1)[0] for gk in g])
    fin = np.isfinite(roots)
    return dict(root=mean_interval(roots[fin], level=level) if fin.sum() > 1 else Estimate.nan("seeds"),
                loss_min=fit["theta_min"], curvature=fit["curvature"],
                curvature_from_g=mean_interval(-slopes / (sigma ** 2 * np.asarray(theory["V"]).mean(1)),
                                               level=level))


# ----------------------------------------------------------------------------------------------
# the landscape along theta at finite d
# ----------------------------------------------------------------------------------------------
@dataclass
class HeldTheta(Problem):
    """A :class:`.minimise.Problem` whose objective holds ``Q* . Q = target`` (per seed): the
    argument is projected onto the plane and the gradient onto its directions, so that a descent
    from a point on the plane stays on it and stops at the constrained minimiser.

    Attributes
    ----------
    target : (S,) the held ``Q* . Q`` of every seed (``theta d / sigma^2``).
    """

    target: torch.Tensor

    def objective(self, Q: torch.Tensor, mask: torch.Tensor, sl: slice = slice(None)):
        """Objective (S', R) and projected gradient (S', d, R) on the plane of seeds ``sl``.

        Parameters
        ----------
        Q : torch.Tensor, shape ``(S', d, R)``
            Candidate weights of the seeds ``sl`` (``R`` per seed); projected onto the plane
            ``Q* . Q = target`` before the objective is evaluated.
        mask : torch.Tensor, shape ``(1, n, R)``
            The samples each run uses (1 or 0), as in :meth:`.minimise.Problem.objective`.
        sl : slice, optional
            The seeds evaluated (default: all).

        Returns
        -------
        L : torch.Tensor, shape ``(S', R)``
            The objective at the projected point.
        g : torch.Tensor, shape ``(S', d, R)``
            Its gradient with the component along ``Q*`` removed.
        """
        qs = self.q_star[sl][:, :, None]
        nrm = (qs * qs).sum(1, keepdim=True)
        Qp = Q + (self.target[sl][:, None, None] - (qs * Q).sum(1, keepdim=True)) / nrm * qs
        L, g = Problem.objective(self, Qp, mask, sl)
        return L, g - (qs * g).sum(1, keepdim=True) / nrm * qs


def hold_theta(pb: Problem, theta: float) -> HeldTheta:
    """The problem ``pb`` with ``theta = sigma^2 Q* . Q / d`` held at ``theta`` for every seed.

    Parameters
    ----------
    pb : Problem
        The problem (:func:`.minimise.make_problem`).
    theta : float
        The held overlap in ``(0, sigma^2]`` (theory normalisation); the target is
        ``theta d / sigma^2`` for every seed.

    Returns
    -------
    HeldTheta
    """
    theta = check_real("theta", theta, low=0.0, low_open=True, high=pb.sigma ** 2)
    target = torch.full((pb.q_star.shape[0],), theta * pb.d / pb.sigma ** 2, dtype=pb.X.dtype,
                        device=pb.X.device)
    return HeldTheta(**{f.name: getattr(pb, f.name) for f in fields(Problem)}, target=target)


def constrained_minimise(pb: Problem, s: int, n: int, theta: float, Q0: torch.Tensor, *,
                         gtol: float = 1e-8, max_iter: int = 20000) -> dict[str, Any]:
    """The minimiser of seed ``s``'s regularised empirical risk with ``theta`` held.

    ``Q0`` is projected onto the plane ``Q* . Q = theta d / sigma^2`` and
    :func:`.minimise.minimise` runs on :func:`hold_theta`'s objective (L-BFGS, Newton-CG finish);
    the relative gradient is that of the projected gradient.

    Parameters
    ----------
    pb : Problem
        The problem.
    s : int
        Seed index into ``pb``.
    n : int
        Number of samples used.
    theta : float
        The held overlap in ``(0, sigma^2]`` (theory normalisation).
    Q0 : torch.Tensor, shape ``(d,)``
        Start (e.g. the unconstrained minimiser), projected onto the plane first.
    gtol : float, optional
        Relative-gradient tolerance (default ``1e-8``), as in :func:`.minimise.minimise`.
    max_iter : int, optional
        Iterations allowed (default 20000), as in :func:`.minimise.minimise`.

    Returns
    -------
    :func:`.minimise.minimise`'s dict (``Q`` on the plane, ``loss`` = objective / d, ...).
    """
    hp = hold_theta(pb, theta)
    qs = pb.q_star[s]
    Q0 = Q0 + (hp.target[s] - qs @ Q0) / (qs @ qs) * qs
    return minimise(hp, s, n, Q0, gtol=gtol, max_iter=max_iter)


def landscape(alpha: float, d: int, seeds: Sequence[int], thetas: Sequence[float], *,
              omega: float = 0.3, sigma: float = 0.5, lam: float = 0.01,
              A: Any = ((0.6, 0.4), (0.4, 0.6)), seed: int = 0, gtol: float = 1e-8,
              device: Any = "cpu", progress: bool = False) -> dict[str, np.ndarray]:
    """Per seed: the unconstrained minimiser from ``Q = Q*`` (the deciding run's start), the
    constrained minimisers along the held ``thetas`` and the lowest minimiser found.

    The empirical risk can have several minima near the semantic one (at finite ``d`` they differ
    mainly in the sign of the small positional overlap ``m``). The constrained minimiser at each
    ``theta`` is therefore solved twice, by continuation up the grid and down it (both sweeps
    start from the projection of the minimiser from ``Q*``), and the lower is kept; the lowest
    point of the curve, released (minimised without the constraint), gives the ``best`` minimiser.

    Parameters
    ----------
    alpha : float
        Sample ratio ``n / d``, in ``(0, 100]``; ``n = round(alpha d)``.
    d : int
        Dimension (``>= 4``).
    seeds : sequence of int, length ``S``
        Seed offsets (as :func:`.minimise.make_problem`), one problem each.
    thetas : sequence of float, shape ``(T,)``
        Held overlaps in ``(0, sigma^2]``, strictly increasing (theory normalisation).
    omega, sigma, lam : float, optional
        The model: positional weight (default 0.3), token noise (0.5), ridge (0.01).
    A : array_like, shape ``(2, 2)``, optional
        The teacher's attention matrix (default ``((0.6, 0.4), (0.4, 0.6))``).
    seed : int, optional
        The chapter's seed (default 0).
    gtol : float, optional
        Relative-gradient tolerance of every minimisation (default ``1e-8``).
    device : str or torch.device, optional
        Where to minimise (default ``"cpu"``).
    progress : bool, optional
        Show a tqdm bar over seeds (default ``False``).

    Returns
    -------
    dict: ``thetas`` (T,); (S, T) ``train_loss`` (objective / d), ``q``, ``m``, ``test_error``,
    ``converged``, ``sweeps_differ`` (the two sweeps ended in different minima); for ``free``
    (from ``Q*``) and ``best`` (the lowest found), (S,) ``<which>_theta``, ``_train_loss``, ``_q``,
    ``_m``, ``_test_error``, ``_converged``; ``seeds``, ``d``, ``alpha``.
    """
    alpha = check_real("alpha", alpha, low=0.0, low_open=True, high=100.0)
    d = check_int("d", d, minimum=4)
    th = np.asarray([check_real(f"thetas[{i}]", t, low=0.0, low_open=True, high=sigma ** 2)
                     for i, t in enumerate(thetas)], dtype=float)
    if np.any(np.diff(th) <= 0):
        raise ValueError("thetas must be increasing")
    n = int(round(alpha * d))
    S_, T_ = len(seeds), th.size
    out = {k: np.zeros((S_, T_)) for k in ("train_loss", "q", "m", "test_error", "converged",
                                            "sweeps_differ")}
    for w in ("free", "best"):
        out.update({f"{w}_{k}": np.zeros(S_) for k in ("theta", "train_loss", "q", "m", "test_error",
                                                        "converged")})
    it = seeds
    if progress:
        from tqdm.auto import tqdm
        it = tqdm(seeds, desc=f"d = {d}")

    def record(i: int, which: str, r: dict, pb: Problem) -> None:
        sm = summaries(r["Q"][None], pb.q_star, sigma)
        out[f"{which}_theta"][i] = sigma ** 2 * sm["theta_emp"][0]
        out[f"{which}_q"][i], out[f"{which}_m"][i] = sm["q_emp"][0], sm["m"][0]
        out[f"{which}_train_loss"][i], out[f"{which}_converged"][i] = r["loss"], r["converged"]
        out[f"{which}_test_error"][i] = exact_test_error(r["Q"], pb.q_star[0], omega=omega,
                                                         sigma=sigma, A=A)

    for i, s in enumerate(it):
        pb = make_problem(d, [s], n, seed=seed, omega=omega, sigma=sigma, lam=lam, A=A, device=device)
        free = minimise(pb, 0, n, pb.q_star[0].clone(), gtol=gtol)
        record(i, "free", free, pb)
        runs: list[dict | None] = [None] * T_
        for order in (range(T_), range(T_ - 1, -1, -1)):
            Q0 = free["Q"]
            for j in order:
                r = constrained_minimise(pb, 0, n, float(th[j]), Q0, gtol=gtol)
                Q0 = r["Q"]
                if runs[j] is not None:
                    out["sweeps_differ"][i, j] = abs(r["loss"] / runs[j]["loss"] - 1) > 1e-9
                if runs[j] is None or r["loss"] < runs[j]["loss"]:
                    runs[j] = r
        Q = torch.stack([r["Q"] for r in runs])
        out["train_loss"][i] = [r["loss"] for r in runs]
        out["converged"][i] = [r["converged"] for r in runs]
        sm = summaries(Q, pb.q_star.expand(T_, d), sigma)
        out["q"][i], out["m"][i] = sm["q_emp"], sm["m"]
        out["test_error"][i] = exact_test_error(Q, pb.q_star.expand(T_, d), omega=omega, sigma=sigma, A=A)
        low = runs[int(np.argmin(out["train_loss"][i]))]
        best = minimise(pb, 0, n, low["Q"], gtol=gtol)
        record(i, "best", best if best["loss"] <= free["loss"] else free, pb)
    for k in ("converged", "sweeps_differ", "free_converged", "best_converged"):
        out[k] = out[k].astype(bool)
    return dict(out, thetas=th, seeds=np.asarray(seeds), d=np.asarray(d), alpha=np.asarray(alpha))


# ----------------------------------------------------------------------------------------------
# the theory along theta (theta held by a Lagrange multiplier)
# ----------------------------------------------------------------------------------------------
def held_theory(alpha: float, thetas: Sequence[float], *, omega: float = 0.3, sigma: float = 0.5,
                lam: float = 0.01, A: Any = ((0.6, 0.4), (0.4, 0.6)), log2_points: int = 12,
                n_scramblings: int = 8, seed: int = 0, tol: float = 1e-10,
                max_iter: int = 2000) -> dict[str, np.ndarray]:
    """The state evolution with ``theta`` held (module docstring): the constrained minimum's
    training loss, overlaps and test error along ``theta``, once per scrambling of a Sobol rule.

    Each scrambling is its own rule (:func:`.solver.scrambled_rules`); their spread is the
    quadrature error. At each ``theta`` (``m = 0``, swap-symmetric ``A``) ``q`` and ``V`` are
    iterated with damping 0.5 to a relative change below ``tol``; the proximal problems are
    followed from their last minimisers and searched from every start every tenth update and at
    the end.

    Parameters
    ----------
    alpha : float
        Sample ratio.
    thetas : sequence of float, shape ``(T,)``
        Held overlaps in ``(0, sigma^2]``.
    omega, sigma, lam : float, optional
        The model: positional weight (default 0.3), token noise (0.5), ridge (0.01).
    A : array_like, shape ``(2, 2)``, optional
        The teacher's attention matrix (default ``((0.6, 0.4), (0.4, 0.6))``).
    log2_points : int, optional
        Each Sobol rule has ``2**log2_points`` nodes (default 12).
    n_scramblings : int, optional
        Number of scrambled rules ``K`` (default 8).
    seed : int, optional
        Seed of the scramblings (default 0).
    tol : float, optional
        Relative change of ``q, V`` below which they count as converged (default ``1e-10``).
    max_iter : int, optional
        Updates allowed (default 2000).

    Returns
    -------
    dict of (K, T) arrays, one row per scrambling: ``train_loss``, ``q``, ``V``, ``F_theta``
    (the theta the unconstrained update returns), ``residual`` (``F - theta``), ``test_error``,
    ``slope`` (``dE/dtheta = -residual / (sigma^2 V)``, the multiplier); ``thetas`` (T,),
    ``n_iter``, ``log2_points``.

    Raises
    ------
    StateEvolutionError when ``q, V`` do not converge.
    """
    from stumplib.phase.replica import se_update
    from stumplib.phase.setting import StateEvolutionError
    from stumplib.phase.solver import scrambled_rules

    rho = sigma * sigma
    th = np.asarray([check_real(f"thetas[{i}]", t, low=0.0, low_open=True, high=rho)
                     for i, t in enumerate(thetas)], dtype=float)
    nodes, w = scrambled_rules(log2_points, n_scramblings, seed)
    K, T_ = nodes.shape[0], th.size
    nd = np.repeat(nodes, T_, axis=0)  # row k * T + j: scrambling k, theta j
    wt = np.repeat(w, T_, axis=0)
    t = np.tile(th, K)
    a = np.full(t.shape, float(alpha))
    q = np.maximum(rho * (0.05 + 0.4 * min(alpha, 2) / (1 + min(alpha, 2))), 1.5 * t ** 2 / rho)
    V = np.full(t.shape, 20.0)
    kw = dict(omega=omega, sigma=sigma, lam=lam, A=A, nodes=nd, weights=wt, with_test_error=False)
    warm = None
    for it in range(max_iter):
        up = se_update(a, q, 0.0, V, t, warm=warm, restart=warm is None or it % 10 == 0, **kw)
        warm = up["prox"]
        den = lam + up["V_hat"] * rho
        qn = rho * (up["q_hat"] * rho + up["m_hat"] ** 2) / den ** 2 + t ** 2 / rho
        rel = max(np.abs(qn / q - 1).max(), np.abs(up["V"] / V - 1).max())
        q, V = 0.5 * (q + qn), 0.5 * (V + up["V"])
        if rel < tol and it % 10 == 9:
            break
    else:
        raise StateEvolutionError(f"held_theory: q, V did not converge in {max_iter} updates "
                                  f"(last relative change {rel:.1e})")
    kw["with_test_error"] = True
    up = se_update(a, q, 0.0, V, t, warm=warm, restart=True, **kw)
    res = up["theta"] - t
    out = dict(train_loss=up["train_loss"], q=q, V=V, F_theta=up["theta"], residual=res,
               test_error=up["test_error"], slope=-res / (rho * V))
    return dict({k: v.reshape(K, T_) for k, v in out.items()}, thetas=th, n_iter=np.asarray(it + 1),
                log2_points=np.asarray(log2_points))


# ----------------------------------------------------------------------------------------------
# curvature and minimum of a loss curve along theta
# ----------------------------------------------------------------------------------------------
def _cubic(theta: np.ndarray, E: np.ndarray, centre: float) -> dict[str, float]:
    """Least-squares cubic through ``E(theta)``: its minimum inside the window, the curvature there
    and the curvatures of quadratic fits on either side of it."""
    x = theta - centre
    c = np.polyfit(x, E, 3)
    d1, d2 = np.polyder(c), np.polyder(c, 2)
    roots = np.roots(d1)
    roots = roots[np.isreal(roots)].real
    roots = roots[(np.polyval(d2, roots) > 0) & (roots >= x.min()) & (roots <= x.max())]
    xm = float(roots[0]) if roots.size else float(x[np.argmin(E)])
    res = {"theta_min": xm + centre, "curvature": float(np.polyval(d2, xm)),
           "third": float(6 * c[0]), "E_min": float(np.polyval(c, xm))}
    for side, sel in (("left", x <= xm), ("right", x >= xm)):
        pts = np.flatnonzero(sel)
        if pts.size < 3:  # the minimum's nearest three points on that side
            near = np.argsort(np.abs(x - xm))
            pts = np.sort(np.r_[pts, near[~np.isin(near, pts)]][:3])
        res[f"curvature_{side}"] = float(2 * np.polyfit(x[pts], E[pts], 2)[0])
    return res


def landscape_fit(theta: np.ndarray, E: np.ndarray, *, centre: float | None = None,
                  level: float = 0.95) -> dict[str, Estimate]:
    """Minimum and curvatures of loss curves along ``theta``, one curve per replicate (seed or
    scrambling), with intervals over the replicates.

    Each curve gets a least-squares cubic; its minimum (inside the window), the second
    derivative there (``curvature``), quadratic fits on the points left and right of the minimum
    (``curvature_left``, ``curvature_right``: how asymmetric the well is) and the third derivative
    (``third``). ``mean_curve_min`` is the minimum of the replicates' mean curve, the others are
    means of per-curve values (Student intervals). ``bias_predicted`` is what the asymmetry does
    to the mean of the per-curve minima when the curves differ by random tilts:
    ``-(E''' / 2 E'') Var(theta_min)``; ``bias_measured`` the mean of the minima minus the mean
    curve's minimum (bootstrap interval over replicates).

    Parameters
    ----------
    theta : np.ndarray, shape ``(T,)``
        The grid (``T >= 4``).
    E : np.ndarray, shape ``(R, T)``
        The loss curves, one per replicate (``R >= 2``).
    centre : float or None, optional
        Expansion point of the cubics (default: the grid's mean).
    level : float, optional
        Interval coverage, in ``(0, 1)`` (default 0.95).

    Returns
    -------
    dict of :class:`~stumplib.core.stats.Estimate`: ``theta_min``, ``curvature``,
    ``curvature_left``, ``curvature_right``, ``third``, ``mean_curve_min``, ``bias_measured``,
    ``bias_predicted``.
    """
    from stumplib.core.stats import bootstrap, mean_interval

    theta, E = np.asarray(theta, dtype=float), np.atleast_2d(np.asarray(E, dtype=float))
    if E.shape[1] != theta.size or theta.size < 4 or E.shape[0] < 2:
        raise ValueError("E must be (R >= 2, T) with T = len(theta) >= 4")
    c0 = float(theta.mean() if centre is None else centre)
    fits = [_cubic(theta, e, c0) for e in E]
    out = {k: mean_interval(np.array([f[k] for f in fits]), level=level)
           for k in ("theta_min", "curvature", "curvature_left", "curvature_right", "third")}
    E0 = E - E.mean(1, keepdims=True)  # the level per curve does not move the minimum

    def mean_min(e):
        return _cubic(theta, e.mean(0), c0)["theta_min"]

    out["mean_curve_min"] = bootstrap(E0, mean_min, n_boot=400, level=level)
    tmins = np.array([f["theta_min"] for f in fits])
    out["bias_measured"] = bootstrap((E0, tmins), lambda e, tm: tm.mean() - mean_min(e), n_boot=400,
                                     level=level)
    pred = np.array([-f["third"] / (2 * f["curvature"]) for f in fits])
    v = -out["third"].value / (2 * out["curvature"].value) * tmins.var(ddof=1)
    half = abs(v) * (pred.std(ddof=1) / math.sqrt(pred.size) / abs(pred.mean()) if pred.mean() else np.inf)
    out["bias_predicted"] = Estimate(v, v - 1.96 * half, v + 1.96 * half, "seeds", level, None, pred.size)
    return out


def landscape_summary(land: Mapping[int, Mapping[str, np.ndarray]], held: Mapping[str, np.ndarray],
                      level: float = 0.95) -> dict[str, Any]:
    """Per ``d`` of a :func:`landscape` run, and for the theory (:func:`held_theory`): where the
    minimum lies and how curved the loss is there.

    Parameters
    ----------
    land : mapping
        ``{d: landscape output}``; only seeds converged at every ``theta`` are used.
    held : mapping
        :func:`held_theory`'s output along the same line (``thetas`` and ``train_loss``, shape
        ``(K, T)``).
    level : float, optional
        Interval coverage, in ``(0, 1)`` (default 0.95).

    Returns
    -------
    dict: ``ds`` (increasing); lists over ``ds`` of Estimates ``free`` and ``best`` (seed means of
    the minimisers' theta from ``Q*`` and of the lowest found), ``mean_curve_min``, ``curvature``,
    ``curvature_left``, ``curvature_right``, ``third``, ``bias_measured``, ``bias_predicted``
    (:func:`landscape_fit` over seeds); ``other_minimum`` (fraction of seeds whose lowest minimum
    is not the one reached from ``Q*``), ``free_sd`` (spread of the free theta over seeds),
    ``start_bias`` (Estimates: seed mean of the free minus the best theta, paired),
    ``free_test_error``, ``best_test_error`` (Estimates); ``start_bias_pooled`` (Estimate: the
    paired difference over the seeds of every ``d``);
    ``theory``: :func:`landscape_fit` over the scramblings, with ``theory_left``,
    ``theory_right`` (its side curvatures).
    """
    from stumplib.core.stats import mean_interval

    ds = sorted(int(d) for d in land)
    out: dict[str, Any] = {"ds": np.asarray(ds)}
    keys = ("mean_curve_min", "curvature", "curvature_left", "curvature_right", "third", "bias_measured",
            "bias_predicted", "free", "best", "other_minimum", "free_sd", "start_bias", "free_test_error",
            "best_test_error")
    for k in keys:
        out[k] = []
    for d in ds:
        L = land[d]
        ok = np.asarray(L["converged"], dtype=bool).all(1)
        fit = landscape_fit(L["thetas"], np.asarray(L["train_loss"])[ok], level=level)
        for k in keys[:7]:
            out[k].append(fit[k])
        for w in ("free", "best"):
            out[w].append(mean_interval(np.asarray(L[f"{w}_theta"])[ok], level=level))
            out[f"{w}_test_error"].append(mean_interval(np.asarray(L[f"{w}_test_error"])[ok],
                                                        level=level))
        out["start_bias"].append(mean_interval((np.asarray(L["free_theta"])
                                                - np.asarray(L["best_theta"]))[ok], level=level))
        moved = np.abs(np.asarray(L["best_theta"]) - np.asarray(L["free_theta"])) > 1e-6
        out["other_minimum"].append(float(moved[ok].mean()))
        out["free_sd"].append(float(np.asarray(L["free_theta"])[ok].std(ddof=1)))
    diffs = np.concatenate([(np.asarray(land[d]["free_theta"]) - np.asarray(land[d]["best_theta"]))
                            [np.asarray(land[d]["converged"], dtype=bool).all(1)] for d in ds])
    out["start_bias_pooled"] = mean_interval(diffs, level=level)
    th = landscape_fit(held["thetas"], held["train_loss"], level=level)
    out.update(theory=th, theory_left=th["curvature_left"], theory_right=th["curvature_right"])
    return out


def minima_rows(land: Mapping[int, Mapping[str, np.ndarray]],
                theory: Mapping[str, float] | None = None) -> list[dict]:
    """The minimisers reached from ``Q*`` and the lowest minima found, per ``d`` of a
    :func:`landscape` run (seed means and standard errors), and each extrapolated to
    ``d -> infinity`` with :func:`choose_form` (needs four ``d``).

    Parameters
    ----------
    land : mapping
        ``{d: landscape output}``.
    theory : mapping or None, optional
        ``theta`` and ``test_error`` of the theory, added as a last row (``None``: no row).

    Returns
    -------
    rows: ``d``, ``seeds``, ``theta from Q*``, ``theta lowest``, ``test error from Q*``,
    ``test error lowest`` (``mean +- se`` strings); then ``d -> infinity`` (limit [interval], the
    chosen form) and ``theory``.
    """
    ds = sorted(int(d) for d in land)
    cols = {"theta from Q*": "free_theta", "theta lowest": "best_theta",
            "test error from Q*": "free_test_error", "test error lowest": "best_test_error"}
    stats_ = {c: [] for c in cols}
    rows = []
    for d in ds:
        row: dict[str, Any] = {"d": d, "seeds": len(land[d]["seeds"])}
        for c, k in cols.items():
            v = np.asarray(land[d][k], dtype=float)
            m, s = v.mean(), v.std(ddof=1) / math.sqrt(v.size) if v.size > 1 else np.nan
            stats_[c].append((m, s))
            fmt = ".4f" if c.startswith("theta") else ".6f"
            row[c] = f"{m:{fmt}} +- {s:{fmt}}"
        rows.append(row)
    if len(ds) >= 4:
        row = {"d": "infinity", "seeds": ""}
        for c in cols:
            m, s = (np.array(x) for x in zip(*stats_[c]))
            f = choose_form(ds, m, s)
            row[c] = f"{f['limit']:{'.4f' if c.startswith('theta') else '.6f'}} ({f['form']})"
        rows.append(row)
    if theory is not None:
        rows.append({"d": "theory", "seeds": "", **{c: f"{theory[cols[c].split('_', 1)[1]]:.6f}"
                                                    for c in cols}})
    return rows


# ----------------------------------------------------------------------------------------------
# stability of the replica-symmetric point
# ----------------------------------------------------------------------------------------------
def replicon(alpha: float, q: float, V: float, theta: float, *, omega: float = 0.3,
             sigma: float = 0.5, lam: float = 0.01, A: Any = ((0.6, 0.4), (0.4, 0.6)),
             log2_points: int = 14, n_scramblings: int = 8, seed: int = 1) -> dict[str, Estimate]:
    """The de Almeida-Thouless (replicon) check of a replica-symmetric fixed point.

    For ridge-regularised empirical risk minimisation the replica-symmetric saddle point is stable
    against replica symmetry breaking when ``alpha E |d f_out/d omega|^2 (V)^2 < 1`` (Gardner and
    Derrida's condition for the perceptron, with the ridge prior's factor ``(sigma^2 / (lambda +
    V_hat sigma^2))^2 = V^2``); with ``f_out = (x - c) / V`` and the two tokens' fields sharing one
    overlap it reads ``alpha E |I - J|_F^2 < 1``, ``J = dx/dc = H^{-1} / V`` the Jacobian of the
    proximal minimiser ``x`` in its centre ``c`` (``H`` the proximal objective's Hessian). For a
    convex loss ``I - J`` has eigenvalues in ``[0, 1]`` and the condition follows from the
    fixed point's ``V_hat V = alpha E tr(I - J) < 1``; the softmax loss is not convex, so it is a
    check. This condition is derived here, not taken from the paper (which assumes replica
    symmetry); ``vhat_v`` and ``alpha_tr`` (``V_hat V`` and ``alpha E tr(I - J)``, equal by
    Stein's lemma) check the Jacobian.

    Parameters
    ----------
    alpha, q, V, theta : float
        The fixed point (``m = 0``): sample ratio, overlaps ``q``, ``V`` and ``theta``.
    omega, sigma, lam : float, optional
        The model: positional weight (default 0.3), token noise (0.5), ridge (0.01).
    A : array_like, shape ``(2, 2)``, optional
        The teacher's attention matrix (default ``((0.6, 0.4), (0.4, 0.6))``).
    log2_points : int, optional
        Each Sobol rule has ``2**log2_points`` nodes (default 14).
    n_scramblings : int, optional
        Number of scrambled rules (default 8); their spread is the error.
    seed : int, optional
        Seed of the scramblings (default 1).

    Returns
    -------
    dict of :class:`~stumplib.core.stats.Estimate` (mean over scramblings, 95% Student interval):
    ``replicon`` (``alpha E |I - J|_F^2`` over the points where the proximal map is smooth; stable
    below 1), ``vhat_v``, ``alpha_tr`` and ``stein_defect`` (``alpha E tr(I - J) - V_hat V``).
    Where the proximal minimiser *jumps* between two basins as its centre moves (the problem is
    not convex), Stein's identity picks up the jumps and ``J`` does not: ``stein_defect`` measures
    their weight. A jump puts a delta function into ``d f_out / d omega``, so wherever
    ``stein_defect`` is not zero the condition fails formally (as for the perceptron that
    minimises its errors above capacity, whose replica-symmetric solution is unstable for the
    same reason): replica symmetry is then broken, by an amount this check does not size.
    """
    from stumplib.core.stats import mean_interval
    from stumplib.phase.proximal import prox_objective_and_derivatives
    from stumplib.phase.replica import geometry, se_update
    from stumplib.phase.setting import check_A, teacher_rows
    from stumplib.phase.solver import scrambled_rules

    nodes, w = scrambled_rules(log2_points, n_scramblings, seed)
    K = nodes.shape[0]
    ones = np.ones(K)
    up = se_update(alpha * ones, q * ones, 0.0 * ones, V * ones, theta * ones, omega=omega,
                   sigma=sigma, lam=lam, A=A, nodes=nodes, weights=w, with_test_error=False)
    center, u, _, _, _ = geometry(q * ones, 0.0 * ones, theta * ones, sigma, nodes)
    t = teacher_rows(u, omega, check_A(A))
    _, _, H = prox_objective_and_derivatives(up["prox"], center, t, V, sigma)
    IJ = np.eye(2) - np.linalg.inv(H) / V  # (K, N, 2, 2)
    rep = alpha * np.einsum("kn,kn->k", w, (IJ ** 2).sum((-1, -2)))
    tr = alpha * np.einsum("kn,kn->k", w, np.trace(IJ, axis1=-2, axis2=-1))
    return dict(replicon=mean_interval(rep), vhat_v=mean_interval(up["V_hat"] * V),
                alpha_tr=mean_interval(tr), stein_defect=mean_interval(tr - up["V_hat"] * V))


# ----------------------------------------------------------------------------------------------
# finite-size scaling
# ----------------------------------------------------------------------------------------------
#: the candidate approaches in d: name -> the columns of the design matrix (the first is 1)
FORMS = {
    "1/d": lambda d: [d ** -1.0],
    "1/sqrt(d)": lambda d: [d ** -0.5],
    "1/d + 1/d^2": lambda d: [d ** -1.0, d ** -2.0],
    "crossover 1/sqrt(d) to 1/d": lambda d: [d ** -0.5, d ** -1.0],
}


def choose_form(d: Any, y: Any, se: Any, *, forms: Sequence[str] | None = None,
                level: float = 0.95, delta_aic: float = 2.0) -> dict[str, Any]:
    """The approach of a seed mean ``y(d)`` to its limit, chosen by fit quality.

    Each form of :data:`FORMS` is a weighted least-squares fit with the known standard errors
    ``se``; its limit is the constant term. Forms are ranked by Akaike's criterion with its
    small-sample correction, ``AICc = chi^2 + 2 k + 2 k (k + 1) / (D - k - 1)`` (``k``
    parameters, ``D`` points); a form needs ``D >= k + 2`` (a three-parameter form five ``d``).
    The chosen form's limit
    has a normal interval from the fit's covariance, widened by ``sqrt(chi^2 / dof)`` when the fit
    is worse than the errors allow; ``envelope`` spans the intervals of every form within
    ``delta_aic`` of the best (the uncertainty of the choice itself).

    Parameters
    ----------
    d : array_like, shape ``(D,)``
        Dimensions (``> 0``, ``D >= 3``; a form needs two degrees of freedom, so in practice
        ``D >= 4``).
    y : array_like, shape ``(D,)``
        Seed means at each ``d``.
    se : array_like, shape ``(D,)``
        Their standard errors (``> 0``).
    forms : sequence of str or None, optional
        Names from :data:`FORMS` (default: all).
    level : float, optional
        Interval coverage, in ``(0, 1)`` (default 0.95).
    delta_aic : float, optional
        Forms within this much AICc of the best count as acceptable (default 2).

    Returns
    -------
    dict: ``form`` (the chosen name), ``limit`` (Estimate), ``envelope`` (Estimate: the chosen
    value, the hull of the acceptable forms' intervals), ``fits`` (name -> dict of ``limit``,
    ``chi2``, ``dof``, ``aic`` (AICc), ``p_value``, ``coef``), ``acceptable`` (names).
    """
    from scipy.stats import chi2 as chi2_dist, norm

    d, y, se = (np.asarray(v, dtype=float).ravel() for v in (d, y, se))
    if not (d.size == y.size == se.size >= 3) or not np.all(np.isfinite(np.r_[d, y, se])) \
            or np.any(se <= 0) or np.any(d <= 0):
        raise ValueError("d, y, se: finite arrays of one length >= 3, d > 0, se > 0")
    names = list(FORMS) if forms is None else list(forms)
    bad = [f for f in names if f not in FORMS]
    if bad:
        raise ValueError(f"forms must be among {list(FORMS)}; got {bad}")
    z = float(norm.ppf(0.5 + level / 2))
    fits = {}
    for name in names:
        X = np.column_stack([np.ones_like(d)] + FORMS[name](d))
        k = X.shape[1]
        if d.size - k < 2:
            continue
        W = 1 / se ** 2
        cov = np.linalg.inv(X.T @ (X * W[:, None]))
        beta = cov @ (X.T @ (W * y))
        chi2 = float((((y - X @ beta) / se) ** 2).sum())
        dof = d.size - k
        s = math.sqrt(cov[0, 0] * max(1.0, chi2 / dof))
        fits[name] = dict(limit=Estimate(float(beta[0]), beta[0] - z * s, beta[0] + z * s, "seeds",
                                         level, None, int(d.size)),
                          chi2=chi2, dof=dof, aic=chi2 + 2 * k + 2 * k * (k + 1) / (dof - 1),
                          p_value=float(chi2_dist.sf(chi2, dof)),
                          coef=beta)
    if not fits:
        raise ValueError(f"d: {d.size} points leave no form two degrees of freedom (need >= 4)")
    best = min(fits, key=lambda f: fits[f]["aic"])
    ok = [f for f in fits if fits[f]["aic"] < fits[best]["aic"] + delta_aic]
    lim = fits[best]["limit"]
    env = Estimate(lim.value, min(fits[f]["limit"].lo for f in ok), max(fits[f]["limit"].hi for f in ok),
                   "seeds", level, None, int(d.size))
    return dict(form=best, limit=lim, envelope=env, fits=fits, acceptable=ok)


# ----------------------------------------------------------------------------------------------
# the verdict
# ----------------------------------------------------------------------------------------------
def explanation_verdict(theta_limit: Estimate, theory_theta: Estimate, theta_dmax: float,
                        landscape_min: Estimate, *, dmax: int, d_landscape: int,
                        form: str, start_bias: Estimate | None = None,
                        bias_where: str = "") -> Verdict:
    """Is the minimisers' departure from the accurate theory at this point a finite-size effect?

    ``holds`` ("finite-size"): the extrapolated ``theta`` (the hull of the acceptable scaling
    forms, :func:`choose_form`) contains the theory's (widened by its quadrature error) and
    excludes the mean at the largest ``d`` (so the data say the minimisers are still moving
    towards it). ``fails`` ("theory"): it excludes the theory's, and so does the minimum of the
    landscape at the largest ``d`` measured (the seed-mean constrained training loss,
    :func:`landscape_fit`). ``undecided`` otherwise (an interval holding both the theory and the
    largest-``d`` mean cannot tell them apart), saying what would decide.

    Parameters
    ----------
    theta_limit : Estimate
        The extrapolated theta (interval: the forms' hull, :func:`choose_form`'s ``envelope``).
    theory_theta : Estimate
        The accurate theory's theta (interval: its quadrature error, the tolerance).
    theta_dmax : float
        The seed mean of theta at the largest ``d``.
    landscape_min : Estimate
        The seed-mean landscape's minimum at ``d_landscape``.
    dmax : int
        The largest ``d`` of the minimisers (named in the sentence).
    d_landscape : int
        The ``d`` of the landscape (named in the sentence).
    form : str
        The chosen scaling form (named in the sentence).
    start_bias : Estimate or None, optional
        The paired seed mean of theta reached from ``Q*`` minus the lowest minimum's
        (:func:`landscape_summary`); when it excludes 0 the sentence says so (the status does not
        change: it names a cause, the rule decides).
    bias_where : str, optional
        Where ``start_bias`` was measured (text added in parentheses; default none).

    Returns
    -------
    Verdict
    """
    tol = theory_theta.half_width if math.isfinite(theory_theta.half_width) else 0.0
    ext = against_target(theta_limit, theory_theta.value, symbol=f"theta at d -> infinity ({form})",
                         tol=tol, fmt=".4f", target_text=f"the theory's {theory_theta.value:.4f}")
    land = against_target(landscape_min, theory_theta.value, tol=tol, fmt=".4f",
                          symbol=f"the landscape's minimum at d = {d_landscape}",
                          target_text=f"{theory_theta.value:.4f}")
    moving = not theta_limit.contains(theta_dmax)
    if ext.status == "holds" and moving:
        return Verdict("holds", f"Finite-size: {ext.sentence}")
    if ext.status == "holds":
        return Verdict("undecided", f"{ext.sentence.rstrip('.')}, but the interval also holds the "
                       f"mean at d = {dmax} ({theta_dmax:.4f}): larger d would decide.")
    if ext.status == "fails" and land.status == "fails":
        return Verdict("fails", f"Theory: {ext.sentence.rstrip('.')}, and {land.sentence[0].lower()}"
                       f"{land.sentence[1:]}")
    if ext.status == "fails":
        why = ""
        if start_bias is not None and math.isfinite(start_bias.lo) and not start_bias.contains(0.0):
            why = (f"; the minimisers reached from Q* are not the lowest: theta differs by "
                   f"{start_bias:.4f}{' (' + bias_where + ')' if bias_where else ''}")
        return Verdict("undecided", f"{ext.sentence.rstrip('.')}, but {land.sentence[0].lower()}"
                       f"{land.sentence[1:].rstrip('.')}{why}: the lowest minima followed to larger "
                       "d would decide.")
    return Verdict("undecided", f"{ext.sentence.rstrip('.')}: more d or seeds would decide.")


def read_flat_window(path: str | Path | None = None) -> dict[str, Any] | None:
    """This section's recorded run (:data:`FLAT_WINDOW_RUN`, or ``path``), or ``None``.

    Parameters
    ----------
    path : str or Path or None, optional
        The ``.npz`` file written by ``scripts/phase_flat_window.py`` (default
        :data:`FLAT_WINDOW_RUN`); ``None`` is returned when it is not a file.

    Returns
    -------
    ``{"landscape": {d: landscape output}, "theory": held_theory output, "meta": {command,
    commit, machine, seconds and the model: alpha, omega, sigma, lam, seed, gtol, thetas}}``
    (``theory`` ``None`` if the run did not reach it), and ``root``: the theory on the narrow
    window of the ``root`` stage (``None`` without it), and ``control``: ``{"theory": held_theory
    output, "landscape": landscape output}`` at the control point outside the window (``None``
    without it).
    """
    p = Path(FLAT_WINDOW_RUN if path is None else path)
    if not p.is_file():
        return None
    with np.load(p) as f:
        flat = {k: np.asarray(f[k]) for k in f.files}
    ds = [int(d) for d in np.atleast_1d(flat.get("ds", []))]
    land = {d: {k[len(f"d{d}_"):]: v for k, v in flat.items() if k.startswith(f"d{d}_")} for d in ds}
    th, root, c_th, c_land = ({k[len(p):]: v for k, v in flat.items() if k.startswith(p)} or None
                              for p in ("theory_", "root_", "control_theory_", "control_land_"))
    meta = {k: (str(flat[k]) if k in ("command", "commit", "machine") else flat[k]) for k in
            ("command", "commit", "machine", "seconds", "alpha", "omega", "sigma", "lam", "seed",
             "gtol", "thetas") if k in flat}
    return dict(landscape=land, theory=th, root=root, meta=meta,
                control=dict(theory=c_th, landscape=c_land) if c_th and c_land else None)
