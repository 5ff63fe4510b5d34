"""The randomised quasi-Monte Carlo rule of :func:`.solver.state_evolution` and the update on it.

The Gaussian averages of the state evolution (:mod:`.replica`) are taken over ``K`` independent
scramblings of a Sobol sequence of ``2**p`` points each, mapped to four standard normals
(:func:`scrambled_rules`), and pooled into one rule of ``K 2**p`` points (:func:`pooled_nodes`:
scrambling ``k`` is the block ``k N : (k + 1) N``). Sobol nets are nested: the first ``2**(p-1)``
points of a scrambling are its ``2**(p-1)`` net, so per-node values (the proximal minimisers) carry
over to a finer rule (:func:`nested_values`).

:func:`pooled_update` evaluates the update ``(q, m, V, theta)``, the test error and the train loss
at rows of overlaps on such a rule, averaged over all nodes (the pooled rule) and over each
scrambling's block. Every node's proximal problem (:func:`.proximal.proximal`) is followed from
the current minimisers, or searched from every default start (origin, matching points, centre),
or, between multi-starts, also followed from the minimisers that those default starts reached at
the last multi-start (tracked starts) where these lie in another basin. Large rules are split by
whole scramblings over the cores (:func:`.parallel.num_threads`, ``STUMPLIB_THREADS``; each node's
work is its own, so the result does not depend on the split). :func:`update_from_averages` turns
the six integrands' averages into the update; ``alpha`` enters only there.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from scipy.special import expit

from stumplib.core.validation import check_int

from stumplib.phase.parallel import PARALLEL_MIN, num_threads, run_parallel

from stumplib.phase.proximal import proximal

from stumplib.phase.replica import geometry

from stumplib.phase.setting import teacher_rows

_N_TRACKED = 4  # tracked starts per node: the origin, the two matching points, the centre


@lru_cache(maxsize=160)
def _sobol_normal(log2_points: int, seed: int) -> np.ndarray:
    from scipy.stats import norm, qmc
    u = qmc.Sobol(4, scramble=True, seed=seed).random_base2(log2_points)
    nodes = norm.ppf(np.clip(u, 1e-15, 1 - 1e-15))
    nodes.setflags(write=False)
    return nodes


def scrambled_rules(log2_points: int, n_scramblings: int, seed: int = 0
                    ) -> tuple[np.ndarray, np.ndarray]:
    """``K`` independent scramblings of a Sobol rule of ``2**log2_points`` points.

    Parameters
    ----------
    log2_points : int
        Base-2 logarithm of the number of points ``N`` of each scrambling (6 to 20).
    n_scramblings : int
        Number ``K`` of independent scramblings (2 to 64).
    seed : int, optional
        The family of scramblings (>= 0; default 0): scrambling ``k`` uses the seed
        ``1000 * seed + k``.

    Returns
    -------
    nodes : numpy.ndarray, shape ``(K, N, 4)``
        Standard normal nodes ``(xi_1, xi_2, Y_1, Y_2)`` of each scrambling, ``N = 2**log2_points``.
    weights : numpy.ndarray, shape ``(K, N)``
        Equal weights ``1 / N``, each row summing to one.
    """
    log2_points = check_int("log2_points", log2_points, minimum=6, maximum=20)
    n_scramblings = check_int("n_scramblings", n_scramblings, minimum=2, maximum=64)
    seed = check_int("seed", seed, minimum=0)
    nodes = np.stack([_sobol_normal(log2_points, 1000 * seed + k) for k in range(n_scramblings)])
    w = np.full(nodes.shape[:2], 1.0 / nodes.shape[1])
    return nodes, w


def pooled_nodes(log2_points: int, K: int, seed: int) -> np.ndarray:
    """The ``K`` scramblings of ``2**log2_points`` points stacked into one pooled rule.

    Parameters
    ----------
    log2_points : int
        Base-2 logarithm of the points ``N`` per scrambling (:func:`scrambled_rules`).
    K : int
        Number of scramblings.
    seed : int
        The family of scramblings (:func:`scrambled_rules`).

    Returns
    -------
    numpy.ndarray, shape ``(K N, 4)``
        The nodes; scrambling ``k`` is the block ``k N : (k + 1) N`` (equal weights).
    """
    nodes, _ = scrambled_rules(log2_points, K, seed)
    return nodes.reshape(-1, 4)


def nested_values(prev: np.ndarray, p_prev: int, p: int, K: int, fill: float
                  ) -> tuple[np.ndarray, np.ndarray | None]:
    """Per-node values of the pooled rule of ``2**p_prev`` points per scrambling carried to the
    rule of ``2**p`` points per scrambling.

    Sobol nets are nested (the first ``2**p'`` points of a scrambling's ``2**p`` net are its
    ``2**p'`` net): a coarser rule keeps the first points of each scrambling, a finer one gets
    ``fill`` at its new nodes.

    Parameters
    ----------
    prev : numpy.ndarray, shape ``(..., K 2**p_prev, 2)``
        The values (proximal minimisers), scrambling by scrambling.
    p_prev, p : int
        Base-2 logarithms of the points per scrambling of the two rules.
    K : int
        Number of scramblings.
    fill : float
        The value at new nodes.

    Returns
    -------
    values : numpy.ndarray, shape ``(..., K 2**p, 2)``
        The values on the rule of ``2**p`` points per scrambling.
    known : numpy.ndarray of bool, shape ``(K 2**p,)``, or None
        For a finer rule, which nodes carry a value (else None).
    """
    lead = prev.shape[:-2]
    pp = prev.reshape(lead + (K, -1, 2))
    N = 2 ** p
    if p_prev >= p:
        return pp[..., :N, :].reshape(lead + (-1, 2)), None
    out = np.full(lead + (K, N, 2), fill)
    out[..., :pp.shape[-2], :] = pp
    known = np.zeros((K, N), dtype=bool)
    known[:, :pp.shape[-2]] = True
    return out.reshape(lead + (-1, 2)), known.reshape(-1)


def _follow_alts(center, t, Vb, sigma, sel, warm, xw, xb, Gb, alts, new_alts) -> None:
    """Newton from the tracked minimisers ``alts`` (_N_TRACKED, K N, 2) of the other starts at the
    nodes ``sel`` (an index array or a slice), where they lie in another basin than the current
    minimiser ``warm`` (a start in the same basin leads where ``warm`` leads, ``xw``); keeps, in
    ``xb, Gb`` ``(1, |sel|, ...)``, the lower minimum, and writes where each start now leads into
    ``new_alts``."""
    w_sel = warm[sel]
    js, ks = [], []
    for k in range(alts.shape[0]):
        new_alts[k, sel] = xw
        d = np.abs(alts[k, sel] - w_sel)
        j = np.flatnonzero(np.maximum(d[:, 0], d[:, 1]) > 1e-6)
        js.append(j)
        ks.append(np.full(j.size, k))
    j, kk = np.concatenate(js), np.concatenate(ks)
    if j.size == 0:
        return
    node = j if isinstance(sel, slice) else sel[j]
    # one batch for all tracked starts (small batches cost their per-call overhead)
    xj, Gj, _ = proximal(center[:, node], t[:, node], Vb, sigma, match_starts=False,
                         default_starts=False, extra_starts=[alts[kk, node][None]])
    new_alts[kk, node] = xj[0]
    for k in range(alts.shape[0]):  # the lowest of the tracked minima per node, in start order
        sk = kk == k
        better = Gj[0, sk] < Gb[0, j[sk]]
        jb = j[sk][better]
        xb[0, jb], Gb[0, jb] = xj[0, sk][better], Gj[0, sk][better]


def _evaluate_block(alpha: float, Z: np.ndarray, nodes: np.ndarray, K: int, kw: dict,
                    warm: np.ndarray | None, known: np.ndarray | None, restart: bool,
                    alts: np.ndarray | None):
    """:func:`pooled_update` on the nodes of ``K`` whole scramblings: the per-scrambling averages
    of the six integrands (R, K, 6), the proximal minimisers (R, K N, 2), the tracked starts'
    minimisers (_N_TRACKED, K N, 2) or None, and ``vstar`` (R,)."""
    sigma, omega, lam, A_ = kw["sigma"], kw["omega"], kw["lam"], kw["A"]
    rho = sigma * sigma
    q, m, V, th = (np.ascontiguousarray(Z[:, j]) for j in range(4))
    R, KN = Z.shape[0], nodes.shape[-2]
    center, u, vstar, xi, Y = geometry(q, m, th, sigma, nodes)
    t = teacher_rows(u, omega, A_)
    Vb = V[:, None]
    new_alts = None
    if restart and R == 1 and warm is not None and alts is not None:
        # multi-start, tracked: the centre, the current minimiser and the minimisers that the other
        # default starts (origin, matching points) reached at the last full multi-start (nearby
        # overlaps), each followed by Newton to its minimum here; nodes without such (new nodes)
        # get every default start
        x = np.empty_like(center)
        new_alts = np.empty((_N_TRACKED,) + center.shape[1:])
        ok = np.all(np.isfinite(alts), axis=(0, 2))
        for sel, tracked in ((np.flatnonzero(ok), True), (np.flatnonzero(~ok), False)):
            if sel.size == 0:
                continue
            if tracked:
                xb, Gb, _, xs, _ = proximal(center[:, sel], t[:, sel], Vb, sigma,
                                            match_starts=False, default_starts=False,
                                            return_all=True,
                                            extra_starts=[center[:, sel], warm[None, sel]])
                _follow_alts(center, t, Vb, sigma, sel, warm, xs[1, 0], xb, Gb, alts, new_alts)
                new_alts[3, sel] = xs[0, 0]  # where the centre, started afresh, leads
            else:  # (new nodes of a finer rule have no minimiser yet: warm is the origin there)
                ws = warm[None, sel]
                xb, _, _, xs, _ = proximal(center[:, sel], t[:, sel], Vb, sigma, return_all=True,
                                           extra_starts=[ws] if np.any(ws) else [])
                new_alts[:, sel] = xs[[1, 2, 3, 0], 0]
            x[:, sel] = xb
    elif warm is None or restart:
        starts = [] if warm is None else [np.broadcast_to(warm, center.shape)]
        x, _, _, xs, _ = proximal(center, t, Vb, sigma, extra_starts=starts, return_all=True)
        if R == 1:
            # where the origin, the matching points and the centre led
            new_alts = xs[[1, 2, 3, 0], 0]
    elif known is None:
        x, G, _ = proximal(center, t, Vb, sigma, default_starts=False, match_starts=False,
                           extra_starts=[np.broadcast_to(warm, center.shape)])
        if R == 1 and alts is not None and np.all(np.isfinite(alts)):
            # the tracked minimisers of the other starts are followed too (the few nodes where they
            # lie in another basin), so that the map switches basins where the global one does
            new_alts = np.empty((_N_TRACKED,) + center.shape[1:])
            _follow_alts(center, t, Vb, sigma, slice(None), warm, x[0].copy(), x, G, alts, new_alts)
    else:
        x = np.empty_like(center)
        kn = known
        if kn.any():
            i = np.flatnonzero(kn)
            x[:, i], _, _ = proximal(center[:, i], t[:, i], Vb, sigma, default_starts=False,
                                     match_starts=False,
                                     extra_starts=[np.broadcast_to(warm[i], (R, i.size, 2))])
        if not kn.all():  # new nodes: started from the centre and the origin (the multi-start
            i = np.flatnonzero(~kn)  # verification of the accepted point completes the search)
            x[:, i], _, _ = proximal(center[:, i], t[:, i], Vb, sigma, match_starts=False)
    r = x - center
    s = expit(x * (x[..., 0] - x[..., 1])[..., None])
    sc = expit(center * (center[..., 0] - center[..., 1])[..., None])
    integrands = np.stack([r[..., 0] - r[..., 1], (r * r).sum(-1), (r * Y).sum(-1),
                           (r * xi).sum(-1), rho * ((s - t) ** 2).sum(-1),
                           rho * ((sc - t) ** 2).sum(-1)], -1)  # (R, KN, 6)
    return integrands.reshape(R, K, KN // K, 6).mean(2), x, new_alts, vstar  # (R, K, 6) averages


def pooled_update(alpha: float, Z: np.ndarray, nodes: np.ndarray, K: int, kw: dict,
                  warm: np.ndarray | None, known: np.ndarray | None, restart: bool,
                  alts: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The state-evolution update at the rows ``Z`` on the pooled rule, pooled and per scrambling.

    All rows on the same nodes ``(K N, 4)``, or row ``r`` on its own nodes ``nodes[r]``
    (``(R, K N, 4)``, with ``warm`` ``(R, K N, 2)`` and ``known`` None). Proximal problems start
    from ``warm`` where ``known`` is true, and from every default start (centre, origin, matching
    points) elsewhere and everywhere when ``restart``. Large rules are split by whole scramblings
    (rows on their own nodes: by rows) over :func:`.parallel.num_threads` threads (each node's work
    is its own, so the result does not depend on the split).

    Parameters
    ----------
    alpha : float
        The sample ratio.
    Z : numpy.ndarray, shape ``(R, 4)``
        Rows of overlaps ``(q, m, V, theta)``.
    nodes : numpy.ndarray, shape ``(K N, 4)`` or ``(R, K N, 4)``
        The pooled rule (:func:`pooled_nodes`), shared by the rows or one per row.
    K : int
        Number of scramblings (blocks of ``N`` nodes).
    kw : dict
        The model: ``omega``, ``sigma``, ``lam``, ``A``.
    warm : numpy.ndarray, shape ``(K N, 2)`` or ``(R, K N, 2)``, or None
        The proximal minimisers to follow (None: every default start).
    known : numpy.ndarray of bool, shape ``(K N,)``, or None
        The nodes where ``warm`` holds a minimiser (None: all of them).
    restart : bool
        Search every node from every default start (multi-start), besides ``warm``.
    alts : numpy.ndarray, shape ``(4, K N, 2)``, optional
        The minimisers that the other default starts reached at the last multi-start (tracked
        starts; NaN at nodes without one), followed where they lie in another basin.

    Returns
    -------
    dict
        ``pooled`` ``(R, 6)`` and ``per`` ``(R, K, 6)``: the update ``(q, m, V, theta)`` followed
        by the test error and train loss at the input rows, averaged over all nodes or over
        scrambling ``k``'s block; ``prox`` ``(R, K N, 2)`` the proximal minimisers; ``alts`` where
        the tracked starts now lead (or None); ``avg`` ``(R, 6)`` the pooled averages of the six
        integrands and ``vstar`` ``(R,)`` (for :func:`update_from_averages`).
    """
    sigma, lam = kw["sigma"], kw["lam"]
    rho = sigma * sigma
    q, V, th = (np.ascontiguousarray(Z[:, j]) for j in (0, 2, 3))
    R, KN = Z.shape[0], nodes.shape[-2]
    N = KN // K
    if nodes.ndim == 3 and K == 1 and R > 1 and alts is None and known is None:
        # rows on their own nodes (one scrambling each): split by rows
        n_blocks = max(1, min(num_threads(), R, (R * KN) // PARALLEL_MIN))
        rb = np.linspace(0, R, n_blocks + 1).astype(int)
        parts = run_parallel(_evaluate_block, [
            (alpha, Z[a:b], nodes[a:b], 1, kw, None if warm is None else warm[a:b], None, restart,
             None)
            for a, b in zip(rb[:-1], rb[1:])])
        per_avg = np.concatenate([p[0] for p in parts], 0)
        x = np.concatenate([p[1] for p in parts], 0)
        new_alts = None
        vstar = np.concatenate([p[3] for p in parts], 0)
    else:
        n_blocks = max(1, min(num_threads(), K, (R * KN) // PARALLEL_MIN))
        kb = np.linspace(0, K, n_blocks + 1).astype(int)
        parts = run_parallel(_evaluate_block, [
            (alpha, Z, nodes[..., a * N:b * N, :], b - a, kw,
             None if warm is None else warm[..., a * N:b * N, :],
             None if known is None else known[a * N:b * N], restart,
             None if alts is None else alts[:, a * N:b * N])
            for a, b in zip(kb[:-1], kb[1:])])
        per_avg = np.concatenate([p[0] for p in parts], 1)
        x = np.concatenate([p[1] for p in parts], 1)
        new_alts = None if parts[0][2] is None else np.concatenate([p[2] for p in parts], 1)
        vstar = parts[0][3]
    pooled_avg = per_avg.mean(1)  # equal block sizes: the pooled rule's averages

    return dict(pooled=update_from_averages(alpha, pooled_avg, q, V, th, vstar, lam, rho, (R,)),
                per=update_from_averages(alpha, per_avg, q, V, th, vstar, lam, rho, (R, 1)),
                prox=x, alts=new_alts, avg=pooled_avg, vstar=vstar)


def update_from_averages(alpha: float, avg: np.ndarray, q: np.ndarray, V: np.ndarray,
                         th: np.ndarray, vstar: np.ndarray, lam: float, rho: float, b: tuple
                         ) -> np.ndarray:
    """The update ``(q, m, V, theta)``, the test error and the train loss from the averages of the
    six integrands.

    ``alpha`` enters only here (the integrands do not depend on it), which gives the update at
    another ``alpha`` for free.

    Parameters
    ----------
    alpha : float
        The sample ratio.
    avg : numpy.ndarray, shape ``(R, ..., 6)``
        Averages of the six integrands at the rows (:func:`pooled_update`'s ``avg``).
    q, V, th, vstar : numpy.ndarray, shape ``(R,)``
        The rows' ``q``, ``V``, ``theta`` and ``vstar``.
    lam : float
        The ridge.
    rho : float
        ``sigma**2``.
    b : tuple
        The broadcast shape of a row parameter against ``avg[..., 0]`` (``(R,)`` or ``(R, 1)``).

    Returns
    -------
    numpy.ndarray, shape ``(R, ..., 6)``
        ``(q, m, V, theta)`` of the update, the test error and the train loss; NaN where the
        update leaves the admissible region (judged by the caller).
    """
    R = q.shape[0]
    al, qq, VV, tt, vs = (np.asarray(v).reshape(b) for v in (np.full(R, alpha), q, V, th, vstar))
    m_hat = al * avg[..., 0] / VV
    q_hat = al * avg[..., 1] / VV ** 2
    th_hat = al * avg[..., 2] / (VV * vs)
    V_hat = -al * avg[..., 3] / (VV * np.sqrt(qq)) + tt * th_hat / qq
    den = lam + V_hat * rho
    den = np.where(den > 0, den, np.nan)  # left the admissible region: NaN, judged by the caller
    return np.stack([rho * (q_hat * rho + m_hat ** 2 + th_hat ** 2 * rho * rho) / den ** 2,
                     m_hat / den, rho / den, rho * rho * th_hat / den, avg[..., 5] + 0 * al,
                     al * avg[..., 4] + lam * qq / (2 * rho)], -1)
