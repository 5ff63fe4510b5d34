"""The lowest minima of the empirical risk: a multi-start search per seed, with its saturation.

The theory of Cui et al. describes the **global** minimum of the regularised empirical risk
``L(Q)``. At finite ``d`` near ``alpha = 1`` the risk has several nearby minima, and the minimiser
reached from the informed start ``Q = Q*`` is often not the lowest (the flat window of chapter 6).
:func:`search` looks for the lowest minimum of one seed with a fixed, recorded sequence of
starts, each minimised without constraint to the relative gradient ``gtol`` (L-BFGS with a
Newton-CG finish, :func:`.minimise.minimise`):

1. ``informed``: ``Q = Q*`` (the deciding run's start);
2. ``release``: the minimisers with ``theta`` held on a line of ``thetas`` (solved by continuation
   up and down the line from the informed minimiser, the lower kept: the landscape along
   ``theta``), each released, on both sides of the informed minimiser's ``theta``;
3. ``rotation``: ``Q*`` rotated in a random direction to a held ``theta`` (a few ``theta`` of the
   line, ``n_rotations`` directions each), at the informed minimiser's norm;
4. ``perturbation``: the lowest minimum found so far, moved by a random direction of relative
   size ``perturb_scales[k]``.

Random directions are drawn on the CPU from ``(seed, s, d)`` (the same on every device). Two
minimisers are the same minimum when they lie within ``same_tol`` of each other relative to their
norm. The search's **saturation** is read off the sequence: the running lowest loss against the
number of starts (:func:`running_lowest`), and whether the lowest minimum was already found in
the first half of the starts (:func:`saturated`); :func:`distinct_minima` counts the minima found.
A start that does not reach ``gtol`` is recorded and never taken as a minimum.
"""
from __future__ import annotations

import math
import time
from typing import Any, Sequence

import numpy as np
import torch

from stumplib.core.validation import check_int, check_real
from stumplib.phase.exact_error import exact_test_error
from stumplib.book.studies.held_theta import constrained_minimise
from stumplib.phase.minimise import minimise
from stumplib.phase.problem import Problem, make_problem, summaries
from stumplib.phase.setting import DEFAULT_A, check_model

#: the kinds of start, in the order the search tries them
START_KINDS = ("informed", "release", "rotation", "perturbation")


def distinct_minima(Q: np.ndarray, ok: np.ndarray, *, same_tol: float = 1e-3) -> np.ndarray:
    """Label each converged minimiser with the minimum it found (first seen, first label).

    Parameters
    ----------
    Q : np.ndarray, shape ``(K, d)``
        Minimisers, in the order of their starts.
    ok : np.ndarray of bool, shape ``(K,)``
        Which reached the gradient tolerance (the others get label ``-1``).
    same_tol : float
        Two minimisers are the same minimum when ``|Q_i - Q_j| <= same_tol max(|Q_i|, |Q_j|)``.

    Returns
    -------
    np.ndarray of int, shape ``(K,)``
        ``0, 1, ...`` in order of first appearance; ``-1`` where not converged.
    """
    Q = np.asarray(Q, dtype=float)
    ok = np.asarray(ok, dtype=bool)
    labels, reps = np.full(len(Q), -1), []
    for k in range(len(Q)):
        if not ok[k]:
            continue
        for j, r in enumerate(reps):
            if np.linalg.norm(Q[k] - r) <= same_tol * max(np.linalg.norm(Q[k]), np.linalg.norm(r)):
                labels[k] = j
                break
        else:
            labels[k] = len(reps)
            reps.append(Q[k])
    return labels


def running_lowest(loss: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """The lowest loss among the converged starts ``0..k``, for each ``k``.

    Parameters
    ----------
    loss : np.ndarray, shape ``(K,)``
        Each start's final loss.
    ok : np.ndarray of bool, shape ``(K,)``
        Which starts converged (the others do not count).

    Returns
    -------
    np.ndarray, shape ``(K,)``
        ``inf`` until the first converged start.
    """
    return np.minimum.accumulate(np.where(np.asarray(ok, bool), np.asarray(loss, float), np.inf))


def saturated(labels: np.ndarray, loss: np.ndarray, *, half: int | None = None) -> bool:
    """Whether the lowest minimum was already found in the first half of the starts (so the
    second half did not change it).

    Parameters
    ----------
    labels : np.ndarray of int, shape ``(K,)``
        :func:`distinct_minima`'s labels (``-1``: not converged).
    loss : np.ndarray, shape ``(K,)``
        Each start's final loss.
    half : int, optional
        The number of starts in the first half (default ``ceil(K / 2)``).

    Returns
    -------
    bool
        ``False`` when no start converged.
    """
    labels, loss = np.asarray(labels), np.asarray(loss, dtype=float)
    ok = labels >= 0
    if not ok.any():
        return False
    half = math.ceil(len(labels) / 2) if half is None else int(half)
    lowest = labels[np.flatnonzero(ok)[np.argmin(loss[ok])]]
    return bool(np.any(labels[:half] == lowest))


def rotation_start(q_star: torch.Tensor, theta: float, norm: float, direction: np.ndarray, *,
                   sigma: float) -> torch.Tensor:
    """``Q*`` rotated towards ``direction`` until ``theta = sigma^2 Q* . Q / d``, at norm ``norm``.

    Parameters
    ----------
    q_star : torch.Tensor, shape ``(d,)``
        The teacher.
    theta : float
        The overlap of the start (theory normalisation).
    norm : float
        The start's norm ``|Q|`` (kept at least at its component along ``Q*``).
    direction : np.ndarray, shape ``(d,)``
        A random direction (its component along ``Q*`` is removed).
    sigma : float
        Token noise.

    Returns
    -------
    torch.Tensor, shape ``(d,)``
    """
    d = q_star.numel()
    qs = q_star.detach().cpu().numpy().astype(float)
    u = np.asarray(direction, dtype=float) - (direction @ qs) / (qs @ qs) * qs
    u /= np.linalg.norm(u)
    a = theta * d / (sigma ** 2 * np.linalg.norm(qs))  # the component along Q*/|Q*|
    b = math.sqrt(max(norm ** 2 - a ** 2, (0.1 * a) ** 2))
    Q0 = a * qs / np.linalg.norm(qs) + b * u
    return torch.as_tensor(Q0, dtype=q_star.dtype, device=q_star.device)


def line_scan(pb: Problem, n: int, thetas: np.ndarray, Q_from: torch.Tensor, *,
              gtol: float, max_iter: int = 20000) -> list[dict[str, Any]]:
    """The minimisers with ``theta`` held along ``thetas`` for the first seed of ``pb``: solved
    by continuation up the line and down it from ``Q_from`` (projected), the lower of the two
    kept at each ``theta``.

    Parameters
    ----------
    pb : Problem
        One seed's problem.
    n : int
        Samples used.
    thetas : np.ndarray, shape ``(T,)``
        Increasing held overlaps.
    Q_from : torch.Tensor, shape ``(d,)``
        Where both sweeps start.
    gtol : float
        Relative-gradient tolerance.
    max_iter : int
        Iterations allowed per minimisation.

    Returns
    -------
    list of dict, length ``T``
        :func:`.minimise.minimise`'s result per ``theta``, with ``sweeps_differ`` (bool).
    """
    T_ = len(thetas)
    runs: list[dict | None] = [None] * T_
    for order in (range(T_), range(T_ - 1, -1, -1)):
        Q0 = Q_from
        for j in order:
            r = constrained_minimise(pb, 0, n, float(thetas[j]), Q0, gtol=gtol, max_iter=max_iter)
            Q0 = r["Q"]
            if runs[j] is not None:
                r["sweeps_differ"] = abs(r["loss"] / runs[j]["loss"] - 1) > 1e-9
                runs[j]["sweeps_differ"] = r["sweeps_differ"]
            if runs[j] is None or r["loss"] < runs[j]["loss"]:
                runs[j] = dict(r, sweeps_differ=r.get("sweeps_differ", False))
    return runs  # type: ignore[return-value]


def search_problem(pb: Problem, n: int, thetas: Sequence[float], *, rng: np.random.Generator,
                   rotation_thetas: Sequence[float] = (), n_rotations: int = 2,
                   perturb_scales: Sequence[float] = (0.05, 0.1, 0.2, 0.4), gtol: float = 1e-8,
                   same_tol: float = 1e-3, omega: float = 0.3, sigma: float = 0.5,
                   A: Any = DEFAULT_A, test_error: bool = True,
                   max_iter: int = 20000) -> dict[str, Any]:
    """:func:`search` on a given one-seed problem (any :class:`.problem.Problem`, a planted
    landscape in the tests).

    Parameters
    ----------
    pb : Problem
        One seed's problem.
    n : int
        Samples used.
    thetas : sequence of float, shape ``(T,)``
        The line of held overlaps (increasing).
    rng : np.random.Generator
        The random directions' generator (CPU).
    rotation_thetas : sequence of float
        Held overlaps of the rotated starts.
    n_rotations : int
        Random directions per rotation ``theta``.
    perturb_scales : sequence of float
        Relative sizes of the perturbations of the lowest minimum so far, in order.
    gtol, same_tol : float
        Relative-gradient tolerance; the tolerance of "the same minimum" (:func:`distinct_minima`).
    omega, sigma : float
        The model (for the overlaps and the exact test error).
    A : array_like, shape ``(2, 2)``
        The teacher's positional matrix.
    test_error : bool
        Compute each minimiser's exact test error (``False``: NaN; a planted landscape has none).
    max_iter : int
        Iterations allowed per minimisation (a start that needs more is recorded as not converged).

    Returns
    -------
    dict of np.ndarray
        Per start (``K``): ``start_kind`` (str), ``start_theta0`` (the start's overlap),
        ``loss``, ``theta``, ``q``, ``m``, ``test_error``, ``converged``, ``rel_grad``,
        ``label`` (:func:`distinct_minima`), ``running_lowest``; per line point (``T``):
        ``line_theta``, ``line_loss``, ``line_q``, ``line_m``, ``line_test_error``,
        ``line_converged``, ``line_sweeps_differ``; scalars ``n_distinct``, ``saturated``,
        ``lowest`` (index of the lowest converged start), ``informed`` (0).
    """
    th = np.asarray(thetas, dtype=float)
    qs = pb.q_star[0]
    d = qs.numel()
    rows: list[dict[str, Any]] = []

    def run(kind: str, Q0: torch.Tensor) -> dict[str, Any]:
        r = minimise(pb, 0, n, Q0, gtol=gtol, max_iter=max_iter)
        sm = summaries(r["Q"][None], pb.q_star, sigma)
        t0 = float(sigma ** 2 * (qs @ Q0) / d)
        row = dict(start_kind=kind, start_theta0=t0, Q=r["Q"].detach().cpu().numpy(),
                   loss=r["loss"], theta=float(sigma ** 2 * sm["theta_emp"][0]),
                   q=float(sm["q_emp"][0]), m=float(sm["m"][0]), converged=r["converged"],
                   rel_grad=r["rel_grad"])
        rows.append(row)
        return r

    informed = run("informed", qs.clone())
    line = line_scan(pb, n, th, informed["Q"], gtol=gtol, max_iter=max_iter)
    order = np.argsort(np.abs(th - rows[0]["theta"]), kind="stable")  # both sides, nearest first
    for j in order:
        run("release", line[j]["Q"])
    norm = float(informed["Q"].norm())
    for t in rotation_thetas:
        for _ in range(n_rotations):
            run("rotation", rotation_start(qs, float(t), norm, rng.standard_normal(d), sigma=sigma))
    for eps in perturb_scales:
        ok = [k for k, r in enumerate(rows) if r["converged"]]
        base = rows[min(ok, key=lambda k: rows[k]["loss"])]["Q"] if ok else rows[0]["Q"]
        g = rng.standard_normal(d)
        Q0 = base + eps * np.linalg.norm(base) * g / np.linalg.norm(g)
        run("perturbation", torch.as_tensor(Q0, dtype=qs.dtype, device=qs.device))
    Qs = np.stack([r["Q"] for r in rows])
    ok = np.array([r["converged"] for r in rows])
    loss = np.array([r["loss"] for r in rows])
    labels = distinct_minima(Qs, ok, same_tol=same_tol)
    out = {k: np.array([r[k] for r in rows]) for k in ("start_kind", "start_theta0", "loss",
                                                        "theta", "q", "m", "converged",
                                                        "rel_grad")}
    Qt = torch.as_tensor(Qs, dtype=qs.dtype, device=qs.device)
    Ql = torch.stack([r["Q"] for r in line])
    if test_error:
        out["test_error"] = exact_test_error(Qt, qs.expand(len(rows), d),
                                             model=check_model(omega=omega, sigma=sigma, A=A))
        line_te = exact_test_error(Ql, qs.expand(len(line), d),
                                   model=check_model(omega=omega, sigma=sigma, A=A))
    else:
        out["test_error"], line_te = np.full(len(rows), np.nan), np.full(len(line), np.nan)
    sl = summaries(Ql, qs.expand(len(line), d), sigma)
    out.update(label=labels, running_lowest=running_lowest(loss, ok),
               line_theta=th, line_loss=np.array([r["loss"] for r in line]),
               line_q=sl["q_emp"], line_m=sl["m"], line_test_error=np.asarray(line_te),
               line_converged=np.array([r["converged"] for r in line]),
               line_sweeps_differ=np.array([r["sweeps_differ"] for r in line]),
               n_distinct=np.asarray(int(labels.max() + 1) if ok.any() else 0),
               saturated=np.asarray(saturated(labels, loss)),
               lowest=np.asarray(int(np.flatnonzero(ok)[np.argmin(loss[ok])]) if ok.any() else -1),
               informed=np.asarray(0))
    return out


def objective_seconds(pb: Problem, n: int, repeats: int = 5) -> float:
    """Seconds of one objective-and-gradient evaluation of the first seed (median of
    ``repeats``): the unit of the search's cost.

    Parameters
    ----------
    pb : Problem
        The problem.
    n : int
        Samples used.
    repeats : int
        Evaluations timed.

    Returns
    -------
    float
    """
    mask = (torch.arange(pb.n, device=pb.X.device) < n).to(pb.X.dtype)[None, :, None]
    Q = pb.q_star[:1, :, None].clone()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        L, g = pb.objective(Q, mask, slice(0, 1))
        float(L.sum())
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def search(alpha: float, d: int, s: int, thetas: Sequence[float], *, seed: int = 0,
           omega: float = 0.3, sigma: float = 0.5, lam: float = 0.01,
           A: Any = DEFAULT_A, rotation_thetas: Sequence[float] | None = None,
           n_rotations: int = 2, perturb_scales: Sequence[float] = (0.05, 0.1, 0.2, 0.4),
           gtol: float = 1e-8, same_tol: float = 1e-3, device: Any = "cpu",
           max_iter: int = 20000) -> dict[str, Any]:
    """The lowest minimum of seed ``s`` at ``(alpha, d)`` by a multi-start search (module
    docstring), with every start recorded.

    Parameters
    ----------
    alpha : float
        Sample ratio ``n / d`` in ``(0, 100]``; ``n = round(alpha d)``.
    d : int
        Dimension (``>= 4``).
    s : int
        Seed offset (:func:`.problem.make_problem`'s scheme: generator ``seed * 1000 + s``).
    thetas : sequence of float, shape ``(T,)``
        The line of held overlaps, increasing, in ``(0, sigma^2]``.
    seed : int
        The chapter's seed.
    omega, sigma, lam : float
        The model.
    A : array_like, shape ``(2, 2)``
        The teacher's positional matrix.
    rotation_thetas : sequence of float, optional
        Held overlaps of the rotated starts (default: the line's ends and middle).
    n_rotations : int
        Random directions per rotation ``theta`` (``>= 0``).
    perturb_scales : sequence of float
        Relative sizes of the perturbations of the lowest minimum so far.
    gtol, same_tol : float
        Relative-gradient tolerance; the tolerance of "the same minimum".
    device : str or torch.device
        Where to minimise (the data are drawn on the CPU and moved).
    max_iter : int
        Iterations allowed per minimisation (``>= 1``).

    Returns
    -------
    dict of np.ndarray
        :func:`search_problem`'s record, with ``d``, ``alpha``, ``s``, ``n``, ``seconds`` (wall
        time of the search) and ``objective_seconds`` (one objective and gradient).
    """
    alpha = check_real("alpha", alpha, low=0.0, low_open=True, high=100.0)
    d = check_int("d", d, minimum=4)
    s = check_int("s", s, minimum=0)
    n_rotations = check_int("n_rotations", n_rotations, minimum=0)
    max_iter = check_int("max_iter", max_iter, minimum=1)
    th = np.asarray([check_real(f"thetas[{i}]", t, low=0.0, low_open=True, high=sigma ** 2)
                     for i, t in enumerate(thetas)], dtype=float)
    if th.size < 2 or np.any(np.diff(th) <= 0):
        raise ValueError(f"thetas must be increasing, at least two; got {list(thetas)}")
    for i, e in enumerate(perturb_scales):
        check_real(f"perturb_scales[{i}]", e, low=0.0, low_open=True, high=10.0)
    rot = (th[[0, th.size // 2, -1]] if rotation_thetas is None
           else np.asarray([check_real(f"rotation_thetas[{i}]", t, low=0.0, low_open=True,
                                       high=sigma ** 2) for i, t in enumerate(rotation_thetas)]))
    n = int(round(alpha * d))
    t0 = time.time()
    pb = make_problem(d, [s], n, seed=seed, device=device,
                      model=check_model(omega=omega, sigma=sigma, lam=lam, A=A))
    rng = np.random.default_rng([seed, s, d, 38])
    out = search_problem(pb, n, th, rng=rng, rotation_thetas=rot, n_rotations=n_rotations,
                         perturb_scales=perturb_scales, gtol=gtol, same_tol=same_tol,
                         omega=omega, sigma=sigma, A=A, max_iter=max_iter)
    return dict(out, d=np.asarray(d), alpha=np.asarray(alpha), s=np.asarray(s), n=np.asarray(n),
                seconds=np.asarray(time.time() - t0),
                objective_seconds=np.asarray(objective_seconds(pb, n)))


def search_seeds(alpha: float, d: int, seeds: Sequence[int], thetas: Sequence[float], *,
                 progress: bool = False, **kw: Any) -> dict[str, np.ndarray]:
    """:func:`search` for several seeds, their records stacked (the layout a sweep store reads
    back in: a leading seed axis), with ``seeds``.

    Parameters
    ----------
    alpha, d : float, int
        As :func:`search`.
    seeds : sequence of int, length ``S``
        Seed offsets (at least one).
    thetas : sequence of float
        The line of held overlaps.
    progress : bool
        Show a tqdm bar over seeds.
    **kw : Any
        Passed to :func:`search`.

    Returns
    -------
    dict of np.ndarray
        Per-start arrays ``(S, K)``, per-line arrays ``(S, T)``, per-seed ``(S,)``; ``line_theta``
        ``(T,)``, ``start_kind`` ``(K,)``, ``d``, ``alpha``, ``seeds``.
    """
    seeds = [check_int(f"seeds[{i}]", s, minimum=0) for i, s in enumerate(seeds)]
    if not seeds:
        raise ValueError("seeds must hold at least one seed offset; got none")
    it = seeds
    if progress:
        from tqdm.auto import tqdm
        it = tqdm(seeds, desc=f"lowest minima, d = {d}")
    recs = [search(alpha, d, s, thetas, **kw) for s in it]
    shared = ("line_theta", "start_kind", "d", "alpha", "n", "informed")
    out = {k: np.stack([np.asarray(r[k]) for r in recs]) for k in recs[0] if k not in shared}
    out.update({k: np.asarray(recs[0][k]) for k in shared})
    return dict(out, seeds=np.asarray(seeds))


def landscape_run(alpha: float, d: int, seeds: Sequence[int], thetas: Sequence[float],
                  **kw: Any) -> dict[str, Any]:
    """:func:`search_seeds` in the layout a recorded run reads back in: the landscape along theta
    (:func:`as_landscape`) with every seed's search under ``search``.

    Parameters
    ----------
    alpha, d : float, int
        As :func:`search`.
    seeds : sequence of int
        Seed offsets.
    thetas : sequence of float
        The line of held overlaps.
    **kw : Any
        Passed to :func:`search`.

    Returns
    -------
    dict
        :func:`as_landscape`'s arrays, ``seeds``, ``search`` (the stacked records) and
        ``seconds`` (their total).
    """
    from stumplib.book.studies.lowest_summary import as_landscape

    r = search_seeds(alpha, d, seeds, thetas, **kw)
    return dict(as_landscape(r), seeds=r["seeds"], search=r,
                seconds=np.asarray(float(np.sum(r["seconds"]))))
