"""The committed runs the book reads: where they are, and their readers.

The heavy runs (chapter 6's minimisers and flat window, the seed audit) are executed outside the
book by the scripts in ``scripts/`` and committed with their commands, commits and parameters.
The book reads them from :func:`runs_dir`: ``$STUMPBOOK_RUNS`` when set, else ``scripts/`` next to
the ``stumplib`` package (a source checkout). An installed ``stumplib`` (``pip install .``) has no
such folder: set ``STUMPBOOK_RUNS`` to a checkout's ``scripts/`` (or pass a path), and a reader
returns its "no run" value where the file is absent, with a :class:`MissingRunWarning` naming the
file and where it was looked for (:func:`missing_message`): never silently.

- the seed audit: :func:`read_audit`;
- chapter 6's deciding run of converged minimisers (``scripts/phase_minimisers.py``):
  :func:`deciding_run` (checked against the page's model), :func:`read_minimisers` (the complete
  file with the largest ``d``), and their parts :func:`read_runs`, :func:`run_parameters`,
  :func:`parameter_mismatches`;
- chapter 6's flat-window and lowest-minimum run (``scripts/phase_flat_window.py``, a sweep store):
  :func:`read_flat_window`;
- chapter 6's confirmatory run of the lowest minima on fresh seeds (the same script,
  pre-registered in ``scripts/PHASE_CONFIRM.md``): :func:`read_confirm`, checked against
  :data:`CONFIRM_PLAN` and :data:`CONFIRM_PARAMETERS`.

A reader never fills a parameter the file did not record with the page's value: it says that
the parameter is missing (and :func:`deciding_run` refuses such a file when asked to check it).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
import re
import warnings
from typing import Any, Mapping, Sequence

import numpy as np

from stumplib.core.version import PACKAGE


RUNS_ENV = "STUMPBOOK_RUNS"
#: the seed audit's file name (``scripts/seed_audit.py`` writes it)
AUDIT_NAME = "SEED_AUDIT.json"
#: chapter 6's deciding run (``scripts/phase_minimisers.py``'s output, with its command, commit,
#: machine, duration and parameters; ``scripts/PHASE_MINIMISERS.md`` describes it)
DECIDING_RUN_NAME = "PHASE_MINIMISERS_4000.npz"
#: the recorded minimiser runs, in order of preference (the extended deciding run first)
MINIMISER_NAMES = (DECIDING_RUN_NAME, "PHASE_MINIMISERS.npz")
#: the flat window's and the lowest minima's recorded run (``scripts/phase_flat_window.py``)
FLAT_WINDOW_NAME = "PHASE_LOWEST_MINIMA.npz"
#: chapter 6's confirmatory run (``scripts/PHASE_CONFIRM.md``: fixed before its data)
CONFIRM_NAME = "PHASE_CONFIRM.npz"
#: its pre-registered seeds per dimension
CONFIRM_PLAN = {8000: 8, 4000: 16, 2000: 16}
#: its pre-registered search (every default of ``scripts/phase_flat_window.py``, fresh seeds
#: ``--seed 1``); the page adds its model (``omega``, ``sigma``, ``lam``, ``A``)
CONFIRM_PARAMETERS = dict(alpha=1.0164, seed=1, gtol=1e-8,
                          thetas=np.linspace(0.082, 0.112, 7).tolist(), n_rotations=2,
                          perturb_scales=[0.05, 0.1, 0.2, 0.4], same_tol=1e-3)
#: chapter 6's search-bias study (``scripts/PHASE_BIAS.md``, pre-registered): the recorded
#: sweep's late-found seeds searched again with a wider, denser held line
BIAS_NAME = "PHASE_BIAS.npz"
#: its seeds per dimension, in the order they run
BIAS_PICKS = {4000: (1, 3, 4, 9, 11), 8000: (1, 2, 3, 4, 7)}
#: its search: the recorded sweep's (``--seed 0``) with the line 0.075 to 0.12 in 16 points
BIAS_PARAMETERS = dict(alpha=1.0164, seed=0, gtol=1e-8,
                       thetas=np.linspace(0.075, 0.12, 16).tolist(), n_rotations=2,
                       perturb_scales=[0.05, 0.1, 0.2, 0.4], same_tol=1e-3)
#: chapter 6's fitted end of the semantic branch at ``quick``, seed 0
#: (``scripts/phase_branch_end.py``): its sweeps, which the page reads where every argument matches
BRANCH_END_NAME = "PHASE_BRANCH_END.npz"
#: the model parameters a stored run must share with the page that reads it
RUN_PARAMETERS = ("omega", "sigma", "lam", "A")


def runs_dir() -> Path:
    """Where the committed runs are.

    Returns
    -------
    Path
        ``$STUMPBOOK_RUNS`` when set, else ``scripts/`` next to the ``stumplib`` package (it may
        not exist: an installed package has none).
    """
    env = os.environ.get(RUNS_ENV)
    return Path(env) if env else PACKAGE.parent / "scripts"


def run_file(name: str) -> Path:
    """The path of the committed run ``name`` under :func:`runs_dir`.

    Parameters
    ----------
    name : str
        A file name (``"SEED_AUDIT.json"``).

    Returns
    -------
    Path
    """
    return runs_dir() / name


class MissingRunWarning(UserWarning):
    """A recorded run the book reads is absent (the message names the file and where it was
    looked for); the reader returns its "no run" value and the chapter computes its own."""


def missing_message(name: str, path: str | os.PathLike | None = None) -> str:
    """What is missing and where it was looked for: one sentence for a reader's warning or a page.

    Parameters
    ----------
    name : str
        The run's file name (e.g. :data:`FLAT_WINDOW_NAME`).
    path : str, os.PathLike or None
        Where it was looked for (``None``: ``name`` under :func:`runs_dir`).

    Returns
    -------
    str
        ``"recorded run <name> not found at <path> (...)"``, saying how the folder was chosen.
    """
    p = Path(path) if path is not None else run_file(name)
    if path is not None:
        how = "the path given"
    elif os.environ.get(RUNS_ENV):
        how = f"the folder the environment variable {RUNS_ENV} names"
    else:
        how = (f"scripts/ next to the stumplib package; an installed package has none: set the "
               f"environment variable {RUNS_ENV} to a checkout's scripts/")
    return f"recorded run {name} not found at {p} ({how})"


def _warn_missing(name: str, path: str | os.PathLike | None) -> None:
    warnings.warn(missing_message(name, path), MissingRunWarning, stacklevel=3)


def read_audit(path: str | os.PathLike | None = None) -> dict[str, Any]:
    """The seed audit (``{}`` when there is none): ``{"commit", "profile", "seeds", "claims":
    {key: {"status": [...], ...}}, ...}``.

    Parameters
    ----------
    path : str, os.PathLike or None
        The audit's JSON file; ``None`` reads :data:`AUDIT_NAME` under :func:`runs_dir`.

    Returns
    -------
    dict[str, Any]
        The parsed JSON, or ``{}`` when the file does not exist (with a
        :class:`MissingRunWarning`).
    """
    p = Path(path) if path is not None else run_file(AUDIT_NAME)
    if not p.is_file():
        _warn_missing(AUDIT_NAME if path is None else p.name, path)
        return {}
    return json.loads(p.read_text())


def read_runs(flat: Mapping[str, Any]) -> dict[int, dict[str, np.ndarray]]:
    """``{d: {key: array}}`` (as :func:`stumplib.phase.minimise.study` returns them) from the flat
    layout ``d<d>_<key>`` of ``scripts/phase_minimisers.py``'s output file.

    Parameters
    ----------
    flat : Mapping[str, Any]
        The file's arrays (``np.load``): ``ds`` and ``d<d>_<key>`` for every ``d`` of ``ds``.

    Returns
    -------
    dict
        ``{d: {key: array}}``.
    """
    ds = [int(d) for d in np.atleast_1d(flat["ds"])]
    return {d: {k[len(f"d{d}_"):]: np.asarray(flat[k]) for k in flat if k.startswith(f"d{d}_")}
            for d in ds}


def run_parameters(flat: Mapping[str, Any]) -> dict[str, Any]:
    """The model and run parameters a stored run recorded (``{}`` for a file that recorded none,
    as the first deciding run did); a parameter the file lacks is absent, never filled in.

    Parameters
    ----------
    flat : Mapping[str, Any]
        The file's arrays (``np.load``).

    Returns
    -------
    dict
        ``omega``, ``sigma``, ``lam`` (floats), ``A`` (2, 2), ``seed``, ``gtol``, ``n_alpha``,
        ``code_version``, ``init``, ``alphas``, where recorded.
    """
    out: dict[str, Any] = {}
    for k in ("omega", "sigma", "lam", "seed", "gtol", "n_alpha"):
        if k in flat:
            out[k] = float(flat[k])
    if "A" in flat:
        out["A"] = np.asarray(flat["A"], dtype=float).reshape(2, 2)
    for k in ("code_version", "init"):
        if k in flat:
            out[k] = str(flat[k])
    if "alphas" in flat:
        out["alphas"] = np.asarray(flat["alphas"], dtype=float)
    return out


def parameter_mismatches(recorded: Mapping[str, Any], expected: Mapping[str, Any]) -> list[str]:
    """The parameters on which a stored run differs from the page (every one the page gives;
    :data:`RUN_PARAMETERS` are the model's).

    Parameters
    ----------
    recorded : Mapping[str, Any]
        :func:`run_parameters` of the stored file.
    expected : Mapping[str, Any]
        The page's values (e.g. ``omega``, ``sigma``, ``lam``, ``A``, ``gtol``, ``alpha``), each
        compared with relative tolerance 1e-9 (arrays elementwise; a shape difference counts as a
        mismatch).

    Returns
    -------
    list of str
        One phrase per difference (``"lam = 0.02 (this page: 0.01)"``, ``"A not recorded"``), or
        ``["parameters not recorded"]``; empty when the run matches.
    """
    if not any(k in recorded for k in expected):
        return ["parameters not recorded"]
    out = []
    for k in expected:
        want = np.asarray(expected[k], dtype=float)
        if k not in recorded:
            out.append(f"{k} not recorded")
            continue
        got = np.asarray(recorded[k], dtype=float)
        if got.shape != want.shape or not np.allclose(got, want, rtol=1e-9, atol=0.0):
            fmt = ((lambda v: f"{float(v):g}") if got.ndim == want.ndim == 0
                   else (lambda v: str(np.round(v, 6).tolist())))
            out.append(f"{k} = {fmt(got)} (this page: {fmt(want)})")
    return out


def deciding_run(path: str | os.PathLike | None = None, *, expect: Mapping[str, Any] | None = None,
                 strict: bool = True) -> tuple[dict[int, dict], dict[str, Any]] | None:
    """Chapter 6's committed deciding run (:data:`DECIDING_RUN_NAME` under :func:`runs_dir`, or
    ``path``), read and checked against the page's model.

    Parameters
    ----------
    path : str, os.PathLike or None
        The file written by ``scripts/phase_minimisers.py`` (``None``: :data:`DECIDING_RUN_NAME`
        under :func:`runs_dir`).
    expect : Mapping[str, Any] or None
        The page's ``omega``, ``sigma``, ``lam``, ``A``; ``None``: no check.
    strict : bool
        Refuse (``ValueError``) a file whose parameters differ from ``expect`` or were not
        recorded; ``False``: return it with the differences listed in ``meta["mismatch"]``.

    Returns
    -------
    tuple or None
        ``(runs, meta)``: ``runs`` as :func:`stumplib.phase.minimise.study` returns them
        (:func:`read_runs`), and ``meta`` the run's ``command``, ``commit``, ``machine``
        (strings: the last process's), ``seconds`` (float; for a merged run the compute time of
        all its processes together), ``params`` (:func:`run_parameters`), ``sources`` (one line
        per process that contributed runs) and ``mismatch`` (:func:`parameter_mismatches`, empty
        without ``expect``); ``None`` when the file does not exist (an installed package without
        ``$STUMPBOOK_RUNS``), with a :class:`MissingRunWarning`.

    Raises
    ------
    ValueError
        With ``strict``, a file whose model differs from ``expect`` or was not recorded.
    """
    p = Path(path) if path is not None else run_file(DECIDING_RUN_NAME)
    if not p.is_file():
        _warn_missing(DECIDING_RUN_NAME if path is None else p.name, path)
        return None
    with np.load(p) as flat:
        meta: dict[str, Any] = {k: str(flat[k]) for k in ("command", "commit", "machine")}
        meta["seconds"] = float(flat["seconds"])
        if "sources" in flat:  # several processes: their compute time at every d, together
            meta["seconds"] = float(sum(float(flat[f"d{int(d)}_seconds"])
                                        for d in np.atleast_1d(flat["ds"])))
        meta["params"] = run_parameters(flat)
        meta["sources"] = ([str(x) for x in np.atleast_1d(flat["sources"])] if "sources" in flat
                           else [meta["command"]])
        runs = read_runs(flat)
    meta["mismatch"] = parameter_mismatches(meta["params"], expect) if expect is not None else []
    if strict and meta["mismatch"]:
        raise ValueError(f"{p.name} does not match this page's model: "
                         f"{'; '.join(meta['mismatch'])}. Run scripts/phase_minimisers.py at "
                         "these parameters, or use the page's own run")
    return runs, meta


def _requested_ds(command: str) -> list[int]:
    """The ``--d`` values of a recorded command line (empty if none)."""
    m = re.search(r"--d((?:\s+\d+)+)", command)
    return [int(v) for v in m.group(1).split()] if m else []


def read_minimisers(paths: Sequence[str | os.PathLike] | None = None
                    ) -> tuple[dict[int, dict], dict[str, Any]] | None:
    """The recorded minimiser run to use: among ``paths`` (default :data:`MINIMISER_NAMES` under
    :func:`runs_dir`), the complete files (every ``--d`` of the recorded command finished), the
    one with the largest ``d`` (ties: the first listed).

    Parameters
    ----------
    paths : sequence of str or os.PathLike, or None
        Candidate files written by ``scripts/phase_minimisers.py``.

    Returns
    -------
    tuple or None
        ``(runs, meta)``, or ``None`` when no complete file exists (none at all in an installed
        package without ``$STUMPBOOK_RUNS``: then with a :class:`MissingRunWarning`): ``runs``
        as :func:`read_runs` gives them, ``meta`` the file's ``path``, ``command``, ``commit``, ``machine``, ``seconds``, its model
        parameters ``sigma``, ``lam``, ``omega`` (NaN where the file does not record one, as the
        first deciding run did not: such a run matches no page) and ``missing`` (the names of
        those not recorded).
    """
    names = [run_file(n) for n in MINIMISER_NAMES] if paths is None else paths
    best = None
    if not any(Path(x).is_file() for x in names):
        warnings.warn("; ".join(missing_message(Path(x).name, None if paths is None else x)
                                for x in names), MissingRunWarning, stacklevel=2)
    for p in [Path(x) for x in names]:
        if not p.is_file():
            continue
        with np.load(p) as flat:
            ds = [int(d) for d in np.atleast_1d(flat["ds"])]
            command = str(flat["command"])
            want = _requested_ds(command)
            if not ds or (want and not set(want) <= set(ds)):
                continue
            model = ("sigma", "lam", "omega")
            meta = dict(path=str(p), command=command, commit=str(flat["commit"]),
                        machine=str(flat["machine"]), seconds=float(flat["seconds"]),
                        **{k: float(flat[k]) if k in flat else float("nan") for k in model},
                        missing=[k for k in model if k not in flat])
            if best is None or max(ds) > max(best[0]):
                best = (read_runs(flat), meta)
    return best


def read_flat_window(path: str | os.PathLike | None = None) -> dict[str, Any] | None:
    """Chapter 6's recorded flat-window and lowest-minimum run (:data:`FLAT_WINDOW_NAME` under
    :func:`runs_dir`, or ``path``: the store of ``scripts/phase_flat_window.py``), or ``None``.

    Parameters
    ----------
    path : str, os.PathLike or None
        The store (default :data:`FLAT_WINDOW_NAME` under :func:`runs_dir`); ``None`` is returned
        when it is not a file, with a :class:`MissingRunWarning`.

    Returns
    -------
    dict or None
        :func:`stumplib.sweep.readers.landscape_from_store`'s output: ``landscape`` (``{d: the
        layout of stumplib.book.studies.lowest_summary.as_landscape over the seeds done, and "search": every
        seed's lowest-minimum search}``), ``theory``, ``root`` (held-theory outputs, ``None`` where
        not run), ``control`` (``{"theory", "landscape"}`` or ``None``), ``store`` (the manifest:
        parameters, runs, tasks) and ``meta`` (the first run's ``command``, ``commit``,
        ``machine``, the tasks' ``seconds``, the model and window where recorded, and
        ``missing``: the names of those not recorded).
    """
    from stumplib.sweep.readers import landscape_from_store

    p = Path(path) if path is not None else run_file(FLAT_WINDOW_NAME)
    if not p.is_file():
        _warn_missing(FLAT_WINDOW_NAME if path is None else p.name, path)
        return None
    out = landscape_from_store(p)
    keys = ("alpha", "omega", "sigma", "lam", "seed", "gtol", "A", "thetas")
    out["meta"]["missing"] = [k for k in keys if k not in out["meta"]]
    return out


def flat_window_record(path: str | os.PathLike | None = None) -> list[dict[str, str]]:
    """The build record's rows for chapter 6's recorded lowest-minima sweep: the store, its code
    version, its tasks and their time, and each driver run (command, commit, machine, start).

    Parameters
    ----------
    path : str, os.PathLike or None
        The store (default :data:`FLAT_WINDOW_NAME` under :func:`runs_dir`).

    Returns
    -------
    list of dict
        ``{"what", "value"}`` rows; one row saying the run is absent when there is no store.
    """
    with warnings.catch_warnings():  # the row says it
        warnings.simplefilter("ignore", MissingRunWarning)
        rec = read_flat_window(path)
    if rec is None:
        return [{"what": "recorded sweep",
                 "value": f"absent ({missing_message(FLAT_WINDOW_NAME, path)}): chapter 6 "
                          "computes its own"}]
    st = rec["store"]
    rows = [{"what": "store", "value": f"`{FLAT_WINDOW_NAME}` (`{st['kind']}`)"},
            {"what": "code version (`stumplib.core`, `stumplib.phase`)",
             "value": f"`{st['params'].get('code_version', 'not recorded')}`"},
            {"what": "tasks", "value": f"{st['done']} done, {st['failed']} failed; "
                                       f"{float(st['seconds']) / 3600:.1f} core-hours"}]
    for i, r in enumerate(st["runs"], 1):
        what = f"run {i}" if "revalidated" not in r else f"run {i} (revalidation)"
        rows.append({"what": what, "value": f"`{r['command']}`" if "revalidated" not in r
                     else r["command"]})
        rows.append({"what": f"run {i}: commit, start",
                     "value": f"`{str(r.get('commit', ''))[:10]}`, {r.get('started', '?')}"})
    rows.append({"what": "machine", "value": f"`{st['runs'][0].get('machine', '?')}`"})
    return rows


def _requested_seeds(command: str) -> list[int]:
    """The ``--seeds`` values of a recorded command line (empty if none)."""
    m = re.search(r"--seeds((?:\s+\d+)+)", command)
    return [int(v) for v in m.group(1).split()] if m else []


def read_confirm(path: str | os.PathLike | None = None, *,
                 expect: Mapping[str, Any] | None = None,
                 plan: Mapping[int, int] | None = None) -> dict[str, Any]:
    """Chapter 6's confirmatory run (:data:`CONFIRM_NAME` under :func:`runs_dir`, or ``path``),
    read as far as it has got and checked against its pre-registration.

    A store whose recorded parameters differ from ``expect``, or whose command plans other
    dimensions or seeds than ``plan``, is **refused**: its searches are not returned and the
    message names every difference.

    Parameters
    ----------
    path : str, os.PathLike or None
        The store of ``scripts/phase_flat_window.py`` (``None``: :data:`CONFIRM_NAME` under
        :func:`runs_dir`).
    expect : mapping or None
        The parameters the run must have recorded (default :data:`CONFIRM_PARAMETERS`; the page
        adds its model), compared by :func:`parameter_mismatches`.
    plan : mapping of int to int, or None
        Seeds per dimension (default :data:`CONFIRM_PLAN`).

    Returns
    -------
    dict
        ``state`` (``"absent"``, ``"refused"``, ``"partial"`` or ``"complete"``), ``message``
        (one sentence without the file's name: how far it got, or why it is refused), ``done`` and ``planned`` (tasks
        ``d<d>_seed<s>`` of the plan), ``failed`` (tasks recorded as failed), ``seeds`` (``{d:
        seeds done}`` for every planned ``d``), ``searches`` (``{d: search records, seeds
        stacked}`` for each ``d`` with a seed done; empty unless ``partial`` or ``complete``),
        ``mismatch`` (the differences), ``meta`` (the store's :func:`store_meta`, ``None`` when
        absent) and ``name``.
    """
    from stumplib.sweep.readers import landscape_from_store, parse_seed_task
    from stumplib.sweep.store import StoreError

    plan = dict(CONFIRM_PLAN if plan is None else plan)
    expect = dict(CONFIRM_PARAMETERS if expect is None else expect)
    p = Path(path) if path is not None else run_file(CONFIRM_NAME)
    planned = int(sum(plan.values()))
    out: dict[str, Any] = dict(state="absent", done=0, planned=planned, failed=0,
                               seeds={int(d): 0 for d in sorted(plan)}, searches={},
                               mismatch=[], meta=None, name=p.name)
    if not p.is_file():
        out["message"] = f"0 of {planned} tasks done (no store yet)."
        return out
    try:
        rec = landscape_from_store(p)
    except StoreError as e:  # another kind of store, or not a store
        out.update(state="refused", mismatch=[str(e)],
                   message="the store is refused: "
                                   f"{str(e).replace(str(p), 'the file').rstrip('.')}.")
        return out
    st = rec["store"]
    out["meta"] = st
    mismatch = parameter_mismatches(st["params"], expect)
    want = {int(d): int(n) for d, n in plan.items()}
    fmt = (lambda q: ", ".join(f"{n} at d = {d}" for d, n in sorted(q.items(), reverse=True)))
    for i, run in enumerate(st["runs"] or [{}]):  # every driver run planned the same seeds
        command = str(run.get("command", ""))
        ds, ns = _requested_ds(command), _requested_seeds(command)
        ns = ns * len(ds) if len(ns) == 1 else ns
        recorded = dict(zip(ds, ns)) if len(ns) == len(ds) else {}
        if recorded != want:
            mismatch.append(f"run {i + 1} plans seeds {fmt(recorded) or 'none'} "
                            f"(pre-registered: {fmt(want)})")
            break
    out["mismatch"] = mismatch
    if mismatch:
        out["state"] = "refused"
        out["message"] = ("the store is refused: it differs from the pre-registered run ("
                          + "; ".join(mismatch) + ").")
        return out
    land = {d: L for d, L in rec["landscape"].items() if d in plan and "search" in L}
    for d, L in land.items():
        out["seeds"][d] = int(sum(int(s_) < plan[d] for s_ in np.atleast_1d(L["seeds"])))
    out["done"] = int(sum(out["seeds"].values()))
    out["failed"] = sum(1 for t in st["errors"]
                        if (x := parse_seed_task(t)) is not None and x[0] in plan)
    out["searches"] = {d: land[d]["search"] for d in sorted(land)}
    out["state"] = "complete" if out["done"] == planned else "partial"
    failed = f", {out['failed']} failed" if out["failed"] else ""
    out["message"] = f"{out['done']} of {planned} tasks done{failed}."
    return out



def _requested_picks(command: str) -> dict[int, tuple[int, ...]]:
    """The ``--pick D:S,S`` values of a recorded command line (empty if none)."""
    m = re.search(r"--pick((?:\s+\d+:[\d,]+)+)", command)
    out: dict[int, tuple[int, ...]] = {}
    for item in (m.group(1).split() if m else []):
        d, _, ss = item.partition(":")
        out[int(d)] = tuple(int(x) for x in ss.split(","))
    return out


def read_bias(path: str | os.PathLike | None = None, *,
              expect: Mapping[str, Any] | None = None,
              picks: Mapping[int, Sequence[int]] | None = None) -> dict[str, Any]:
    """Chapter 6's search-bias study (:data:`BIAS_NAME` under :func:`runs_dir`, or ``path``),
    read as far as it has got and checked against its pre-registration
    (``scripts/PHASE_BIAS.md``): a store with other parameters or other picked seeds is refused.

    Parameters
    ----------
    path : str, os.PathLike or None
        The store of ``scripts/phase_flat_window.py --pick ...``.
    expect : mapping or None
        The parameters it must have recorded (default :data:`BIAS_PARAMETERS`; the page adds its
        model).
    picks : mapping of int to sequence of int, or None
        Seeds per dimension (default :data:`BIAS_PICKS`).

    Returns
    -------
    dict
        ``state`` (``"absent"``, ``"refused"``, ``"partial"`` or ``"complete"``), ``message``
        (one sentence), ``done``, ``planned``, ``seeds`` (``{d: seeds done}``), ``searches``
        (``{d: search records, seeds stacked}`` for each ``d`` with a seed done), ``picks``
        (``{d: seeds planned}``), ``mismatch``.
    """
    from stumplib.sweep.readers import landscape_from_store
    from stumplib.sweep.store import StoreError

    want = {int(d): tuple(int(s) for s in v) for d, v in (BIAS_PICKS if picks is None
                                                          else picks).items()}
    expect = dict(BIAS_PARAMETERS if expect is None else expect)
    p = Path(path) if path is not None else run_file(BIAS_NAME)
    planned = sum(len(v) for v in want.values())
    out: dict[str, Any] = dict(state="absent", done=0, planned=planned, searches={},
                               seeds={d: 0 for d in sorted(want)}, picks=want, mismatch=[],
                               name=p.name)
    if not p.is_file():
        out["message"] = f"0 of {planned} tasks done (no store yet)."
        return out
    try:
        rec = landscape_from_store(p)
    except StoreError as e:
        out.update(state="refused", mismatch=[str(e)], message="the store is refused: "
                   f"{str(e).replace(str(p), 'the file').rstrip('.')}.")
        return out
    st = rec["store"]
    mismatch = parameter_mismatches(st["params"], expect)
    for i, run in enumerate(st["runs"] or [{}]):
        got = _requested_picks(str(run.get("command", "")))
        if got != want:
            mismatch.append(f"run {i + 1} picks {got or 'no seeds'} (pre-registered: {want})")
            break
    if mismatch:
        out.update(state="refused", mismatch=mismatch, message="the store is refused: it "
                   "differs from the pre-registered study (" + "; ".join(mismatch) + ").")
        return out
    for d, L in rec["landscape"].items():
        if d in want and "search" in L:
            out["searches"][d] = L["search"]
            out["seeds"][d] = int(np.size(L["seeds"]))
    out["done"] = int(sum(out["seeds"].values()))
    out["state"] = "complete" if out["done"] == planned else "partial"
    out["message"] = (f"{out['done']} of {planned} tasks done ("
                      + ", ".join(f"{out['seeds'][d]} of {len(want[d])} at d = {d}"
                                  for d in sorted(want)) + ").")
    return out


def read_branch_end(expect: Mapping[str, Any],
                    path: str | os.PathLike | None = None) -> dict[str, Any]:
    """Chapter 6's recorded sweeps of the branch's fitted end (:data:`BRANCH_END_NAME` under
    :func:`runs_dir`, or ``path``), returned only where the store was made with exactly the
    arguments the page would use.

    Parameters
    ----------
    expect : mapping
        The page's arguments of :func:`stumplib.book.studies.curves.branch_end_fit`: ``alphas``,
        ``init`` (``[q, m, V, theta]``), ``log2_points``, ``n_scramblings``, ``replicates``,
        ``max_updates``, ``omega``, ``sigma``, ``lam``, ``A``, ``seed``; numbers compared with
        relative tolerance 1e-9 (:func:`parameter_mismatches`).
    path : str, os.PathLike or None
        The store (``None``: :data:`BRANCH_END_NAME` under :func:`runs_dir`).

    Returns
    -------
    dict
        ``state``: ``"absent"`` (no file: a :class:`MissingRunWarning`), ``"other"`` (made with
        other arguments or by another version of the code of ``stumplib.core``,
        ``stumplib.phase`` and :mod:`stumplib.book.studies`, listed in ``mismatch``, or not
        complete), or ``"recorded"``;
        ``sweeps`` (the ``replicates`` sweeps in order, or ``None`` unless recorded); ``meta``
        (:func:`stumplib.sweep.readers.store_meta`, with ``commit`` and ``command`` of the first
        driver run; ``None`` when absent); ``mismatch``; ``name``.
    """
    from stumplib.sweep.readers import store_meta
    from stumplib.sweep.store import StoreError, read_store

    p = Path(path) if path is not None else run_file(BRANCH_END_NAME)
    out: dict[str, Any] = dict(state="absent", sweeps=None, meta=None, mismatch=[], name=p.name)
    if not p.is_file():
        _warn_missing(BRANCH_END_NAME, path)
        return out
    try:
        manifest, results = read_store(p)
    except StoreError as e:
        out.update(state="other", mismatch=[str(e).replace(str(p), "the file")])
        return out
    meta = store_meta(manifest)
    first = meta["runs"][0] if meta["runs"] else {}
    meta.update(commit=str(first.get("commit", "not recorded")),
                command=str(first.get("command", "not recorded")))
    out["meta"] = meta
    if meta["kind"] != "phase_branch_end":
        out.update(state="other", mismatch=[f"a store of kind {meta['kind']!r}"])
        return out
    mism = parameter_mismatches(meta["params"], expect)
    from stumplib.core.version import code_version

    now, made = code_version("core", "phase", "book/studies"), meta["params"].get("code_version")
    if made != now:  # another solver: its sweeps are not this page's computation
        mism.append(f"made by solver code {made} (this page: {now})")
    want = int(expect.get("replicates", 0))
    ids = [f"sweep{r}" for r in range(want)]
    if not mism and not all(i in results for i in ids):
        mism = [f"{sum(i in results for i in ids)} of {want} sweeps recorded"]
    if mism:
        out.update(state="other", mismatch=mism)
        return out
    out.update(state="recorded", sweeps=[{k: np.asarray(v) for k, v in results[i].items()}
                                         for i in ids])
    return out
