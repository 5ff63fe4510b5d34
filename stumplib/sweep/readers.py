"""Reading the stores of the heavy runs back into the layouts their readers use.

The task ids of the three phase sweeps (the scripts name their tasks with these functions):
``d<d>_seed<s>`` (minimisers and the flat window's landscape: one task per dimension and seed),
``control_seed<s>`` (the flat window's control landscape), ``theory``, ``root`` and
``control_theory`` (the flat window's theory stages) and ``omega<w>`` (the phase diagram).

- :func:`minimiser_runs_from_store`: ``{d: {key: array (seeds, alphas)}}`` as
  :func:`stumplib.book.runs.read_runs` gives from the old layout;
- :func:`landscape_from_store`: the layout of :func:`stumplib.book.runs.read_flat_window`;
- :func:`diagram_from_store`: the dict :func:`stumplib.book.studies.diagram.phase_diagram` returns.

Only tasks recorded as done are read; failed tasks are listed in the metadata (:func:`store_meta`).
"""
from __future__ import annotations

import os
import re
from typing import Any, Mapping, Sequence

import numpy as np

from stumplib.sweep.params import decode
from stumplib.sweep.store import read_store

_SEED_TASK = re.compile(r"(?:d(\d+)|([a-z]+))_seed(\d+)")


def seed_task(d: int | str, seed: int) -> str:
    """The id of the task of one dimension (or a named group such as ``"control"``) and one seed.

    Parameters
    ----------
    d : int or str
        The dimension, or a lower-case group name.
    seed : int
        The seed offset.

    Returns
    -------
    str
        ``"d<d>_seed<seed>"`` or ``"<group>_seed<seed>"``.
    """
    return f"{d}_seed{int(seed)}" if isinstance(d, str) else f"d{int(d)}_seed{int(seed)}"


def parse_seed_task(task_id: str) -> tuple[int | str, int] | None:
    """The dimension (or group) and seed of a :func:`seed_task` id.

    Parameters
    ----------
    task_id : str
        A task id.

    Returns
    -------
    tuple or None
        ``(d, seed)`` (``d`` an int, or the group's name), ``None`` for another kind of id.
    """
    m = _SEED_TASK.fullmatch(task_id)
    if m is None:
        return None
    return (int(m.group(1)) if m.group(1) else m.group(2)), int(m.group(3))


def omega_task(omega: float) -> str:
    """The id of the phase diagram's task at one omega.

    Parameters
    ----------
    omega : float
        The positional share.

    Returns
    -------
    str
        ``"omega<repr of the float>"``, e.g. ``"omega0.35"``.
    """
    return f"omega{float(omega)!r}"


def store_meta(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """What a store says about itself.

    Parameters
    ----------
    manifest : Mapping[str, Any]
        A store's manifest (:func:`.store.read_store`).

    Returns
    -------
    dict
        ``kind``; ``params`` (decoded: arrays as numpy arrays); ``runs`` (each driver run's
        provenance and counts); ``provenance`` (where the store says it came from, e.g. an import;
        ``None`` otherwise); ``done`` and ``failed`` (task counts); ``errors`` (``{task id: error}``
        of the failed tasks); ``seconds`` (the tasks' compute time in all).
    """
    tasks = manifest.get("tasks", {})
    failed = {k: v.get("error", "?") for k, v in tasks.items() if v.get("status") == "failed"}
    return {"kind": manifest.get("kind"), "params": decode(manifest.get("params", {})),
            "runs": list(manifest.get("runs", [])), "provenance": manifest.get("provenance"),
            "done": sum(v.get("status") == "done" for v in tasks.values()), "failed": len(failed),
            "errors": failed, "seconds": float(sum(v.get("seconds") or 0.0 for v in tasks.values()))}


def stack_seeds(results: Sequence[Mapping[str, Any]],
                shared: Sequence[str] = ()) -> dict[str, np.ndarray]:
    """Join per-seed results (one-seed outputs: a leading seed axis of length 1) along that axis.

    Parameters
    ----------
    results : sequence of mappings
        One result per seed, in seed order. Entries missing from some results are filled with NaN
        (numbers), ``False`` (booleans) or ``""`` (text).
    shared : sequence of str, optional
        Entries that are the same for every seed (e.g. ``thetas``): taken from the first result.

    Returns
    -------
    dict of np.ndarray
        The joined entries (leading axis: the seeds), and the ``shared`` ones.

    Raises
    ------
    ValueError
        An entry without a leading axis of length 1.
    """
    if not results:
        return {}
    keys = list(dict.fromkeys(k for r in results for k in r if k not in shared))
    out: dict[str, np.ndarray] = {k: np.asarray(results[0][k]) for k in shared if k in results[0]}
    for k in keys:
        vals = [np.asarray(r[k]) if k in r else None for r in results]
        like = next(v for v in vals if v is not None)
        if any(v is not None and (v.ndim == 0 or v.shape[0] != 1) for v in vals):
            raise ValueError(f"results: entry {k!r} has no leading seed axis of length 1")
        kind = like.dtype.kind
        fill, dtype = ((False, bool) if kind == "b" else ("", like.dtype) if kind == "U"
                       else (np.nan, float))
        out[k] = np.concatenate([v if v is not None else np.full(like.shape, fill, dtype=dtype)
                                 for v in vals])
    return out


def minimiser_runs_from_store(
        path: str | os.PathLike) -> tuple[dict[int, dict[str, np.ndarray]], dict[str, Any]]:
    """The minimiser runs of a ``scripts/phase_minimisers.py`` store (or an imported old file).

    Parameters
    ----------
    path : path-like
        The ``.npz`` store.

    Returns
    -------
    runs : dict
        ``{d: {key: array}}``: every per-run quantity (``test_error``, ``m``, ``theta_emp``,
        ``q_emp``, ``train_loss``, ``rel_grad``, ``n_iter``, ``n_newton``, ``converged``, ``ran``,
        ``gd_test_error``, ``gd_rel_grad``) of shape (seeds, alphas), NaN (``False``) where a run
        was not made; ``alphas``, ``seeds``, ``d``, ``seconds`` (the tasks' compute time) and
        ``source`` (seeds, alphas): the index in ``meta["runs"]`` of the driver run (or, for an
        imported file, the old process) that made each run, -1 where none ran.
    meta : dict
        :func:`store_meta` of the store.

    Raises
    ------
    StoreError
        Not a store of minimiser runs.
    """
    from stumplib.sweep.store import StoreError

    manifest, results = read_store(path)
    if manifest.get("kind") != "phase_minimisers":
        raise StoreError(f"{path} holds {manifest.get('kind')!r}, not 'phase_minimisers'")
    tasks = manifest["tasks"]
    by_d: dict[int, dict[int, str]] = {}
    for tid, info in tasks.items():
        ds = parse_seed_task(tid)
        if info.get("status") == "done" and ds is not None and isinstance(ds[0], int):
            by_d.setdefault(ds[0], {})[ds[1]] = tid
    runs: dict[int, dict[str, np.ndarray]] = {}
    for d in sorted(by_d):
        seeds = sorted(by_d[d])
        ids = [by_d[d][s] for s in seeds]
        r = stack_seeds([results[t] for t in ids], shared=("alphas",))
        r.update(seeds=np.asarray(seeds), d=np.asarray(d),
                 seconds=np.asarray(sum(tasks[t].get("seconds") or 0.0 for t in ids)))
        if "source" not in r or np.isnan(np.asarray(r["source"], float)).any():
            run = np.asarray([tasks[t].get("run", -1) for t in ids])[:, None]
            old = np.nan_to_num(np.asarray(r.get("source", np.full(r["ran"].shape, np.nan)), float),
                                nan=-2).astype(int)
            r["source"] = np.where(old >= -1, old, np.where(r["ran"], run, -1))
        runs[d] = r
    return runs, store_meta(manifest)


def landscape_from_store(path: str | os.PathLike) -> dict[str, Any]:
    """A ``scripts/phase_flat_window.py`` store in the layout of
    :func:`stumplib.book.runs.read_flat_window`.

    Parameters
    ----------
    path : path-like
        The ``.npz`` store.

    Returns
    -------
    dict
        ``landscape`` (``{d: landscape output over the done seeds}``; for a store of
        lowest-minimum searches also ``search``: every start's record, seeds stacked), ``theory``,
        ``root``
        (held-theory outputs, ``None`` when not run), ``control`` (``{"theory", "landscape"}``,
        ``None`` unless both ran), ``meta`` (the first run's ``command``, ``commit``,
        ``machine``, the tasks' ``seconds`` and the model parameters) and ``store``
        (:func:`store_meta`).

    Raises
    ------
    StoreError
        Not a flat-window store.
    """
    from stumplib.sweep.store import StoreError

    manifest, results = read_store(path)
    if manifest.get("kind") != "phase_flat_window":
        raise StoreError(f"{path} holds {manifest.get('kind')!r}, not 'phase_flat_window'")
    tasks = manifest["tasks"]
    done = {t for t, v in tasks.items() if v.get("status") == "done"}
    groups: dict[int | str, dict[int, str]] = {}
    for tid in done:
        ds = parse_seed_task(tid)
        if ds is not None:
            groups.setdefault(ds[0], {})[ds[1]] = tid
    shared = ("thetas", "d", "alpha", "line_theta", "start_kind", "informed", "n")

    def join(g: int | str) -> dict[str, np.ndarray]:
        ids = [groups[g][s] for s in sorted(groups[g])]
        out = stack_seeds([results[t] for t in ids], shared=shared)
        total = np.asarray(sum(tasks[t].get("seconds") or 0.0 for t in ids))
        for k in ("line_theta", "start_kind", "d", "alpha", "n", "informed"):
            v = out.get(k)  # the same for every seed: stored with a leading seed axis of 1
            if v is not None and np.ndim(v) >= 1 and np.shape(v)[0] == 1:
                out[k] = np.asarray(v)[0]
        if "line_theta" in out:  # a lowest-minimum search: the landscape's layout, and the search
            from stumplib.book.studies.lowest_summary import as_landscape

            # the search keeps each seed's own seconds; the landscape gets the tasks' total
            out = dict(as_landscape(out), search=out, seconds=total)
        else:
            out["seconds"] = total
        out.setdefault("seeds", np.asarray(sorted(groups[g])))
        return out

    land = {g: join(g) for g in sorted(k for k in groups if isinstance(k, int))}
    stage = {k: (dict(results[k], seconds=np.asarray(tasks[k].get("seconds") or 0.0))
                 if k in done else None) for k in ("theory", "root", "control_theory")}
    control_land = join("control") if "control" in groups else None
    meta_ = store_meta(manifest)
    first = meta_["runs"][0] if meta_["runs"] else {}
    p = meta_["params"]
    meta = {k: first.get(k, "") for k in ("command", "commit", "machine")}
    meta["seconds"] = meta_["seconds"]
    meta.update({k: np.asarray(p[k]) if k in ("A", "thetas") else p[k]
                 for k in ("alpha", "omega", "sigma", "lam", "seed", "gtol", "A", "thetas") if k in p})
    return dict(landscape=land, theory=stage["theory"], root=stage["root"], meta=meta,
                control=(dict(theory=stage["control_theory"], landscape=control_land)
                         if stage["control_theory"] is not None and control_land else None),
                store=meta_)


def diagram_from_store(path: str | os.PathLike) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """A ``scripts/phase_diagram.py`` store as :func:`stumplib.book.studies.diagram.phase_diagram`
    returns it (the omegas done, increasing).

    Parameters
    ----------
    path : path-like
        The ``.npz`` store.

    Returns
    -------
    diagram : dict of np.ndarray
        Per omega (axis ``W``): ``omega``, ``baseline``, ``seconds``, the crossings; per solved
        point (axis ``P``): ``pt_w`` (the omega's index here), ``pt_alpha``, ``sem_*``, ``pos_*``.
    meta : dict
        :func:`store_meta` of the store.

    Raises
    ------
    StoreError
        Not a phase-diagram store.
    """
    from stumplib.sweep.store import StoreError

    manifest, results = read_store(path)
    if manifest.get("kind") != "phase_diagram":
        raise StoreError(f"{path} holds {manifest.get('kind')!r}, not 'phase_diagram'")
    done = [t for t, v in manifest["tasks"].items() if v.get("status") == "done"]
    parts = sorted((float(results[t]["omega"][0]), results[t]) for t in done)
    return merge_diagrams([r for _, r in parts]), store_meta(manifest)


def merge_diagrams(parts: Sequence[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Join one-omega phase diagrams (in the order given) into one.

    Parameters
    ----------
    parts : sequence of mappings
        :func:`stumplib.book.studies.diagram.phase_diagram` outputs of one omega each.

    Returns
    -------
    dict of np.ndarray
        The diagram over all of them: per-omega entries joined, per-point entries joined with
        ``pt_w`` renumbered.
    """
    if not parts:
        return {}
    out: dict[str, list] = {}
    for i, part in enumerate(parts):
        for k, v in part.items():
            v = np.asarray(v)
            out.setdefault(k, []).append(np.full(v.shape, i) if k == "pt_w" else v)
    return {k: np.concatenate(v) for k, v in out.items()}

