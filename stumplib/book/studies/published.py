"""The published curves of Cui et al. at omega = 0.3 and the replay of the authors' procedure.

The published theory files (:data:`FILES`, read by :func:`read_published`) ship with ``stumplib``
as package data (``stumplib/phase/reference/cui2024/``, with a README naming their source, licence
and columns; :func:`reference_file` finds one through :mod:`importlib.resources`). Here: their
curves with two replays of the authors' 144-node rule at the same alphas (:func:`published_curves`:
the rule's exact fixed points, and their damped procedure stopped where their rule stops it,
:func:`replay_authors` from :data:`AUTHORS_START`), the published crossings
(:func:`published_crossings`), and the published and accurate values compared at given alphas
(:func:`published_at`, :func:`theta_deviation_at`).
"""
from __future__ import annotations

import csv
import hashlib
import os
from importlib import resources
try:  # Python >= 3.11
    from importlib.resources.abc import Traversable
except ImportError:  # pragma: no cover - Python 3.10
    from importlib.abc import Traversable
from pathlib import Path
from typing import Any, Mapping, Union

from dataclasses import replace

import numpy as np

from stumplib.core.stats import crossing
from stumplib.book.studies.curves import theory_at
from stumplib.phase.setting import DEFAULT_A

#: the published theory files (semantic and positional branch, omega = 0.3), among
#: :data:`REFERENCE_FILES`
FILES = {"sem": "theory_repl_softmax_Mixed_sig0.5_lamb0.01_omega0.3.csv",
         "pos": "theory_repl_softmax_Mixed_sig0.5_lamb0.01_omega0.3_para.csv"}
#: every shipped reference file (``stumplib/phase/reference/cui2024/``; its README says what each
#: column is): the three theory branches (semantic, positional ``_para``, learns-nothing
#: ``_agno``) and the gradient-descent empirics at d = 1000 (means and standard deviations)
REFERENCE_FILES = (FILES["sem"], FILES["pos"],
                   "theory_repl_softmax_Mixed_sig0.5_lamb0.01_omega0.3_agno.csv",
                   "empirics_mean_sigma0.5_omega0.3.csv", "empirics_std_sigma0.5_omega0.3.csv")
#: where they ship: a folder of the package ``stumplib.phase``
_REFERENCE_DIR = ("reference", "cui2024")

PathLike = Union[str, "os.PathLike[str]", Traversable]


def reference_dir() -> Traversable:
    """The folder of the published reference files shipped with ``stumplib`` (package data of
    ``stumplib.phase``, ``reference/cui2024/``, found through :mod:`importlib.resources`).

    Returns
    -------
    importlib.abc.Traversable
        The folder (``/ name`` gives a file; a :class:`pathlib.Path` for a package on disk).
    """
    f = resources.files("stumplib.phase")
    for part in _REFERENCE_DIR:
        f = f / part
    return f


def reference_file(name: str) -> Traversable:
    """A published reference file shipped with ``stumplib`` (package data, found through
    :mod:`importlib.resources`: the same in a source checkout and an installed package).

    Parameters
    ----------
    name : str
        One of :data:`REFERENCE_FILES`.

    Returns
    -------
    importlib.abc.Traversable
        The file (``.open()``, ``.read_text()``; a :class:`pathlib.Path` for a package on disk).

    Raises
    ------
    ValueError
        A name that is not a shipped file.
    FileNotFoundError
        The file is missing from the installed package (naming where it was looked for).
    """
    if name not in REFERENCE_FILES:
        raise ValueError(f"name must be one of the shipped reference files {REFERENCE_FILES}; "
                         f"got {name!r}")
    f = reference_dir() / name
    if not f.is_file():
        raise FileNotFoundError(
            f"published reference file {name} missing from the stumplib package: looked for "
            f"{f} (package data of stumplib.phase, {'/'.join(_REFERENCE_DIR)}/; reinstall "
            "stumplib, or restore the file from the repository)")
    return f


def _opened(path: PathLike):
    """A text handle on ``path`` (a file name or a :class:`~importlib.abc.Traversable`)."""
    if isinstance(path, (str, os.PathLike)):
        return open(path, newline="")
    return path.open("r", newline="")


def read_published(path: PathLike) -> dict[str, np.ndarray]:
    """One published theory file, rows sorted by increasing alpha.

    Parameters
    ----------
    path : str, os.PathLike or importlib.abc.Traversable
        A CSV with columns q, m, V, theta, mse, alpha, lambda, Phi (e.g.
        ``reference_file(FILES["sem"])``).

    Returns
    -------
    dict of np.ndarray
        One array per column.
    """
    with _opened(path) as fh:
        rows = list(csv.DictReader(fh))
    d = {k: np.array([float(r[k]) for r in rows]) for k in rows[0] if k}
    o = np.argsort(d["alpha"])
    return {k: v[o] for k, v in d.items()}


#: starts of :func:`replay_authors` (``q, m, V, theta``), one per branch, the same for every alpha.
#: The authors' start is not published: these are the best found by a search over starts, judged by
#: the largest relative deviation from the published files at alpha >= 0.3: semantic, a grid (q
#: over 0.01-1, V over 1-50, theta over fractions of the admissible range), 6.1e-4; positional, a
#: random search (900 starts: q log-uniform over 1e-3-1, m over 0-0.8, V log-uniform over 0.3-100, a
#: third of them perturbations of the best so far), 1.8e-3 (the grid's best start, q 0.01, m 0.25,
#: V 10, gave 2.65e-3). Where the iteration stops depends on the side from which each overlap
#: approaches its fixed point, hence on the start. Found in the sessions of commits 0f7e4de
#: (semantic grid) and 3729e8f (positional random search); the search code is not in the
#: repository. Because the start was fitted to the published files (4 numbers per branch against
#: the dozens of published points, the same start for every alpha), the replay's deviation
#: (tests/book/studies/test_published.py ``STOPPED_DEV``, a regression guard) is the best the procedure reaches, not an
#: independent confirmation; the start-free comparison is the exact fixed point of the same rule
#: (within 3.5e-3 for alpha >= 1).
AUTHORS_START = {"semantic": {"q": 0.05, "m": 0.0, "V": 20.0, "theta": 0.0335},
                 "positional": {"q": 0.02203, "m": 0.222, "V": 13.0, "theta": 0.0}}


def replay_authors(alphas: Any, branch: str, *, start: Mapping[str, float] | None = None,
                   damping: float = 0.8, tol: float = 1e-4, max_iter: int = 300, omega: float = 0.3,
                   sigma: float = 0.5, lam: float = 0.01, A: Any = DEFAULT_A
                   ) -> dict[str, np.ndarray]:
    """The authors' state-evolution procedure, stopped where they stopped it.

    Per ``alpha`` (all at once, each from the same ``start``): the 144-node Stroud-Secrest product
    rule (:func:`.quadrature.stroud_secrest_4d`); each node's proximal problem solved for its global
    minimiser (:func:`.replica.se_update`'s multi-start search: the authors' BFGS from the origin
    reaches the global minimiser at every node where a local Newton method from the origin may stop
    in another basin, see ``tests/phase/test_proximal.py``); the update
    ``z <- damping z + (1 - damping) F(z)`` on ``z = (q, m, V, theta)``; stop at the first iterate
    whose undamped change ``|F(z) - z|`` is below ``tol`` (absolute) in each of ``q, m, theta``
    (``V`` is not watched), keeping the damped update made there; at most ``max_iter`` updates
    (then the last iterate is kept, ``n_iter == max_iter``). On the semantic branch ``m = 0`` is
    imposed, on the positional one ``theta = 0``.

    Parameters
    ----------
    alphas : positive number or 1-D sequence.
    branch : ``"semantic"`` or ``"positional"``.
    start : dict of ``q, m, V, theta`` (default :data:`AUTHORS_START` of the branch).
    damping : weight of the old iterate, in [0, 1).
    tol : stopping threshold (> 0).
    max_iter : iteration cap (>= 1).
    omega, sigma, lam, A : the model, as in :func:`.replica.solve_fixed_rule`.

    Returns
    -------
    dict of (K,) arrays ``alpha, q, m, V, theta, n_iter`` and ``residual`` (the last
    ``max |F(z) - z|`` over ``q, m, theta``).
    """
    from stumplib.core.validation import check_int, check_real
    from stumplib.phase.quadrature import stroud_secrest_4d
    from stumplib.phase.replica import UpdateOptions, se_update
    from stumplib.phase.setting import check_alphas, check_model

    a, _ = check_alphas(alphas)
    model = check_model(omega=omega, sigma=sigma, lam=lam, A=A, branch=branch)
    omega, sigma, lam, A_, branch = model
    damping = check_real("damping", damping, low=0.0, high=1.0, high_open=True)
    tol = check_real("tol", tol, low=0.0, low_open=True, high=1.0)
    max_iter = check_int("max_iter", max_iter, minimum=1)
    start = AUTHORS_START[branch] if start is None else start
    if not isinstance(start, Mapping) or set(start) != {"q", "m", "V", "theta"}:
        raise ValueError(f"start must be a dict with keys q, m, V, theta; got {start!r}")
    st = {k: check_real(f"start[{k!r}]", start[k]) for k in ("q", "m", "V", "theta")}
    if st["q"] <= 0 or st["V"] <= 0 or st["theta"] ** 2 >= sigma ** 2 * st["q"]:
        raise ValueError(f"start needs q > 0, V > 0 and theta^2 < sigma^2 q; got {st}")
    nodes, w = stroud_secrest_4d()
    opts = UpdateOptions(nodes=nodes, weights=w, with_test_error=False)
    keys = ("q", "m", "V", "theta")
    z = np.tile(np.array([st[k] for k in keys]), (a.size, 1))
    watch = [0, 1, 3]
    active = np.ones(a.size, dtype=bool)
    n_iter = np.zeros(a.size, dtype=int)
    resid = np.full(a.size, np.inf)
    for _ in range(max_iter):
        idx = np.flatnonzero(active)
        up = se_update(a[idx], *z[idx].T, model=model, options=opts)
        f = np.stack([up[k] for k in keys], -1)
        f[:, 1 if branch == "semantic" else 3] = 0.0
        r = np.abs(f - z[idx])[:, watch].max(-1)
        z[idx] = damping * z[idx] + (1 - damping) * f
        n_iter[idx] += 1
        resid[idx] = r
        active[idx[r < tol]] = False
        if not active.any():
            break
    out = {k: z[:, i].copy() for i, k in enumerate(keys)}
    return dict(alpha=a, **out, n_iter=n_iter, residual=resid)


def _files_digest(ref_dir: PathLike | None) -> str:
    """A hash of the two published theory files (the cache key: an edited file is not reused)."""
    h = hashlib.sha256()
    for key in ("sem", "pos"):
        f = reference_file(FILES[key]) if ref_dir is None else _join(ref_dir, FILES[key])
        with _opened(f) as fh:
            h.update(fh.read().encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def _join(ref_dir: PathLike, name: str) -> PathLike:
    return Path(ref_dir) / name if isinstance(ref_dir, (str, os.PathLike)) else ref_dir / name


def published_curves(ref_dir: PathLike | None = None, *, alpha_min: float = 0.3,
                     cache: bool = False) -> dict[str, np.ndarray]:
    """The published omega = 0.3 curves (alpha >= alpha_min; test error = mse / 2, train loss =
    -Phi) and two replays of the authors' rule at the same alphas.

    ``{br}_replay_*``: the exact fixed points of the 144-node Stroud-Secrest product rule
    (:func:`.replica.solve_fixed_rule` with ``rule="stroud"``); ``{br}_stopped_*``: their procedure
    stopped by their rule (:func:`replay_authors`); ``{br}_resid_{k}``: the undamped change
    ``F(z) - z`` of ``k`` in ``q, m, theta`` that the 144-node rule (global proximal minimisers)
    gives at the published point ``z``, which the authors' stopping rule compares with 1e-4;
    ``{br}_bfgs_resid_{k}``: the same with the authors' minimiser
    (:func:`.proximal.proximal_bfgs`; about 5 s a branch).

    Parameters
    ----------
    ref_dir : str, os.PathLike, importlib.abc.Traversable or None
        A folder holding the files :data:`FILES`; ``None`` (the default): the files shipped with
        ``stumplib`` (:func:`reference_dir`).
    alpha_min : float
        The smallest alpha kept.
    cache : bool
        Keep the result with :func:`stumplib.core.memo.remember` (no log), keyed on the files'
        contents.

    Returns
    -------
    dict of np.ndarray
    """
    if cache:
        from stumplib.core.memo import remember

        return remember("published_curves", dict(alpha_min=alpha_min,
                                                 files=_files_digest(ref_dir)),
                        lambda: published_curves(ref_dir, alpha_min=alpha_min))
    from stumplib.phase.quadrature import stroud_secrest_4d
    from stumplib.phase.replica import (UpdateOptions, se_update, solve_fixed_rule,
                                        test_error_from_overlaps)
    from stumplib.phase.setting import check_model

    out: dict[str, np.ndarray] = {}
    for key, br in (("sem", "semantic"), ("pos", "positional")):
        d = read_published(reference_file(FILES[key]) if ref_dir is None
                           else _join(ref_dir, FILES[key]))
        sel = d["alpha"] >= alpha_min
        out[f"{key}_alpha"] = d["alpha"][sel]
        for k in ("q", "m", "V", "theta"):
            out[f"{key}_{k}"] = d[k][sel]
        out[f"{key}_test_error"] = d["mse"][sel] / 2
        out[f"{key}_train_loss"] = -d["Phi"][sel]
        st = replay_authors(d["alpha"][sel], br)
        z = {k: d[k][sel] * (0.0 if (k, br) in (("m", "semantic"), ("theta", "positional"))
                             else 1.0)
             for k in ("q", "m", "V", "theta")}
        nodes, w = stroud_secrest_4d()
        opts = UpdateOptions(nodes=nodes, weights=w, with_test_error=False)
        up = se_update(d["alpha"][sel], z["q"], z["m"], z["V"], z["theta"],
                       model=check_model(omega=0.3, branch=br), options=opts)
        for k in ("q", "m", "theta"):
            out[f"{key}_resid_{k}"] = up[k] - z[k]
        # the same update with the authors' minimiser (BFGS, finite differences, from the origin)
        bf = se_update(d["alpha"][sel], z["q"], z["m"], z["V"], z["theta"],
                       model=check_model(omega=0.3, branch=br),
                       options=replace(opts, minimiser="bfgs"))
        for k in ("q", "m", "theta"):
            out[f"{key}_bfgs_resid_{k}"] = bf[k] - z[k]
        for k in ("q", "m", "V", "theta"):
            out[f"{key}_stopped_{k}"] = np.asarray(st[k])
        r = solve_fixed_rule(d["alpha"][sel], rule="stroud", tol=1e-8, max_iter=3000,
                             model=check_model(omega=0.3, branch=br))
        for k in ("q", "m", "V", "theta"):
            out[f"{key}_replay_{k}"] = np.asarray(r[k])
        # the test error at the replayed overlaps with an accurate rule (smooth integrand), as the
        # authors computed theirs with a finer rule than the one of the fixed point
        out[f"{key}_replay_test_error"] = test_error_from_overlaps(r["q"], r["m"], r["theta"],
                                                                   n_nodes=16,
                                                                   model=check_model(omega=0.3))
    return out


def published_crossings(pub: Mapping[str, np.ndarray] | None,
                        baseline: float) -> tuple[float, float]:
    """alpha_c and alpha_l of the published curves (training losses; semantic test error against
    ``baseline``).

    Parameters
    ----------
    pub : mapping or None
        :func:`published_curves`' result (``None``: no published curve, as at an omega other
        than 0.3).
    baseline : float
        The linear baseline's test error.

    Returns
    -------
    (alpha_c, alpha_l) : tuple of float
        NaN without a published curve (``pub`` is ``None``).
    """
    if pub is None:
        return float("nan"), float("nan")
    pa = np.asarray(pub["sem_alpha"])
    o = np.argsort(pa)
    pc = crossing(pa[o], (pub["sem_train_loss"] - pub["pos_train_loss"])[o], 0.0, direction="down",
                  which="last")
    pl = crossing(pa[o], (pub["sem_test_error"] - baseline)[o], 0.0, direction="down", which="last")
    return float(pc), float(pl)


def published_at(pub: Mapping[str, np.ndarray] | None, alphas: Any, key: str) -> np.ndarray:
    """The published semantic ``key`` at the published alpha nearest each of ``alphas``.

    Parameters
    ----------
    pub : mapping or None
        :func:`published_curves`' result.
    alphas : array_like
        Where.
    key : str
        The quantity.

    Returns
    -------
    np.ndarray
        NaN without a published curve (``pub`` is ``None``).
    """
    a = np.atleast_1d(np.asarray(alphas, dtype=float))
    if pub is None:
        return np.full(a.size, np.nan)
    return np.array([pub[f"sem_{key}"][int(np.argmin(np.abs(pub["sem_alpha"] - x)))] for x in a])


def theta_deviation_at(th: Mapping[str, np.ndarray], pub: Mapping[str, np.ndarray],
                       alpha: float) -> float:
    """Relative difference of the accurate semantic theta from the published one at the published
    alpha nearest ``alpha``.

    Parameters
    ----------
    th : mapping
        :func:`.curves.accurate_curves`' result.
    pub : mapping
        :func:`published_curves`' result.
    alpha : float
        Where.

    Returns
    -------
    float
        NaN when the accurate point is not there.
    """
    i = int(np.argmin(np.abs(pub["sem_alpha"] - alpha)))
    acc, _ = theory_at(th, [float(pub["sem_alpha"][i])], "theta")
    return float(acc[0] / pub["sem_theta"][i] - 1)
