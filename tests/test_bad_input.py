"""Bad input, everywhere: a table-driven test of every public ``stumplib`` function and every
chapter parameter.

Library
    Every public callable (each module's ``__all__``) has a *valid call* in :data:`SPECS`, built with
    huge sizes where the function takes sizes. Each case replaces ONE argument by a bad value (wrong
    type, zero, negative, NaN, inf, out-of-range thresholds, empty grids, unknown choices, unknown
    devices, CUDA where there is none) and asserts a ``ValueError`` whose message names that
    argument, raised in well under a second (so before any of the expensive work the huge sizes
    would cost). :func:`test_every_public_callable_is_covered` fails when a module exports a callable
    that the table does not exercise.

Chapters
    Each chapter's ``parameters`` cell is read with :mod:`ast` (so new parameters are picked up
    automatically). For every parameter, bad values chosen from the type of its default run the
    parameters cell, the override and the chapter's validation cell (the first code cell after the
    parameters) in a subprocess; the error must be a ``ValueError`` naming the parameter. A handful
    of cases per chapter go through papermill itself (``-p``) and must fail in the first cell after
    the injected parameters (``slow``).
"""
from __future__ import annotations

import ast
import importlib
import inspect
import json
import math
import os
import pkgutil
import re
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import torch

import stumplib
from conftest import CHAPTERS, ROOT

NAN, INF = math.nan, math.inf
HAS_CUDA = torch.cuda.is_available()
#: a bad-argument call must fail within this many seconds (the valid calls use huge sizes, whose
#: work would take minutes or fail to allocate; the margin absorbs a busy shared CPU)
FAST_S = 2.0

import matplotlib  # noqa: E402  (imported up front so that no case pays the first-import time)

matplotlib.use("Agg")
import matplotlib.pyplot  # noqa: E402,F401

# --------------------------------------------------------------------------------------------
# bad values by kind of argument: (label, value)
# --------------------------------------------------------------------------------------------
SIZE = [("float", 3.0), ("str", "10"), ("bool", True), ("none", None), ("zero", 0), ("negative", -5),
        ("nan", NAN)]
SEED = [("negative", -1), ("float", 1.5), ("str", "0"), ("nan", NAN)]
REAL = [("nan", NAN), ("inf", INF), ("-inf", -INF), ("str", "1.0"), ("none", None)]
PRIOR_LO = [("nan", NAN), ("inf", INF), ("negative", -0.1), ("above 1", 1.5), ("str", "0.2"),
            ("above tau_hi", 0.9)]
PRIOR_HI = [("nan", NAN), ("inf", INF), ("negative", -0.5), ("above 1", 1.5), ("str", "0.8"),
            ("below tau_lo", 0.1)]
DEVICE = [("unknown", "tpu"), ("int", 3), ("bad index", "cuda:x"), ("none", None)]
if not HAS_CUDA:
    DEVICE += [("cuda absent", "cuda"), ("cuda:0 absent", "cuda:0")]
else:
    DEVICE += [("cuda index out of range", f"cuda:{torch.cuda.device_count()}")]
GRID = [("empty", []), ("str", "1,2,3"), ("none", None), ("bad entry", [1, -2]), ("nan entry", [1.0, NAN])]
CHOICE = [("unknown", "bogus"), ("int", 3), ("none", None)]
PROFILE = CHOICE


def _t(*shape, fill=None):
    t = torch.rand(*shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    if fill is not None:
        t.view(-1)[0] = fill
    return t


def TENSOR(shape):
    """Bad tensors standing in for a float tensor of ``shape``."""
    return [("nan", _t(*shape, fill=NAN)), ("inf", _t(*shape, fill=INF)), ("list", [0.5] * shape[-1]),
            ("none", None)]


BIG_T, BIG_N = 2000, 500  # tensor arguments: large enough that the work would be noticeable
X = _t(BIG_T, BIG_N)
Y = (X >= 0.5).double()
TAU = torch.full((BIG_T,), 0.5, dtype=torch.float64)
HUGE = 10 ** 7  # sizes: HUGE x HUGE float64 would be 800 TB, so nothing may be allocated first


@dataclass
class Spec:
    """A valid call of ``func`` (``args`` bound by name) and the bad values to try per argument.

    ``bad`` maps an argument name to a list of ``(label, value)``. ``names`` optionally overrides the
    word the error message must contain (e.g. ``tau`` for ``x`` in :func:`stumplib.tasks.labels`).
    """

    func: str  # "module.name"
    good: dict[str, Any]
    bad: dict[str, list]
    names: dict[str, str] = field(default_factory=dict)
    expect: type = ValueError
    #: overrides that turn ``good`` into a cheap call (checked to succeed); ``None``: do not run it
    small: dict[str, Any] | None = field(default_factory=dict)


def _specs_core() -> list[Spec]:
    s: list[Spec] = []
    # validation: the checks themselves
    s += [
        Spec("validation.check_int", {"name": "m", "value": 5}, {"value": SIZE}, names={"value": "m"}),
        Spec("validation.check_real", {"name": "lr", "value": 1.0, "low": 0.0, "low_open": True},
             {"value": REAL + [("zero (open end)", 0.0), ("negative", -1.0)]}, names={"value": "lr"}),
        Spec("validation.check_prior", {"tau_lo": 0.2, "tau_hi": 0.8},
             {"tau_lo": PRIOR_LO, "tau_hi": PRIOR_HI}),
        Spec("validation.check_choice", {"name": "branch", "value": "semantic",
                                         "choices": ("semantic", "positional")},
             {"value": CHOICE}, names={"value": "branch"}),
        Spec("validation.check_tensor_finite", {"name": "beta", "value": _t(3)},
             {"value": [("nan", _t(3, fill=NAN)), ("inf", _t(3, fill=-INF)), ("list", [1.0])]},
             names={"value": "beta"}),
        Spec("validation.check_grid", {"name": "m_grid", "values": [10, 100]},
             {"values": GRID}, names={"values": "m_grid"}),
        Spec("validation.as_real_tensor", {"name": "beta", "value": [1.0, 2.0]},
             {"value": [("nan", [1.0, NAN]), ("inf", INF), ("str", "abc"), ("none", None), ("bool", True),
                        ("ragged", [[1.0], [1.0, 2.0]]), ("complex", 1 + 2j)]},
             names={"value": "beta"}),
    ]
    # device / profiles
    s += [
        Spec("device.resolve_device", {"device": "auto"}, {"device": DEVICE}),
        Spec("device.make_generator", {"seed": 0, "device": torch.device("cpu")}, {"seed": SEED}),
        Spec("book.resolve_profile", {"profile": "quick"}, {"profile": PROFILE}),
        Spec("book.setup", {"profile": "smoke", "device": "cpu", "seed": 0},
             {"profile": PROFILE, "device": DEVICE, "seed": SEED}),
    ]
    # tasks
    s += [
        Spec("tasks.sample_thresholds", {"num_tasks": HUGE * HUGE, "tau_lo": 0.2, "tau_hi": 0.8,
                                         "seed": 0, "device": "cpu"},
             {"num_tasks": SIZE, "tau_lo": PRIOR_LO, "tau_hi": PRIOR_HI, "seed": SEED, "device": DEVICE},
             small={"num_tasks": 7}),
        Spec("tasks.sample_contexts", {"tau": TAU, "n": HUGE, "seed": 0},
             {"tau": TENSOR((BIG_T,)) + [("above 1", torch.full((3,), 1.5, dtype=torch.float64)),
                                          ("negative", torch.full((3,), -0.1, dtype=torch.float64))],
              "n": SIZE, "seed": SEED}, small={"n": 3}),
        Spec("tasks.sample_tasks", {"m": HUGE, "n": HUGE, "tau_lo": 0.2, "tau_hi": 0.8, "seed": 0,
                                    "device": "cpu"},
             {"m": SIZE, "n": SIZE, "tau_lo": PRIOR_LO, "tau_hi": PRIOR_HI, "seed": SEED,
              "device": DEVICE}, small={"m": 4, "n": 5}),
        Spec("tasks.labels", {"x": X, "tau": TAU},
             {"x": TENSOR((BIG_T, BIG_N)), "tau": TENSOR((BIG_T,))}),
        Spec("tasks.reflect", {"x": X, "y": Y}, {"x": TENSOR((BIG_T, BIG_N)), "y": TENSOR((BIG_T, BIG_N))}),
    ]
    # model
    for f in ("attention_weights", "estimate", "estimate_and_grad"):
        s.append(Spec(f"model.{f}", {"x": X, "y": Y, "beta": 50.0, "b": 45.0, "mask": None},
                      {"x": TENSOR((BIG_T, BIG_N)) + [("empty context", torch.empty(BIG_T, 0))],
                       "y": TENSOR((BIG_T, BIG_N)),
                       "beta": REAL, "b": REAL,
                       "mask": [("float mask", torch.ones(BIG_T, BIG_N)),
                                ("all masked", torch.zeros(BIG_T, BIG_N, dtype=torch.bool))]}))
    # population
    for f in ("population_moments", "population_estimate", "population_error"):
        s.append(Spec(f"population.{f}", {"tau": torch.linspace(0.2, 0.8, 10 ** 6), "beta": 50.0, "b": 45.0},
                      {"tau": [("nan", _t(3, fill=NAN)), ("above 1", 1.5), ("negative", -0.2),
                               ("str", "0.5")],
                       "beta": REAL, "b": REAL}, small={"tau": torch.linspace(0.2, 0.8, 11)}))
    big_beta = torch.full((10 ** 5,), 50.0, dtype=torch.float64)
    s += [
        Spec("population.prior_quadrature", {"beta": big_beta, "b": big_beta * 0.9, "tau_lo": 0.2,
                                             "tau_hi": 0.8, "order": 8, "uniform_panels": 8},
             {"beta": [("nan", _t(3, fill=NAN)), ("float", 50.0), ("none", None)],
              "b": [("inf", _t(3, fill=INF)), ("none", None)],
              "tau_lo": PRIOR_LO, "tau_hi": PRIOR_HI,
              "order": SIZE + [("too many nodes", 1000)], "uniform_panels": SIZE},
             small={"beta": big_beta[:3], "b": big_beta[:3] * 0.9}),
    ]
    for f in ("population_loss", "population_loss_and_grad"):
        s.append(Spec(f"population.{f}", {"beta": big_beta, "b": big_beta * 0.9, "tau_lo": 0.2,
                                          "tau_hi": 0.8, "order": 8},
                      {"beta": REAL, "b": REAL, "tau_lo": PRIOR_LO, "tau_hi": PRIOR_HI,
                       "order": SIZE}, small={"beta": big_beta[:3], "b": big_beta[:3] * 0.9}))
    # baselines
    for f in ("min_positive", "max_negative", "midpoint", "erm_stump"):
        s.append(Spec(f"baselines.{f}", {"x": X, "y": Y},
                      {"x": TENSOR((BIG_T, BIG_N)) + [("empty context", torch.empty(BIG_T, 0)),
                                                      ("shape mismatch", X[:, :3])],
                       "y": TENSOR((BIG_T, BIG_N))}))
    s.append(Spec("baselines.bayes_posterior_mean", {"x": X, "y": Y, "tau_lo": 0.2, "tau_hi": 0.8},
                  {"x": TENSOR((BIG_T, BIG_N)), "y": TENSOR((BIG_T, BIG_N)),
                   "tau_lo": PRIOR_LO, "tau_hi": PRIOR_HI}))
    # fitting
    xs = np.logspace(0, 6, 200_000)
    s.append(Spec("stats.fit_power_law", {"x": xs, "y": xs ** 0.25, "n_boot": 100_000, "level": 0.95,
                                            "seed": 0, "weights": None},
                  {"x": [("nan", np.r_[NAN, xs[1:]]), ("negative", -xs), ("too few", xs[:2]),
                         ("constant", np.ones_like(xs)), ("length mismatch", xs[:10])],
                   "y": [("zero", np.zeros_like(xs)), ("inf", np.r_[INF, xs[1:]])],
                   "n_boot": SIZE + [("too few", 10)],
                   "level": REAL + [("zero", 0.0), ("one", 1.0), ("percent", 95)],
                   "seed": SEED,
                   "weights": [("negative", -np.ones_like(xs)), ("nan", np.full_like(xs, NAN)),
                               ("length mismatch", np.ones(3))]},
                  small={"x": xs[::20_000], "y": xs[::20_000] ** 0.25, "n_boot": 200}))
    # results_io
    s += [
        Spec("results_io.save_results", {"path": "/nonexistent-dir/never-written.npz",
                                         "arrays": {"a": np.zeros(3)}, "config": {"m": 1}},
             {"path": [("wrong suffix", "/tmp/results.txt"), ("none", None), ("int", 3)],
              "arrays": [("reserved key", {"__config__": np.zeros(1)}), ("not a dict", [1, 2]),
                         ("none", None)],
              "config": [("not a dict", [1, 2]), ("none", None)]}, small=None),
        Spec("results_io.load_results", {"path": "/nonexistent-dir/never-written.npz", "config": {"m": 1}},
             {"path": [("wrong suffix", "/tmp/results.txt"), ("none", None), ("int", 3)],
              "config": [("not a dict", [1, 2]), ("none", None)]}),
        Spec("results_io.config_key", {"config": {"m": 1}},
             {"config": [("not a dict", [1, 2]), ("none", None), ("str", "m=1")]}),
    ]
    # style
    s += [
        Spec("style.figure", {"ncols": 1, "nrows": 1, "width": 6.4, "height": 4.0},
             {"ncols": SIZE, "nrows": SIZE,
              "width": REAL + [("zero", 0.0), ("negative", -3.0)],
              "height": REAL + [("zero", 0.0), ("negative", -3.0)]}),
        Spec("style.label_panels", {"axes": None},
             {"axes": [("none", None), ("str", "abc"), ("int", 3)]}, small=None),
    ]
    return s


#: public names that are not functions taking user input (constants, result containers, no-arg
#: calls) and why they are not in the table
EXEMPT = {
    "style.use": "takes no arguments",
    "stats.PowerLawFit": "result container built by fit_power_law, not user input",
    "trainer.TrainResult": "result container built by train_gd / TrainResult.load",
    "trainer.TrainingDiverged": "an exception class",
}


def _module_specs() -> list[Spec]:
    """Specs of the other helpers' modules, added when those modules import (they may change)."""
    s: list[Spec] = []
    try:
        from stumplib import trainer
    except Exception:  # pragma: no cover - module absent or broken: its own tests say so
        trainer = None
    if trainer is not None and hasattr(trainer, "RunConfig"):
        RC = trainer.RunConfig
        s.append(Spec("trainer.RunConfig", {"m": 8, "n": 8, "seed": 0, "lr": 1e3, "beta0": 20.0,
                                            "b0": 20.0, "tau_lo": 0.2, "tau_hi": 0.8},
                      {"m": SIZE, "n": SIZE, "seed": SEED,
                       "lr": REAL + [("zero", 0.0), ("negative", -1.0)],
                       "beta0": REAL, "b0": REAL, "tau_lo": PRIOR_LO, "tau_hi": PRIOR_HI}))
        cfgs = [RC(m=HUGE, n=HUGE)]
        small_cfgs = [RC(m=5, n=5)]
        if hasattr(trainer, "train_gd"):
            s.append(Spec("trainer.train_gd", {"configs": cfgs, "steps": 10 ** 9, "n_records": 60,
                                               "device": "cpu", "progress": False},
                          {"configs": [("empty", []), ("none", None), ("not configs", [1, 2])],
                           "steps": SIZE, "n_records": SIZE, "device": DEVICE,
                           "progress": [("str", "yes")]},
                          small={"configs": small_cfgs, "steps": 3}))
        if hasattr(trainer, "make_corpora"):
            s.append(Spec("trainer.make_corpora", {"configs": cfgs, "device": "cpu"},
                          {"configs": [("empty", []), ("none", None), ("not configs", [1, 2])],
                           "device": DEVICE}, small={"configs": small_cfgs}))
        if hasattr(trainer, "record_steps"):
            s.append(Spec("trainer.record_steps", {"steps": 10 ** 12, "n_records": 60},
                          {"steps": SIZE, "n_records": SIZE}, small={"steps": 100}))
        if hasattr(trainer, "corpus_loss_and_grad"):
            corp = trainer.make_corpora([RC(m=4, n=6), RC(m=3, n=5, seed=1)], device="cpu")
            s.append(Spec("trainer.corpus_loss_and_grad",
                          {"beta": torch.full((2,), 20.0), "b": torch.full((2,), 20.0), "corpora": corp},
                          {"beta": [("nan", torch.tensor([NAN, 20.0])), ("wrong length", torch.ones(5))],
                           "b": [("inf", torch.tensor([INF, 20.0]))],
                           "corpora": [("none", None), ("empty dict", {})]}))
    return s


def _all_specs() -> list[Spec]:
    return _specs_core() + _module_specs()


def _resolve(qual: str) -> Callable:
    mod, name = qual.rsplit(".", 1)
    return getattr(importlib.import_module(f"stumplib.{mod}"), name)


def _cases():
    out = []
    for spec in _all_specs():
        for arg, values in spec.bad.items():
            for label, value in values:
                out.append(pytest.param(spec, arg, value, id=f"{spec.func}-{arg}-{label}"))
    return out


CASES = _cases()


def _message_names(msg: str, name: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", msg) is not None


@pytest.mark.parametrize("spec, arg, value", CASES)
def test_bad_argument_raises_named_valueerror_fast(spec: Spec, arg: str, value: Any):
    func = _resolve(spec.func)
    kwargs = dict(spec.good)
    kwargs[arg] = value
    start = time.perf_counter()
    with pytest.raises(spec.expect) as info:
        func(**kwargs)
    elapsed = time.perf_counter() - start
    name = spec.names.get(arg, arg)
    assert _message_names(str(info.value), name), (
        f"{spec.func}({arg}={value!r}) raised {type(info.value).__name__}: {info.value!s} "
        f"-- the message must name {name!r}")
    assert elapsed < FAST_S, f"{spec.func}({arg}=...) took {elapsed:.2f} s before rejecting the input"


def test_valid_calls_are_valid_on_small_sizes():
    """The table's good calls are really good: shrunk to small sizes they run without error (so a
    bad-value case fails because of the bad value, not because the rest of the call is wrong)."""
    for spec in _all_specs():
        if spec.small is None:
            continue  # good call chosen to be harmless rather than runnable (paths, axes)
        _resolve(spec.func)(**{**spec.good, **spec.small})


#: modules whose every public callable has a hand-written row in the table; the others are
#: covered by the name-driven cases of :func:`test_named_parameters_of_every_module`
TABLE_MODULES = ("validation", "device", "book", "tasks", "model", "population", "baselines",
                 "stats", "results_io", "style", "trainer")


def test_every_public_callable_is_covered():
    """Each public callable of the core modules is exercised by the table (or exempt)."""
    covered = {s.func for s in _all_specs()} | set(EXEMPT)
    missing = []
    for info in pkgutil.walk_packages(stumplib.__path__, "stumplib."):
        if info.name[len("stumplib."):] not in TABLE_MODULES:
            continue
        try:
            mod = importlib.import_module(info.name)
        except Exception as exc:  # a module that does not import is a failure of its own
            missing.append(f"{info.name} (import failed: {exc})")
            continue
        rel = info.name[len("stumplib."):]
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            if not callable(obj) or isinstance(obj, (dict, torch.dtype)):
                continue
            if getattr(obj, "__module__", info.name) != info.name and not inspect.isclass(obj):
                continue  # re-export: covered under its home module
            if f"{rel}.{name}" not in covered:
                missing.append(f"{rel}.{name}")
    assert not missing, f"public callables with no bad-input case: {missing}"


def test_case_count_is_substantial():
    assert len(CASES) >= 250, len(CASES)


# --------------------------------------------------------------------------------------------
# a diverging step size, and CUDA asked for where there is none
# --------------------------------------------------------------------------------------------
def test_diverging_step_size_stops_with_named_error():
    trainer = pytest.importorskip("stumplib.trainer")
    if not hasattr(trainer, "train_gd"):
        pytest.skip("stumplib.trainer.train_gd not there yet")
    cfg = trainer.RunConfig(m=64, n=64, lr=1e12)
    start = time.perf_counter()
    with pytest.raises(trainer.TrainingDiverged) as info:
        trainer.train_gd([cfg], steps=5000, device="cpu", progress=False, check_every=16)
    msg = str(info.value)
    assert "lr" in msg or "step size" in msg, msg
    assert re.search(r"1(\.0+)?e\+?12", msg), f"message should give the step size: {msg}"
    assert time.perf_counter() - start < 10


@pytest.mark.skipif(HAS_CUDA, reason="this machine has CUDA; the 'absent CUDA' case does not apply")
def test_cuda_requested_without_cuda_says_so():
    with pytest.raises(ValueError, match="CUDA is not available"):
        stumplib.device.resolve_device("cuda")


# --------------------------------------------------------------------------------------------
# chapters: every parameter, read from the parameters cell
# --------------------------------------------------------------------------------------------
def _code_cells(path: Path) -> list[dict]:
    nb = json.loads(path.read_text())
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def chapter_parameters(path: Path) -> dict[str, Any]:
    """Names and default values of a chapter's ``parameters`` cell (in order)."""
    code = _code_cells(path)
    src = "".join(code[0]["source"]) if code else ""
    env = {"os": os}
    out: dict[str, Any] = {}
    for node in ast.parse(src).body:
        if not isinstance(node, ast.Assign):
            continue
        value = eval(compile(ast.Expression(node.value), "<parameters>", "eval"), env)  # noqa: S307
        for tgt in node.targets:
            if isinstance(tgt, ast.Name):
                out[tgt.id] = value
            elif isinstance(tgt, ast.Tuple) and all(isinstance(e, ast.Name) for e in tgt.elts):
                for e, v in zip(tgt.elts, value):
                    out[e.id] = v
    return out


#: parameters whose bad values are generated specially (shared by every chapter)
SHARED_BAD = {
    "profile": [("unknown", "bogus"), ("int", 3)],
    "device": [("unknown", "tpu"), ("int", 0)] + ([("cuda absent", "cuda")] if not HAS_CUDA else []),
    "seed": [("negative", -1), ("float", 0.5), ("str", "0")],
}


def bad_values_for(name: str, default: Any) -> list[tuple[str, Any]]:
    """Bad values for a chapter parameter, chosen from the type of its default."""
    if name in SHARED_BAD:
        return SHARED_BAD[name]
    if name in ("tau_lo",):
        return [("negative", -0.1), ("above tau_hi", 0.95), ("nan", NAN)]
    if name in ("tau_hi",):
        return [("above 1", 1.5), ("below tau_lo", 0.05)]
    if isinstance(default, bool):
        return [("str", "maybe"), ("int", 2)]
    if isinstance(default, int):
        return [("str", "many"), ("negative", -7)]
    if isinstance(default, float):
        return [("str", "x"), ("nan", NAN), ("inf", INF)]
    if isinstance(default, str):
        return [("unknown", "bogus-choice"), ("int", 3)]
    if isinstance(default, (list, tuple)):
        if len(default) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in default):
            return [("empty", []), ("str", "abc"), ("negative entry", [type(default[0])(-1)] + list(default[1:])),
                    ("nan entry", [NAN] + list(default[1:]))]
        return [("empty", []), ("str", "abc")]
    if default is None:
        return [("str", "bogus"), ("negative", -3)]
    return [("str", "bogus")]


def _chapter_cases(limit_per_chapter: int | None = None):
    out = []
    for path in CHAPTERS:
        try:
            params = chapter_parameters(path)
        except Exception as exc:  # noqa: BLE001 - reported by the test
            out.append(pytest.param(path, None, None, None, id=f"{path.stem}-unparsable-{exc}"))
            continue
        for name, default in params.items():
            if name == "os":
                continue
            for label, value in bad_values_for(name, default):
                out.append(pytest.param(path, name, label, value, id=f"{path.stem}-{name}-{label}"))
    return out


CHAPTER_CASES = _chapter_cases()

# The driver runs in a fresh interpreter per chapter: for each case it executes the parameters
# cell, the override, and the validation cell, and records the exception.
_DRIVER = textwrap.dedent(r"""
    import json, os, signal, sys, traceback, math
    os.environ.pop("STUMPBOOK_PROFILE", None)
    import matplotlib; matplotlib.use("Agg")
    req = json.load(sys.stdin)
    os.chdir(req["cwd"])
    def on_alarm(*a):
        raise TimeoutError("validation cell ran past the time limit: the bad value was not rejected up front")
    signal.signal(signal.SIGALRM, on_alarm)
    results = []
    for case in req["cases"]:
        ns = {}
        t0 = __import__("time").perf_counter()
        try:
            exec(req["params_src"], ns)
            exec(case["override"], ns)
            signal.alarm(req["timeout"])
            exec(req["validation_src"], ns)
            signal.alarm(0)
            results.append({"ok": True, "elapsed": __import__("time").perf_counter() - t0})
        except BaseException as exc:
            signal.alarm(0)
            results.append({"ok": False, "type": type(exc).__name__, "msg": str(exc),
                            "elapsed": __import__("time").perf_counter() - t0})
        finally:
            try:
                import matplotlib.pyplot as plt; plt.close("all")
            except Exception:
                pass
    json.dump(results, sys.stdout)
""")

_chapter_results: dict[Path, dict[str, dict]] = {}


def _py_literal(value: Any) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "float('nan')"
    if isinstance(value, float) and math.isinf(value):
        return "float('inf')" if value > 0 else "float('-inf')"
    if isinstance(value, list):
        return "[" + ", ".join(_py_literal(v) for v in value) + "]"
    return repr(value)


def _run_chapter_validation(path: Path) -> dict[str, dict]:
    """Run every bad-parameter case of one chapter in one subprocess (cached per session)."""
    if path in _chapter_results:
        return _chapter_results[path]
    code = _code_cells(path)
    cases = [p.values for p in CHAPTER_CASES if p.values[0] == path and p.values[1] is not None]
    req = {
        "cwd": str(path.parent),
        "params_src": "".join(code[0]["source"]),
        "validation_src": "".join(code[1]["source"]) if len(code) > 1 else "",
        "timeout": 20,
        "cases": [{"override": f"{name} = {_py_literal(value)}"} for _, name, _, value in cases],
    }
    proc = subprocess.run([sys.executable, "-c", _DRIVER], input=json.dumps(req), text=True,
                          capture_output=True, timeout=60 + 25 * len(cases),
                          env={**os.environ, "MPLBACKEND": "Agg"})
    if proc.returncode != 0:
        raise RuntimeError(f"driver failed for {path.name}:\n{proc.stderr[-3000:]}")
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    _chapter_results[path] = {f"{name}-{label}": r for (_, name, label, _), r in zip(cases, res)}
    return _chapter_results[path]


def _chapter_name_pattern(name: str) -> str:
    """The message must name the parameter; ``profile`` may also be named through the env var."""
    return name


@pytest.mark.slow
@pytest.mark.parametrize("path, name, label, value", CHAPTER_CASES)
def test_chapter_parameter_rejected_in_validation_cell(path: Path, name: str, label: str, value: Any):
    if name is None:
        pytest.fail(f"{path.name}: could not read the parameters cell: {label}")
    r = _run_chapter_validation(path)[f"{name}-{label}"]
    assert not r["ok"], (f"{path.name}: {name} = {value!r} was accepted by the validation cell "
                         f"(the first code cell after the parameters)")
    assert r["type"] == "ValueError", f"{path.name}: {name} = {value!r} raised {r['type']}: {r['msg']}"
    assert _message_names(r["msg"], name), f"{path.name}: {name} = {value!r}: message does not name it: {r['msg']}"


def test_chapter_parameter_cases_count():
    per = {p.stem: sum(1 for c in CHAPTER_CASES if c.values[0] == p) for p in CHAPTERS}
    assert all(v >= 5 for v in per.values()), per


# --------------------------------------------------------------------------------------------
# through papermill itself (slow: a kernel per case)
# --------------------------------------------------------------------------------------------
def _papermill_cases():
    """Per chapter: an unknown profile, an unknown device, and the first chapter-specific
    parameter with its first bad value (a wrong type)."""
    out = []
    for path in CHAPTERS:
        out.append(pytest.param(path, "profile", "bogus", id=f"{path.stem}-profile"))
        out.append(pytest.param(path, "device", "tpu", id=f"{path.stem}-device"))
        try:
            params = chapter_parameters(path)
        except Exception:  # noqa: BLE001 - reported by the validation-cell test
            continue
        own = [k for k in params if k not in ("os", "profile", "device", "seed")]
        if own:
            name = own[0]
            label, value = bad_values_for(name, params[name])[0]
            out.append(pytest.param(path, name, value, id=f"{path.stem}-{name}-{label}"))
    return out


def _papermill_fail(path: Path, parameters: dict, tmp_path: Path, env_profile: str | None = None):
    pm = pytest.importorskip("papermill")
    out = tmp_path / path.name
    old = os.environ.get("STUMPBOOK_PROFILE")
    if env_profile is not None:
        os.environ["STUMPBOOK_PROFILE"] = env_profile
    try:
        with pytest.raises(pm.PapermillExecutionError) as info:
            pm.execute_notebook(str(path), str(out), parameters=parameters, cwd=str(path.parent),
                                kernel_name="python3", progress_bar=False,
                                execution_timeout=120)
    finally:
        if env_profile is not None:
            if old is None:
                os.environ.pop("STUMPBOOK_PROFILE", None)
            else:
                os.environ["STUMPBOOK_PROFILE"] = old
    nb = json.loads(out.read_text())
    cells = nb["cells"]
    tags = [c.get("metadata", {}).get("tags", []) for c in cells]
    anchor = next((i for i, t in enumerate(tags) if "injected-parameters" in t), None)
    if anchor is None:
        anchor = next(i for i, t in enumerate(tags) if "parameters" in t)
    first_after = next(i for i in range(anchor + 1, len(cells)) if cells[i]["cell_type"] == "code")
    failing = [i for i, c in enumerate(cells) if c["cell_type"] == "code"
               and any(o.get("output_type") == "error" for o in c.get("outputs", []))]
    return info.value, first_after, failing


@pytest.mark.slow
@pytest.mark.parametrize("path, name, value", _papermill_cases())
def test_bad_papermill_parameter_fails_first_cell(path: Path, name: str, value: Any, tmp_path: Path):
    params = {"profile": "smoke", "device": "cpu"}
    params[name] = value
    err, first_after, failing = _papermill_fail(path, params, tmp_path)
    assert err.ename == "ValueError", f"{err.ename}: {err.evalue}"
    assert _message_names(err.evalue, name), err.evalue
    assert failing == [first_after], f"error in cells {failing}, expected in cell {first_after}"


@pytest.mark.slow
@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_bogus_profile_environment_variable(path: Path, tmp_path: Path):
    err, first_after, failing = _papermill_fail(path, {"device": "cpu"}, tmp_path, env_profile="bogus")
    assert err.ename == "ValueError"
    assert "STUMPBOOK_PROFILE" in err.evalue and "bogus" in err.evalue, err.evalue
    assert failing == [first_after]


# --------------------------------------------------------------------------------------------
# the other modules: name-driven cases (a parameter's name says what a bad value is)
# --------------------------------------------------------------------------------------------
#: valid values for required arguments, by name (small: if a bad value slips through, the call
#: must still end quickly and fail the test rather than hang it)
VALID_BY_NAME: dict[str, Any] = {
    "m": 8, "n": 8, "N": 16, "n_corpora": 4, "n_tau": 11, "n_seeds": 2, "steps": 5, "m_fixed": 8,
    "n_fixed": 8, "n_ctx": 16, "beta": 50.0, "b": 45.0, "beta0": 50.0, "b0": 45.0, "lr": 100.0,
    "t_max": 10.0, "betas": np.array([10.0, 100.0]), "alpha": 1.0, "omega": 0.3,
    "shapes": [(8, 8)], "ms": [8], "ns": [8], "m_values": [8, 16], "n_values": [8, 16],
    "N_grid": [8, 16], "c_grid": [0.5, 0.9], "log10_beta_grid": [1.0, 2.0], "tau_hi": 0.8,
    "thetas": [0.05, 0.06],
}
SIZE_NAMES = {"m", "n", "N", "n_corpora", "n_tau", "n_seeds", "steps", "n_records", "n_ctx", "n_boot",
              "n_windows", "n_nodes", "max_iter", "per_octave", "n_grid", "iters", "edge_points",
              "m_fixed", "n_fixed", "log2_points"}
POSITIVE_REAL_NAMES = {"lr", "t_max", "sigma", "rtol", "atol", "t_first", "beta_max", "beta_from",
                       "beta_to", "edge_step", "width", "separation", "top_factor", "h_rel", "rel_step"}
ANY_REAL_NAMES = {"beta", "b", "beta0", "b0"}
CHOICE_NAMES = {"method", "branch", "stat", "which", "grouping", "rule", "on_diverge"}


def _bad_by_name(name: str) -> list[tuple[str, Any]]:
    if name in SIZE_NAMES:
        return [("zero", 0), ("negative", -3), ("float", 2.5), ("str", "8")]
    if name == "seed":
        return [("negative", -1), ("float", 1.5)]
    if name == "device":
        return [("unknown", "tpu")] + ([("cuda absent", "cuda")] if not HAS_CUDA else [])
    if name == "tau_lo":
        return [("negative", -0.1), ("nan", NAN)]
    if name == "tau_hi":
        return [("above 1", 1.5), ("nan", NAN)]
    if name in POSITIVE_REAL_NAMES:
        return [("nan", NAN), ("inf", INF), ("negative", -1.0), ("str", "x")]
    if name in ANY_REAL_NAMES:
        return [("nan", NAN), ("inf", INF), ("str", "x")]
    if name in ("omega",):
        return [("nan", NAN), ("above 1", 1.5), ("negative", -0.1)]
    if name in ("alpha", "lam"):
        return [("nan", NAN), ("negative", -1.0)]
    if name == "level":
        return [("nan", NAN), ("negative", -1.0)]
    if name in CHOICE_NAMES:
        return [("unknown", "bogus")]
    if name == "progress":
        return [("str", "yes")]
    if name in ("shapes", "ms", "ns", "m_values", "n_values", "N_grid", "c_grid", "log10_beta_grid", "betas",
                "thetas"):
        return [("empty", [])]
    return []


def _named_cases():
    out, skipped = [], []
    for info in pkgutil.walk_packages(stumplib.__path__, "stumplib."):
        rel = info.name[len("stumplib."):]
        if rel.split(".")[0] in TABLE_MODULES:
            continue
        try:
            mod = importlib.import_module(info.name)
        except Exception:  # noqa: BLE001 - the module's own tests report it
            continue
        for fname in getattr(mod, "__all__", []):
            func = getattr(mod, fname)
            if not callable(func) or (inspect.isclass(func) and issubclass(func, BaseException)):
                continue
            if getattr(func, "__module__", info.name) != info.name:
                continue
            try:
                sig = inspect.signature(func)
            except (TypeError, ValueError):
                continue
            good, ok = {}, True
            for p in sig.parameters.values():
                if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                    continue
                if p.default is p.empty:
                    if p.name not in VALID_BY_NAME:
                        ok = False
                        break
                    good[p.name] = VALID_BY_NAME[p.name]
            if not ok:
                skipped.append(f"{rel}.{fname}")
                continue
            for p in sig.parameters.values():
                for label, value in _bad_by_name(p.name):
                    out.append(pytest.param(f"{rel}.{fname}", good, p.name, value,
                                            id=f"{rel}.{fname}-{p.name}-{label}"))
    return out, skipped


NAMED_CASES, NAMED_SKIPPED = _named_cases()


def _alarm(*_):
    raise TimeoutError("the call ran past 10 s: the bad value was not rejected up front")


@pytest.mark.parametrize("qual, good, arg, value", NAMED_CASES)
def test_named_parameters_of_every_module(qual: str, good: dict, arg: str, value: Any):
    import signal

    func = _resolve(qual)
    kwargs = {**good, arg: value}
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(10)
    start = time.perf_counter()
    try:
        with pytest.raises(ValueError) as info:
            func(**kwargs)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert _message_names(str(info.value), arg), (
        f"{qual}({arg}={value!r}) raised ValueError without naming {arg!r}: {info.value}")
    assert time.perf_counter() - start < 5.0
