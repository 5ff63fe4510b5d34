"""Bad input at the entry points a user calls: a ``ValueError`` whose message names the parameter.

The ONE bad-input table of the project (every module's rows, whoever owns the module): the chapter
services (``book.start``, ``book.settings``, ``book.resolve_profile``), devices,
the task samplers, the estimator, the population loss, the baselines, the flows, the trainer, the
frozen-estimator evaluations and staged training, the certified scales, the phase model's state evolution, the boundary
profiles and the power-law fit. Internal helpers are not checked (they receive checked values).
Chapter parameters are checked through papermill in ``tests/test_notebooks.py``.
"""
from __future__ import annotations

import math

import pytest
import torch

NAN, INF = math.nan, math.inf
HAS_CUDA = torch.cuda.is_available()


def _x(C=4, N=6):
    return torch.rand(C, N, generator=torch.Generator().manual_seed(0), dtype=torch.float64)


# -------------------------------------------------------------------------------- chapter services

def _start(**kw):
    from stumplib import book
    table = {p: {"n_ctx": 10} for p in book.PROFILES}
    return book.start(**{"profile": "smoke", "device": "cpu", "seed": 0, "table": table, **kw})


def _resolve_profile(**kw):
    from stumplib.book import resolve_profile
    return resolve_profile(**{"profile": "quick", **kw})


def _resolve_device(**kw):
    from stumplib.device import resolve_device
    return resolve_device(**{"device": "cpu", **kw})


def _settings(**kw):
    from stumplib import book
    table = {p: {"n_ctx": 10} for p in book.PROFILES}
    args = {"profile": "smoke", **kw}
    return book.settings(args.pop("profile"), table, **args)


# ------------------------------------------------------------------------------------- library
def _sample_thresholds(**kw):
    from stumplib.tasks import sample_thresholds
    return sample_thresholds(**{"num_tasks": 5, "tau_lo": 0.2, "tau_hi": 0.8, "seed": 0, "device": "cpu", **kw})


def _sample_contexts(**kw):
    from stumplib.tasks import sample_contexts
    return sample_contexts(**{"tau": torch.full((3,), 0.5, dtype=torch.float64), "n": 8, "seed": 0, **kw})


def _sample_tasks(**kw):
    from stumplib.tasks import sample_tasks
    return sample_tasks(**{"m": 4, "n": 8, "tau_lo": 0.2, "tau_hi": 0.8, "seed": 0, **kw})


def _estimate(**kw):
    from stumplib.model import estimate
    x = _x()
    return estimate(**{"x": x, "y": (x >= 0.5).double(), "beta": 10.0, "b": 9.0, **kw})


def _population(**kw):
    from stumplib.population import population_loss_and_grad
    return population_loss_and_grad(**{"beta": 10.0, "b": 9.0, "tau_lo": 0.2, "tau_hi": 0.8, **kw})


def _population_loss(**kw):
    from stumplib.population import population_loss
    return population_loss(**{"beta": 10.0, "b": 9.0, "tau_lo": 0.2, "tau_hi": 0.8, **kw})


def _bayes(**kw):
    from stumplib.baselines import bayes_posterior_mean
    x = _x()
    return bayes_posterior_mean(**{"x": x, "y": (x >= 0.5).double(), "tau_lo": 0.2, "tau_hi": 0.8, **kw})


def _population_estimate(**kw):
    from stumplib.population import population_estimate
    return population_estimate(**{"tau": 0.5, "beta": 10.0, "b": 9.0, **kw})


def _integrate_flow(**kw):
    from stumplib.dynamics import integrate_flow
    return integrate_flow(**{"beta0": 5.0, "b0": 0.0, "t_max": 1e3, "n_records": 20, **kw})


def _population_gd(**kw):
    from stumplib.dynamics import population_gd
    return population_gd(**{"beta0": 5.0, "b0": 0.0, "lr": 1.0, "steps": 5, "n_records": 3,
                            "device": "cpu", **kw})


def _run_config(**kw):
    from stumplib.trainer import RunConfig
    return RunConfig(**{"m": 8, "n": 8, **kw})


def _train_gd(**kw):
    from stumplib.trainer import RunConfig, train_gd
    return train_gd(**{"configs": [RunConfig(m=8, n=8)], "steps": 5, "device": "cpu", "progress": False, **kw})


def _sq_errors(**kw):
    from stumplib.frozen import sq_errors
    return sq_errors(**{"beta": [20.0], "b": [17.0], "N": 8, "n_ctx": 20, "device": "cpu", **kw})


def _certified_scale(**kw):
    from stumplib.transfer import certified_scale
    return certified_scale(**{"m": 16, "n": 16, "n_corpora": 4, "device": "cpu", **kw})


def _state_evolution_call(**kw):
    from stumplib.phase import state_evolution
    return state_evolution(**{"alpha": [1.0], "omega": 0.3, **kw})


def _certified_scales(**kw):
    from stumplib.certified import certified_scales
    return certified_scales(**{"shapes": [(8, 8)], "n_corpora": 4, "n_boot": 10, "cache": False,
                               **kw})


def _train_staged(**kw):
    from stumplib.frozen import train_staged
    return train_staged(**{"m": 8, "n": 8, "seeds": [0], "beta0": 2.0, "beta_stop": 4.0,
                           "beta_end": 4.0, "steps": 5, **kw})


def _replay_authors(**kw):
    from stumplib.phase.transition import replay_authors
    return replay_authors(**{"alphas": [1.0], "branch": "semantic", **kw})


def _se_update(**kw):
    from stumplib.phase.se import se_update
    return se_update(**{"alpha": 1.0, "q": 0.1, "m": 0.0, "V": 10.0, "theta": 0.05, "omega": 0.3,
                        "n_nodes": 3, **kw})


def _profile_errors(**kw):
    from stumplib.boundary import profile_errors
    return profile_errors(**{"x": _x(), "tau": torch.linspace(0, 1, 5, dtype=torch.float64),
                             "beta": 10.0, "b": 11.0, **kw})


def _fit_power_law(**kw):
    from stumplib.stats import fit_power_law
    return fit_power_law(**{"x": [1.0, 2.0, 4.0, 8.0], "y": [1.0, 0.5, 0.25, 0.125], "n_boot": 50, **kw})


DEVICE = [("tpu", "device"), (3, "device"), ("cuda:x", "device")]
if not HAS_CUDA:
    DEVICE += [("cuda", "CUDA")]

#: (entry point, its call, {argument: [(bad value, word the message must contain), ...]})
TABLE = [
    ("book.start", _start, {
        "profile": [("bogus", "profile"), (None, "profile"), (3, "profile")],
        "device": DEVICE,
        "seed": [(-1, "seed"), (1.5, "seed"), ("0", "seed")],
        "token": [("yes", "token"), (1, "token")],
        "threads": [(0, "threads")],
        "n_steps": [(5, "n_steps")]}),  # an override that names no setting
    ("book.resolve_profile", _resolve_profile, {"profile": [("fast", "profile")]}),
    ("device.resolve_device", _resolve_device, {"device": [("gpu", "device"), ("cuda:x", "device")]}),
    ("book.settings", _settings, {
        "profile": [("bogus", "profile")],
        "n_steps": [(5, "n_steps")]}),  # an override that names no setting
    ("tasks.sample_thresholds", _sample_thresholds, {
        "num_tasks": [(0, "num_tasks"), (2.5, "num_tasks"), (3.0, "num_tasks")],
        "tau_lo": [(NAN, "tau_lo"), (0.9, "tau_lo"), (-0.1, "tau_lo")],
        "tau_hi": [(1.5, "tau_hi"), (NAN, "tau_hi")],
        "seed": [(-1, "seed")],
        "device": DEVICE[:1]}),
    ("tasks.sample_contexts", _sample_contexts, {
        "n": [(0, "n"), ("8", "n")],
        "tau": [(torch.tensor([NAN], dtype=torch.float64), "tau"),
                (torch.tensor([1.5], dtype=torch.float64), "tau")]}),
    ("tasks.sample_tasks", _sample_tasks, {
        "m": [(0, "m"), (-1, "m")], "n": [(-3, "n")], "tau_hi": [(0.1, "tau_hi")],
        "seed": [(-1, "seed")], "device": DEVICE[:1]}),
    ("model.estimate", _estimate, {
        "x": [(_x().fill_(NAN), "x")],
        "y": [(torch.zeros(4, 3, dtype=torch.float64), "x and y")],
        "beta": [(NAN, "beta"), ("ten", "beta")],
        "b": [(INF, "b")]}),
    ("population.population_loss_and_grad", _population, {
        "beta": [(NAN, "beta")], "b": [(INF, "b")], "tau_lo": [(0.9, "tau_lo")], "tau_hi": [(2.0, "tau_hi")]}),
    ("population.population_loss", _population_loss, {
        "beta": [(NAN, "beta")], "tau_lo": [(0.8, "tau_lo")]}),  # tau_lo = tau_hi
    ("population.population_estimate", _population_estimate, {"tau": [(1.5, "tau")]}),
    ("baselines.bayes_posterior_mean", _bayes, {"tau_lo": [(0.9, "tau_lo")]}),
    ("dynamics.integrate_flow", _integrate_flow, {
        "beta0": [(-1.0, "beta0"), (NAN, "beta0"), ([], "beta0")],
        "b0": [(INF, "b0"), ([[0.0, 1.0]], "b0")],
        "t_max": [(0.0, "t_max"), (INF, "t_max")],
        "n_records": [(2, "n_records")],
        "t_first": [(1e4, "t_first")],
        "rtol": [(0.5, "rtol")],
        "method": [("RK4", "method")],
        "tau_lo": [(0.9, "tau_lo")]}),
    ("dynamics.population_gd", _population_gd, {
        "lr": [(0.0, "lr"), (NAN, "lr")],
        "steps": [(0, "steps")],
        "n_records": [(1, "n_records")],
        "progress": [("yes", "progress")],
        "max_loss_ratio": [(0.5, "max_loss_ratio")],
        "dtype": [(torch.int64, "dtype")],
        "device": DEVICE[:1]}),
    ("trainer.RunConfig", _run_config, {
        "m": [(0, "m")], "n": [(2.5, "n")], "lr": [(-1.0, "lr")], "seed": [(-1, "seed")]}),
    ("trainer.train_gd", _train_gd, {
        "steps": [(0, "steps")], "device": DEVICE[:1]}),
    ("frozen.sq_errors", _sq_errors, {
        "N": [(0, "N"), (2.5, "N")], "n_ctx": [(0, "n_ctx")], "seed": [(-1, "seed")],
        "beta": [([NAN], "beta")], "taus": [([1.5], "taus")], "device": DEVICE[:1]}),
    ("transfer.certified_scale", _certified_scale, {
        "m": [(0, "m")], "n": [(2.5, "n")], "seed": [(-1, "seed")], "device": DEVICE[:1]}),
    ("certified.certified_scales", _certified_scales, {
        "shapes": [([], "shapes"), ([(8,)], r"shapes\[0\]"), ([(8, 0)], r"shapes\[0\]\[1\] \(n\)")],
        "n_corpora": [(1, "n_corpora"), ([4, 4], "n_corpora")], "n_boot": [(5, "n_boot")]}),
    ("frozen.train_staged", _train_staged, {
        "m": [(0, "m")], "seeds": [([], "seeds"), ([-1], r"seeds\[0\]")],
        "frac": [(0.0, "frac"), (1.5, "frac")], "beta_stop": [(1.0, "beta_stop")]}),
    ("phase.state_evolution", _state_evolution_call, {
        "branch": [("bogus", "branch")], "omega": [(NAN, "omega")]}),
    ("phase.replay_authors", _replay_authors, {
        "alphas": [([-1.0], "alpha"), ([], "alpha")], "branch": [("bogus", "branch")],
        "damping": [(1.0, "damping"), (NAN, "damping")], "tol": [(0.0, "tol")], "max_iter": [(0, "max_iter")],
        "start": [({"q": 0.1}, "start"), ({"q": -1.0, "m": 0.0, "V": 1.0, "theta": 0.0}, "start"),
                  ({"q": 0.1, "m": NAN, "V": 1.0, "theta": 0.0}, "start")],
        "omega": [(NAN, "omega")]}),
    ("phase.se_update", _se_update, {"minimiser": [("lbfgs", "minimiser")]}),
    ("boundary.profile_errors", _profile_errors, {
        "beta": [(0.0, "beta"), (NAN, "beta")],
        "b": [(INF, "b must")],
        "estimators": [(("oracle",), "estimators"), ((), "estimators")],
        "tau": [(torch.zeros(0, dtype=torch.float64), "tau"), (torch.tensor([1.5], dtype=torch.float64), "tau")],
        "x": [(_x() * 2, "x must"), (_x()[0], "x must")]}),
    ("stats.fit_power_law", _fit_power_law, {
        "x": [([1.0, 2.0], "x"), ([1.0, -2.0, 4.0, 8.0], "x")],
        "y": [([1.0, 0.5, NAN, 0.1], "y"), ([1.0, -0.5, 0.25, 0.125], "x and y")],
        "weights": [([1.0, -1.0, 1.0, 1.0], "weights")]}),
]

CASES = [pytest.param(call, arg, value, word, id=f"{name}-{arg}-{value!r}"[:80])
         for name, call, args in TABLE for arg, bad in args.items() for value, word in bad]


@pytest.mark.parametrize("call, arg, value, word", CASES)
def test_bad_argument_raises_valueerror_naming_it(call, arg, value, word):
    with pytest.raises(ValueError, match=word):
        call(**{arg: value})


@pytest.mark.parametrize("name, call", [pytest.param(n, c, id=n) for n, c, _ in TABLE
                                        if n not in ("trainer.train_gd", "frozen.sq_errors",
                                                     "transfer.certified_scale", "phase.state_evolution",
                                                     "certified.certified_scales")])
def test_the_valid_calls_of_the_table_are_valid(name, call):
    """Each case differs from a valid call in one argument only (the slow entry points are run by
    their own test files)."""
    call()
