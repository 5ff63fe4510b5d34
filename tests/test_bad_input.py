"""Bad input at the entry points a user calls: a ``ValueError`` whose message names the parameter.

The ONE bad-input table of the project (every module's rows, whoever owns the module), in the order
of the library: the chapter services (``book``, ``device``, ``stats``, ``verdicts``), the task
samplers (``tasks``), the estimator (``model``), the population loss (``population``), the baselines
(``baselines``), the flows and population GD with their exponents and landscape (``flow``,
``exponents``, ``landscape``), the trainer (``trainer``), the corpus gradient and the certified
scales (``transfer``, ``certified``), the frozen-estimator evaluations and staged training
(``frozen``, ``staged``), the boundary profiles (``boundary``), the two-head model (``two_head``)
and its phrases (``sections.two_head``) and the phase model (``phase.data``, ``phase.setting``,
``phase.proximal``, ``phase.replica``, ``phase.solver``, ``phase.crossings``, ``phase.published``,
``phase.attention``, ``phase.problem``, ``phase.minimise``, ``phase.decision``,
``phase.exact_error``, ``phase.held_theta``, ``phase.scaling_forms``, ``phase.replicon``,
``phase.overlaps``, ``phase.lowest_minima``), and the sweeps (``sweep.cluster``, ``sweep.store``).
``TABLE`` replaces one argument of a valid call; ``COMBOS`` holds arguments that are valid alone but
not together. Internal helpers and the validators themselves (``tests/test_validation.py``) are not
checked here; chapter parameters are checked through papermill in ``tests/test_notebooks.py``.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

NAN, INF = math.nan, math.inf
HAS_CUDA = torch.cuda.is_available()


def _grouped(kw, *groups):
    """Flat keywords (one bad value each, as the table gives them) -> the call's keywords: each
    ``(target, build, names)`` gathers its ``names`` into ``target=build(...)`` (a model or an
    options object), so that a bad value is caught where that object is built."""
    out = dict(kw)
    for target, build, names in groups:
        part = {k: out.pop(k) for k in list(out) if k in names}
        if part:
            out[target] = build(**part)
    return out


def _prior_group():
    from stumplib.stump import Prior
    return ("prior", Prior, ("tau_lo", "tau_hi"))


def _train_group():
    from stumplib.stump import TrainOptions
    return ("options", TrainOptions, ("n_records", "dtype", "check_every", "max_loss_ratio",
                                      "grouping", "on_diverge"))


def _model_group():
    from stumplib.phase import check_model
    return ("model", check_model, ("omega", "sigma", "lam", "A", "branch"))


def _x(C=4, N=6):
    return torch.rand(C, N, generator=torch.Generator().manual_seed(0), dtype=torch.float64)


# -------------------------------------------------------------------------------- chapter services

def _start(**kw):
    from stumplib import book
    table = {p: {"n_ctx": 10} for p in book.PROFILES}
    return book.start(**{"profile": "smoke", "device": "cpu", "seed": 0, "table": table, **kw})


#: what a kernel executed under papermill: a parameters cell, the injected cell, the set-up cell
_PARAMS_CELL = ('import os\nprofile: str = os.environ.get("STUMPBOOK_PROFILE", "quick")  # a\n'
                'seed: int = 0  # b\ntoken: bool = False  # c')


def _check_parameters(**kw):
    from stumplib import book
    cells = ["", _PARAMS_CELL, '# Parameters\nprofile = "smoke"\nseed = 1\n', "book.start(...)"]
    return book.check_parameters(**{"history": cells, **kw})


def _resolve_profile(**kw):
    from stumplib.book import resolve_profile
    return resolve_profile(**{"profile": "quick", **kw})


def _resolve_device(**kw):
    from stumplib.core.device import resolve_device
    return resolve_device(**{"device": "cpu", **kw})


def _settings(**kw):
    from stumplib import book
    table = {p: {"n_ctx": 10} for p in book.PROFILES}
    args = {"profile": "smoke", **kw}
    return book.settings(args.pop("profile"), table, **args)


def _table(**kw):
    from stumplib import book
    return book.table(**{"rows": [{"a": 1.0}], "display": False, **kw})


def _verdict(**kw):
    from stumplib.book.verdicts import Verdict
    return Verdict(**{"status": "holds", "sentence": "p = 1.", **kw})


def _log_slopes(**kw):
    from stumplib.book.verdicts import log_slopes
    return log_slopes(**{"x_mid": 100.0, **kw})


def _choose_theory(**kw):
    from stumplib.book.verdicts import choose_theory
    return choose_theory(**{"z_claimed": [1.0], "z_other": [6.0], **kw})


def _ordering(**kw):
    from stumplib.core.stats import Estimate
    from stumplib.book.verdicts import ordering
    a, b = Estimate(2.0, 1.9, 2.1, "bootstrap"), Estimate(1.0, 0.9, 1.1, "bootstrap")
    return ordering(**{"a": a, "b": b, "symbols": ("a", "b"), **kw})


def _combine(**kw):
    from stumplib.book.verdicts import Verdict, combine
    return combine(**{"parts": [Verdict("holds", "a.")], "sentence": "x", **kw})


def _ratio_of_means(**kw):
    from stumplib.core.stats import ratio_of_means
    return ratio_of_means(**{"num": [1.0, 2.0], "den": [2.0, 2.0], "n_boot": 50, **kw})


def _two_way_ratio(**kw):
    from stumplib.core.stats import two_way_ratio
    return two_way_ratio(**{"num": [[1.0, 2.0], [2.0, 1.0]], "den": [2.0, 2.0], "n_boot": 20, **kw})


def _clip_to_support(**kw):
    from stumplib.core.stats import Estimate, clip_to_support
    return clip_to_support(**{"est": Estimate(1.0, 0.5, 2.0), **kw})


def _estimate_range(**kw):
    from stumplib.core.stats import Estimate
    return Estimate.range(**{"values": [1.0, 2.0], **kw})


def _mean_interval(**kw):
    from stumplib.core.stats import mean_interval
    return mean_interval(**{"values": [1.0, 2.0, 3.0], **kw})


def _wilson_interval(**kw):
    from stumplib.core.stats import wilson_interval
    return wilson_interval(**{"successes": 5, "trials": 10, **kw})


def _extrapolate_linear(**kw):
    from stumplib.core.stats import extrapolate_linear
    return extrapolate_linear(**{"x": [0.004, 0.002, 0.001], "y": [0.0024, 0.0022, 0.0021],
                                 "se": [3e-5, 2e-5, 1e-5], **kw})


# ------------------------------------------------------------------------------------- library

def _sample_thresholds(**kw):
    from stumplib.stump.tasks import sample_thresholds
    return sample_thresholds(**_grouped({"num_tasks": 5, "tau_lo": 0.2, "tau_hi": 0.8, "seed": 0,
                                         "device": "cpu", **kw}, _prior_group()))


def _sample_contexts(**kw):
    from stumplib.stump.tasks import sample_contexts
    return sample_contexts(**{"tau": torch.full((3,), 0.5, dtype=torch.float64), "n": 8, "seed": 0, **kw})


def _sample_tasks(**kw):
    from stumplib.stump.tasks import sample_tasks
    return sample_tasks(**_grouped({"m": 4, "n": 8, "tau_lo": 0.2, "tau_hi": 0.8, "seed": 0, **kw},
                                   _prior_group()))


def _estimate(**kw):
    from stumplib.stump.model import estimate
    x = _x()
    return estimate(**{"x": x, "y": (x >= 0.5).double(), "beta": 10.0, "b": 9.0, **kw})


def _population(**kw):
    from stumplib.stump.population import population_loss_and_grad
    return population_loss_and_grad(**_grouped({"beta": 10.0, "b": 9.0, "tau_lo": 0.2,
                                                "tau_hi": 0.8, **kw}, _prior_group()))


def _population_loss(**kw):
    from stumplib.stump.population import population_loss
    return population_loss(**_grouped({"beta": 10.0, "b": 9.0, "tau_lo": 0.2, "tau_hi": 0.8, **kw},
                                      _prior_group()))


def _population_estimate(**kw):
    from stumplib.stump.population import population_estimate
    return population_estimate(**{"tau": 0.5, "beta": 10.0, "b": 9.0, **kw})


def _bayes(**kw):
    from stumplib.stump.baselines import bayes_posterior_mean
    x = _x()
    return bayes_posterior_mean(**_grouped({"x": x, "y": (x >= 0.5).double(), "tau_lo": 0.2,
                                            "tau_hi": 0.8, **kw}, _prior_group()))


def _integrate_flow(**kw):
    from stumplib.stump.flow import FlowOptions, integrate_flow
    flow_group = ("options", FlowOptions, ("rtol", "atol", "method"))
    return integrate_flow(**_grouped({"beta0": 5.0, "b0": 0.0, "t_max": 10.0, "n_records": 20,
                                      **kw}, _prior_group(), flow_group))


def _population_gd(**kw):
    from stumplib.stump.flow import population_gd
    return population_gd(**_grouped({"beta0": 5.0, "b0": 0.0, "lr": 1.0, "steps": 5,
                                     "n_records": 3, "device": "cpu", **kw},
                                    _prior_group(), _train_group()))


def _gradient_field(**kw):
    from stumplib.stump.landscape import gradient_field
    return gradient_field(**{"c_grid": [0.5, 0.9], "log10_beta_grid": [0.0, 1.0], **kw})


def _power_law_path():
    """A synthetic flow ``beta = 2 (1 + t)^(1/4)`` on a log grid of t (no integration needed)."""
    t = np.logspace(-2, 8, 161)
    return {"t": t, "beta": 2 * (1 + t) ** 0.25, "local": 0.25 * t / (1 + t)}


def _fit_exponent(**kw):
    from stumplib.stump.exponents import fit_exponent
    p = _power_law_path()
    return fit_exponent(**{"t": p["t"], "y": p["beta"], "t_lo": 1e4, "t_hi": 1e7, "n_windows": 20, **kw})


def _extrapolate_exponent(**kw):
    from stumplib.stump.exponents import extrapolate_exponent
    p = _power_law_path()
    return extrapolate_exponent(**{"beta": p["beta"], "local": p["local"], "beta_min": 10.0,
                                   "n_windows": 20, **kw})


def _scale_constant(**kw):
    from stumplib.stump.landscape import scale_constant
    return scale_constant(**{"tau_hi": 0.8, **kw})


def _flow():
    """A synthetic two-run flow result on the path ``_power_law_path`` (no integration needed)."""
    from stumplib.stump.flow import FlowResult
    p = _power_law_path()
    t, beta = np.concatenate([[0.0], p["t"]]), np.concatenate([[2.0], p["beta"]])[None].repeat(2, 0)
    return FlowResult(t=t, beta=beta, b=0.9 * beta, loss=beta ** -2.0, dbeta_dt=0 * beta, db_dt=0 * beta,
                      beta0=beta[:, 0], b0=0.9 * beta[:, 0], tau_lo=0.2, tau_hi=0.8)


def _interpolate_flow(**kw):
    from stumplib.stump.flow import interpolate_flow
    return interpolate_flow(**{"result": _flow(), "t": [1.0], "run": 0, **kw})


def _growth_share(**kw):
    from stumplib.stump.exponents import growth_share_at_calibration
    return growth_share_at_calibration(**{"result": _flow(), "t_cal": [0.0, 1e4], **kw})


def _run_config(**kw):
    from stumplib.stump.trainer import RunConfig
    return RunConfig(**{"m": 8, "n": 8, **kw})


def _train_gd(**kw):
    from stumplib.stump.trainer import RunConfig, train_gd
    return train_gd(**_grouped({"configs": [RunConfig(m=8, n=8)], "steps": 5, "device": "cpu",
                                "progress": False, **kw}, _train_group()))


def _corpus_loss_and_grad(**kw):
    from stumplib.stump.trainer import RunConfig, corpus_loss_and_grad, make_corpora
    corpora = make_corpora([RunConfig(m=3, n=3)], device="cpu")
    one = torch.ones(1, dtype=torch.float64)
    return corpus_loss_and_grad(**{"beta": one, "b": one, "corpora": corpora, **kw})


def _transfer_profile(**kw):
    from stumplib.book.studies.transfer import transfer_profile
    return transfer_profile(**{"m": 4, "n": 4, "betas": [2.0, 4.0], "n_corpora": 4, "device": "cpu", **kw})


def _default_beta_grid(**kw):
    from stumplib.book.studies.transfer import default_beta_grid
    return default_beta_grid(**{"beta_min": 1.0, "beta_max": 8.0, "per_octave": 2, **kw})


def _crossing_scale(**kw):
    from stumplib.book.studies.transfer import crossing_scale
    return crossing_scale(**{"betas": [1.0, 2.0], "curve": [0.1, 0.9], **kw})


def _certified_scales(**kw):
    from stumplib.book.studies.certified import certified_scales
    return certified_scales(**{"shapes": [(8, 8)], "n_corpora": 4, "n_boot": 10, "cache": False,
                               **kw})


def _certified_slope(**kw):
    from stumplib.book.studies.certified import CertifiedScales, slope
    cs = CertifiedScales(((8, 8),), np.array([2]), np.ones(1), np.ones(1), np.ones((10, 1)), ())
    return slope(**{"cs": cs, "x": "mn", **kw})


def _sq_errors(**kw):
    from stumplib.book.studies.frozen import sq_errors
    return sq_errors(**{"beta": [20.0], "b": [17.0], "N": 8, "n_ctx": 20, "device": "cpu", **kw})


def _train_staged(**kw):
    from stumplib.book.studies.staged import train_staged
    return train_staged(**{"m": 8, "n": 8, "seeds": [0], "beta0": 2.0, "beta_stop": 4.0,
                           "beta_end": 4.0, "steps": 5, **kw})


def _two_term_data():
    """Squared errors ``beta^-2 + 2 N^-1.6`` on a grid of (beta, N) (the two-term law, p = 1, q = 0.8)."""
    beta, N = np.meshgrid(2.0 ** np.arange(4, 8), 2.0 ** np.arange(5, 9), indexing="ij")
    beta, N = beta.ravel(), N.ravel()
    return beta, N, beta ** -2.0 + 2.0 * N ** -1.6


def _fit_two_term(**kw):
    from stumplib.book.studies.frozen import fit_two_term
    beta, N, y2 = _two_term_data()
    return fit_two_term(**{"x": beta, "N": N, "y2": y2, **kw})


def _stage_marks(**kw):
    from stumplib.book.studies.staged import stage_marks
    return stage_marks(**{"beta0": 4.0, "beta_stop": 10.0, "beta_end": 45.0, **kw})


def _stop_law_data():
    """Noisy squared errors of the head law at four shapes, with beta* and its replicates."""
    from stumplib.book.studies.frozen import head_mse
    rng = np.random.default_rng(0)
    head = {"A": 1.0, "p": 1.0, "B": 2.0, "q": 1.0}
    mn, Ns = np.array([128.0, 256.0, 512.0, 1024.0]), 2.0 ** np.arange(4, 9)
    bs = 0.1 * mn
    sq = [head_mse(b, Ns, head)[None, :, None] * rng.exponential(size=(3, Ns.size, 10)) for b in bs]
    return {"mn": mn, "Ns": Ns, "sq_runs": sq, "beta_star": bs, "beta_boot": np.tile(bs, (10, 1)),
            "head": head}


def _bootstrap_stop_law(**kw):
    from stumplib.book.studies.frozen import bootstrap_stop_law
    return bootstrap_stop_law(**{**_stop_law_data(), "n_boot": 10, **kw})


def _gain_past_stop(**kw):
    from stumplib.book.studies.staged import gain_past_stop
    return gain_past_stop(**{"stop_err": [2 * np.ones(2)], "end_err": [np.ones(2)], "n_boot": 10, **kw})


def _tau_grid():
    return torch.linspace(0, 1, 5, dtype=torch.float64)


def _profile_errors(**kw):
    from stumplib.stump.boundary import profile_errors
    return profile_errors(**{"x": _x(), "tau": _tau_grid(), "beta": 10.0, "b": 11.0, **kw})


def _estimate_all(**kw):
    from stumplib.stump.boundary import estimate_all
    x = _x()
    return estimate_all(**{"x": x, "y": (x >= 0.5).double(), "beta": 10.0, "b": 11.0, **kw})


def _exact_mse(**kw):
    from stumplib.stump.boundary import exact_mse
    return exact_mse(**{"name": "midpoint", "tau": 0.5, "N": 10, **kw})


def _side_empty_probability(**kw):
    from stumplib.stump.boundary import side_empty_probability
    return side_empty_probability(**{"tau": 0.5, "N": 10, **kw})


def _boundary_excess(**kw):
    from stumplib.stump.boundary import boundary_excess
    err = torch.rand(5, 10, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    return boundary_excess(**{"err": err, "tau": _tau_grid(), "N": 10, "n_boot": 50, **kw})


def _interior_ratio(**kw):
    from stumplib.stump.boundary import interior_ratio
    err = torch.rand(5, 10, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    return interior_ratio(**{"err_num": err, "err_den": err, "tau": _tau_grid(), "n_boot": 50, **kw})


def _fit_power_law(**kw):
    from stumplib.core.stats import fit_power_law
    return fit_power_law(**{"x": [1.0, 2.0, 4.0, 8.0], "y": [1.0, 0.5, 0.25, 0.125], "n_boot": 50, **kw})


def _teacher_matrix(**kw):
    from stumplib.phase.data import teacher_matrix
    z = torch.randn(1, 2, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    return teacher_matrix(**{"z": z, "q_star": torch.ones(4, dtype=torch.float64), "omega": 0.3, **kw})


def _sample_tokens(**kw):
    from stumplib.phase.data import sample_tokens
    return sample_tokens(**{"n": 2, "d": 4, "generator": torch.Generator().manual_seed(0), **kw})


def _positional_encodings(**kw):
    from stumplib.phase.data import positional_encodings
    return positional_encodings(**{"d": 4, **kw})


def _check_model(**kw):
    from stumplib.phase.setting import check_model
    return check_model(**{"omega": 0.3, **kw})


def _proximal(**kw):
    from stumplib.phase.proximal import proximal
    rng = np.random.default_rng(0)
    center, t, V = rng.normal(0, 0.6, (3, 2)), rng.uniform(0.05, 0.95, (3, 2)), rng.uniform(2.0, 30.0, 3)
    return proximal(**{"center": center, "t": t, "V": V, **kw})


def _se_update(**kw):
    from stumplib.phase.replica import UpdateOptions, se_update
    update_group = ("options", UpdateOptions, ("n_nodes", "rule", "tol", "minimiser"))
    return se_update(**_grouped({"alpha": 1.0, "q": 0.1, "m": 0.0, "V": 10.0, "theta": 0.05,
                                 "omega": 0.3, "n_nodes": 3, **kw}, _model_group(), update_group))


def _solve_fixed_rule(**kw):
    from stumplib.phase.replica import solve_fixed_rule
    return solve_fixed_rule(**_grouped({"alpha": 1.0, "omega": 0.3, "n_nodes": 4, **kw},
                                       _model_group()))


def _theta_profile(**kw):
    from stumplib.phase.replica import theta_profile
    return theta_profile(**{"alpha": 1.0, "thetas": [0.1], "omega": 0.3, "n_nodes": 4, **kw})


def _state_evolution_call(**kw):
    from stumplib.phase import SolverOptions, state_evolution
    solver_group = ("options", SolverOptions, ("rtol", "n_scramblings", "min_log2_points",
                                               "max_log2_points", "max_updates"))
    return state_evolution(**_grouped({"alpha": [1.0], "omega": 0.3, **kw}, _model_group(),
                                      solver_group))


def _replay_authors(**kw):
    from stumplib.book.studies.published import replay_authors
    return replay_authors(**{"alphas": [1.0], "branch": "semantic", **kw})


def _train_attention_gd(**kw):
    from stumplib.phase import AttentionGDOptions
    from stumplib.phase.attention import train_attention_gd
    gd_group = ("options", AttentionGDOptions, ("lr", "steps", "n_test", "progress",
                                                "checkpoints"))
    return train_attention_gd(**_grouped({"alphas": [1.0], "d": 20, "steps": 2, "seeds": 1,
                                          "n_test": 200, "progress": False, "omega": 0.3, **kw},
                                         _model_group(), gd_group))


def _first_crossing(**kw):
    from stumplib.phase.crossings import first_crossing
    return first_crossing(**{"x": [0.0, 1.0, 2.0, 3.0], "above": [0, 0, 1, 2], "below": [1, 1, 0, 0], **kw})


def _problem():
    from stumplib.phase.problem import make_problem
    from stumplib.phase import check_model
    return make_problem(20, [0, 1], 5, model=check_model(omega=0.3))


def _initial_points(**kw):
    from stumplib.phase.problem import initial_points
    return initial_points(**{"pb": _problem(), "init": "semantic", **kw})


def _minimise(**kw):
    from stumplib.phase.minimise import minimise
    pb = _problem()
    return minimise(**{"pb": pb, "s": 0, "n": 5, "Q0": pb.q_star[0], **kw})


def _exact_test_error(**kw):
    from stumplib.phase.exact_error import exact_test_error
    q = _problem().q_star[0]
    return exact_test_error(**_grouped({"Q": q, "q_star": q, "omega": 0.3, **kw}, _model_group()))


def _hold_theta(**kw):
    from stumplib.book.studies.held_theta import hold_theta
    return hold_theta(**{"pb": _problem(), "theta": 0.1, **kw})


def _choose_form(**kw):
    from stumplib.book.studies.scaling_forms import choose_form
    d = np.array([250.0, 500, 1000, 2000])
    return choose_form(**{"d": d, "y": 0.1 + 1 / d, "se": np.full(4, 1e-3), **kw})


def _landscape(**kw):
    from stumplib.book.studies.lowest_minima import landscape_run
    return landscape_run(**{"alpha": 1.0, "d": 20, "seeds": [0], "thetas": [0.05, 0.07],
                            "n_rotations": 0, "perturb_scales": (), **kw})


DEVICE = [("tpu", "device"), (3, "device"), ("cuda:x", "device")]
if not HAS_CUDA:
    DEVICE += [("cuda", "CUDA")]
#: a CUDA device this machine lacks (none at all, or one index past the last)
NO_CUDA = ([("cuda", "CUDA is not available"), ("cuda:0", "CUDA is not available")] if not HAS_CUDA
           else [(f"cuda:{torch.cuda.device_count()}", "CUDA device")])
BAD_A = ((1, 0), (0.5, 0.6))  # a row that does not sum to one

#: (entry point, its call, {argument: [(bad value, word the message must contain), ...]})
TABLE = [
    # chapter services: book, device, stats, verdicts
    ("book.start", _start, {
        "profile": [("bogus", "profile"), (None, "profile"), (3, "profile")],
        "device": DEVICE,
        "seed": [(-1, "seed"), (1.5, "seed"), ("0", "seed")],
        "token": [("yes", "token"), (1, "token")],
        "threads": [(0, "threads")],
        "n_steps": [(5, "n_steps")]}),  # an override that names no setting
    ("book.check_parameters", _check_parameters, {"history": [  # a misspelt papermill -p name
        (["", _PARAMS_CELL, '# Parameters\nprofle = "smoke"\n', "x"],
         r"^unknown parameter 'profle' \(did you mean 'profile'\?\); valid names: profile, seed, "
         r"token$"),
        (["", _PARAMS_CELL, '# Parameters\nprofile = "smoke"\nsed = 1\nbeta = 2\n', "x"],
         r"^unknown parameters 'sed' \(did you mean 'seed'\?\), 'beta'; valid names: profile")]}),
    ("book.resolve_profile", _resolve_profile, {"profile": [("fast", "profile")]}),
    ("book.settings", _settings, {
        "profile": [("bogus", "profile")],
        "n_steps": [(5, "n_steps")]}),  # an override that names no setting
    ("book.table", _table, {"rows": [([], "rows")]}),
    ("device.resolve_device", _resolve_device, {
        "device": [("gpu", "device"), ("cuda:x", "device")] + NO_CUDA}),
    ("stats.fit_power_law", _fit_power_law, {
        "x": [([1.0, 2.0], "x"), ([1.0, -2.0, 4.0, 8.0], "x")],
        "y": [([1.0, 0.5, NAN, 0.1], "y"), ([1.0, -0.5, 0.25, 0.125], "x and y")],
        "weights": [([1.0, -1.0, 1.0, 1.0], "weights")]}),
    ("stats.ratio_of_means", _ratio_of_means, {
        "den": [([1.0], "paired"), ([-1.0, 2.0], "non-negative")], "floor": [(-1.0, "floor")],
        "level": [(1.0, "level")]}),
    ("stats.two_way_ratio", _two_way_ratio, {
        "num": [([[1.0, 2.0]], "shapes"), ([[-1.0, 2.0], [1.0, 1.0]], "non-negative")],
        "floor": [(NAN, "floor")], "n_boot": [(5, "n_boot")]}),
    ("stats.clip_to_support", _clip_to_support, {"ceiling": [(-1.0, "floor")]}),
    ("stats.Estimate.range", _estimate_range, {
        "values": [([NAN], "values")], "center": [("mode", "center")]}),
    ("stats.mean_interval", _mean_interval, {"values": [([1.0], "at least 2")]}),
    ("stats.wilson_interval", _wilson_interval, {"trials": [(3, "trials")]}),
    ("stats.extrapolate_linear", _extrapolate_linear, {"se": [([-3e-5, -2e-5, -1e-5], "se")]}),
    # the verdict language (verdicts)
    ("verdicts.Verdict", _verdict, {
        "status": [("maybe", "status must be one of")], "sentence": [("  ", "sentence")]}),
    ("verdicts.log_slopes", _log_slopes, {"x_mid": [(1.0, "x_mid")]}),
    ("verdicts.choose_theory", _choose_theory, {"z_other": [([NAN], "z_other")]}),
    ("verdicts.ordering", _ordering, {"relation": [("<", "relation")]}),
    ("verdicts.combine", _combine, {"parts": [([], "parts")]}),
    # the task samplers (tasks), the estimator (model), the population loss and the baselines
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
        "seed": [(-1, "seed")], "device": DEVICE[:1] + NO_CUDA}),
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
    # the population flow and population GD, the exponents, the landscape (flow, exponents,
    # landscape)
    ("flow.integrate_flow", _integrate_flow, {
        "beta0": [(-1.0, "beta0"), (NAN, "beta0"), ([], "beta0")],
        "b0": [(INF, "b0"), ([[0.0, 1.0]], "b0"), ([], "b0"), ("x", "b0")],
        "t_max": [(0.0, "t_max"), (INF, "t_max")],
        "n_records": [(2, "n_records")],
        "t_first": [(1e4, "t_first")],
        "rtol": [(0.5, "rtol")],
        "method": [("RK4", "method"), ("RK45", "method")],
        "tau_lo": [(0.9, "tau_lo")]}),
    ("flow.population_gd", _population_gd, {
        "lr": [(0.0, "lr"), (NAN, "lr"), (-1.0, "lr")],
        "steps": [(0, "steps"), (2.5, "steps")],
        "n_records": [(1, "n_records")],
        "progress": [("yes", "progress")],
        "max_loss_ratio": [(0.5, "max_loss_ratio")],
        "dtype": [(torch.int64, "dtype")],
        "device": DEVICE[:1]}),
    ("landscape.gradient_field", _gradient_field, {
        "c_grid": [([], "c_grid")], "log10_beta_grid": [([1.0, 0.5], "log10_beta_grid")]}),
    ("exponents.fit_exponent", _fit_exponent, {
        "t_hi": [(1.1e4, "window"), (1e3, "t_hi")]}),  # a window too short; t_hi < t_lo
    ("exponents.extrapolate_exponent", _extrapolate_exponent, {"beta_min": [(1e9, "beta_min")]}),
    ("landscape.scale_constant", _scale_constant, {"tau_hi": [(0.0, "tau_hi")]}),
    ("flow.interpolate_flow", _interpolate_flow, {"run": [(5, "run")], "t": [([2e12], "t must")]}),
    ("exponents.growth_share_at_calibration", _growth_share, {"t_cal": [([1.0], "t_cal")]}),
    # the batched GD trainer
    ("trainer.RunConfig", _run_config, {
        "m": [(0, "m")], "n": [(2.5, "n"), (2.0, "n")], "lr": [(-1.0, "lr")], "seed": [(-1, "seed")],
        "beta0": [(NAN, "beta0")], "tau_lo": [(0.9, "tau_lo")],
        "beta_stop": [(0.0, "beta_stop"), (-1.0, "beta_stop"), (NAN, "beta_stop"), (INF, "beta_stop")],
        "lr_marks": [(((2.0, 1.0), (1.0, 1.0)), "lr_marks"), (((0.0, 1.0),), "lr_marks"),
                     (((2.0, 0.0),), "lr_marks"), (((2.0, NAN),), "lr_marks"), ((2.0, 1.0), "lr_marks")],
        "record_scales": [((3.0, 3.0), "record_scales"), ((-1.0,), "record_scales"), (5.0, "record_scales")]}),
    ("trainer.train_gd", _train_gd, {
        "steps": [(0, "steps")], "device": DEVICE[:1], "grouping": [("rows", "grouping")],
        "on_diverge": [("ignore", "on_diverge")], "progress": [("yes", "progress")],
        "n_records": [(1, "n_records")]}),
    ("trainer.corpus_loss_and_grad", _corpus_loss_and_grad, {
        "beta": [(torch.tensor([NAN], dtype=torch.float64), "beta")],
        "b": [(torch.ones(2, dtype=torch.float64), "b must have shape")],
        "corpora": [({}, "corpora")]}),
    # the corpus gradient along the path and the certified scale (transfer, certified)
    ("transfer.transfer_profile", _transfer_profile, {"betas": [([4.0, 2.0], "betas"), ([], "betas")]}),
    ("transfer.default_beta_grid", _default_beta_grid, {"per_octave": [(0, "per_octave")]}),
    ("transfer.crossing_scale", _crossing_scale, {"betas": [([1.0, 1.0], "betas")]}),
    ("certified.certified_scales", _certified_scales, {
        "shapes": [([], "shapes"), ([(8,)], r"shapes\[0\]"), ([(8, 0)], r"shapes\[0\]\[1\] \(n\)")],
        "n_corpora": [(1, "n_corpora"), ([4, 4], "n_corpora")], "n_boot": [(5, "n_boot")]}),
    ("certified.slope", _certified_slope, {"x": [("k", "x must")]}),
    # the frozen estimator and staged training (frozen, staged)
    ("frozen.sq_errors", _sq_errors, {
        "N": [(0, "N"), (2.5, "N")], "n_ctx": [(0, "n_ctx")], "seed": [(-1, "seed")],
        "beta": [([NAN], "beta")], "taus": [([1.5], "taus")], "device": DEVICE[:1]}),
    ("staged.train_staged", _train_staged, {
        "m": [(0, "m")], "seeds": [([], "seeds"), ([-1], r"seeds\[0\]")],
        "frac": [(0.0, "frac"), (1.5, "frac")], "beta_stop": [(1.0, "beta_stop")]}),
    ("frozen.fit_two_term", _fit_two_term, {"y2": [(-_two_term_data()[2], "positive")]}),
    ("staged.stage_marks", _stage_marks, {"beta_stop": [(2.0, "beta_stop")]}),
    ("frozen.bootstrap_stop_law", _bootstrap_stop_law, {
        "sq_runs": [(_stop_law_data()["sq_runs"][:2], "one entry")]}),
    ("staged.gain_past_stop", _gain_past_stop, {"end_err": [([np.ones(3)], "paired")]}),
    # the boundary profiles (boundary)
    ("boundary.profile_errors", _profile_errors, {
        "beta": [(0.0, "beta"), (NAN, "beta")],
        "b": [(INF, "b must")],
        "estimators": [(("oracle",), "estimators"), ((), "estimators")],
        "tau": [(torch.zeros(0, dtype=torch.float64), "tau"), (torch.tensor([1.5], dtype=torch.float64), "tau"),
                (_tau_grid() + 0.5, "tau")],
        "x": [(_x() * 2, "x must"), (_x()[0], "x must")]}),
    ("boundary.estimate_all", _estimate_all, {"y": [(torch.zeros(4, 3, dtype=torch.float64), "x and y")]}),
    ("boundary.exact_mse", _exact_mse, {
        "N": [(0, "N must")], "tau": [(1.5, "tau")], "name": [("median", "name")]}),
    ("boundary.side_empty_probability", _side_empty_probability, {"N": [(2.0, "N must")]}),
    ("boundary.boundary_excess", _boundary_excess, {
        "tau": [(torch.linspace(0, 0.5, 5, dtype=torch.float64), "upper boundary")],
        "width": [(-1.0, "width")]}),
    ("boundary.interior_ratio", _interior_ratio, {
        "err_den": [(torch.zeros(5, 3, dtype=torch.float64), "err_num")],
        "interior": [((0.8, 0.2), "tau_lo")]}),
    # the phase model: data, state evolution (se, solver, crossings, published), attention GD,
    # minimisers
    ("phase.data.teacher_matrix", _teacher_matrix, {"omega": [(1.5, "omega")]}),
    ("phase.data.sample_tokens", _sample_tokens, {"sigma": [(-1.0, "sigma")]}),
    ("phase.data.positional_encodings", _positional_encodings, {"d": [(1, "d must")]}),
    ("phase.setting.check_model", _check_model, {
        "omega": [(1.5, "omega"), (NAN, "omega")], "sigma": [(0.0, "sigma"), (1e3, "sigma")],
        "lam": [(0.0, "lam"), (-0.1, "lam")], "A": [(BAD_A, "A"), (((1, 0),), "A")],
        "branch": [("agnostic", "branch")]}),
    ("phase.proximal.proximal", _proximal, {"V": [(-np.ones(3), "V")], "sigma": [(0.0, "sigma")]}),
    ("phase.replica.se_update", _se_update, {"minimiser": [("lbfgs", "minimiser")]}),
    ("phase.replica.solve_fixed_rule", _solve_fixed_rule, {
        "alpha": [(-1.0, "alpha"), ([], "alpha"), (NAN, "alpha")], "omega": [(1.5, "omega")],
        "sigma": [(0.0, "sigma")], "lam": [(-0.1, "lam")], "branch": [("agnostic", "branch")],
        "A": [(BAD_A, "A")], "n_nodes": [(2, "n_nodes")], "damping": [(1.0, "damping")]}),
    ("phase.replica.theta_profile", _theta_profile, {
        "thetas": [([0.3], "thetas")], "alpha": [([1.0, 2.0], "alpha")],
        "A": [(((0.3, 0.7), (0.8, 0.2)), "A")], "lam": [(0.0, "lam")]}),
    ("phase.state_evolution", _state_evolution_call, {
        "branch": [("bogus", "branch"), ("agnostic", "branch")], "omega": [(NAN, "omega"), (2.0, "omega")],
        "rtol": [(0.0, "rtol")], "n_scramblings": [(1, "n_scramblings")],
        "max_log2_points": [(30, "max_log2_points")], "on_accuracy": [("x", "on_accuracy")],
        "alpha": [(-1.0, "alpha")], "sigma": [(0.0, "sigma")], "lam": [(0.0, "lam")],
        "A": [(((0.5, 0.6), (0.4, 0.6)), "A")], "seed": [(-1, "seed")], "max_updates": [(1, "max_updates")]}),
    ("phase.replay_authors", _replay_authors, {
        "alphas": [([-1.0], "alpha"), ([], "alpha")], "branch": [("bogus", "branch")],
        "damping": [(1.0, "damping"), (NAN, "damping")], "tol": [(0.0, "tol")], "max_iter": [(0, "max_iter")],
        "start": [({"q": 0.1}, "start"), ({"q": -1.0, "m": 0.0, "V": 1.0, "theta": 0.0}, "start"),
                  ({"q": 0.1, "m": NAN, "V": 1.0, "theta": 0.0}, "start")],
        "omega": [(NAN, "omega")]}),
    ("phase.crossings.first_crossing", _first_crossing, {"x": [([3.0, 2.0, 1.0, 0.0], "increasing")]}),
    ("phase.attention.train_attention_gd", _train_attention_gd, {
        "alphas": [([], "alphas"), ([0.001], "alphas")], "d": [(0, "d")], "lr": [(-1.0, "lr")],
        "inits": [(["bogus"], "inits")], "steps": [(0, "steps")], "omega": [(NAN, "omega")],
        "checkpoints": [([11], "checkpoints")]}),  # past the last step
    ("phase.problem.initial_points", _initial_points, {
        "init": [("bogus", "init"), ("random", "generator")]}),  # "random" needs a generator
    ("phase.minimise.minimise", _minimise, {"gtol": [(0.5, "gtol")]}),
    ("phase.exact_error.exact_test_error", _exact_test_error, {"n_nodes": [(2, "n_nodes")]}),
    ("phase.held_theta.hold_theta", _hold_theta, {"theta": [(-0.1, "theta"), (0.3, "theta")]}),
    ("phase.scaling_forms.choose_form", _choose_form, {
        "se": [(np.array([1e-3, 1e-3, 1e-3, -1.0]), "se")], "d": [(np.array([250.0, 500, 1000]), "d")],
        "forms": [(["1/d^3"], "forms")]}),
    ("phase.lowest_minima.landscape_run", _landscape, {
        "thetas": [([0.07, 0.05], "increasing"), ([0.05, 0.3], "thetas")], "alpha": [(-1.0, "alpha")],
        "seeds": [([], "seeds must")]}),
]

# the two-head model (two_head): helpers and rows appended to the table
def _th_corpora(R=1):
    from stumplib.stump.trainer import RunConfig, make_corpora
    return make_corpora([RunConfig(m=6, n=5, seed=r, tau_lo=0.0, tau_hi=1.0) for r in range(R)], "cpu")


def _th_heads(R=None):
    h = torch.tensor([20.0, 22.0, 20.0, 22.0], dtype=torch.float64)
    return h if R is None else h.expand(R, 4).clone()


def _th_A(R=None):
    from stumplib.stump.two_head import rule
    A = rule("symmetrized")
    return A if R is None else A.expand(R, 3, 4).clone()


def _th_rule(**kw):
    from stumplib.stump.two_head import rule
    return rule(**{"name": "symmetrized", **kw})


def _th_features(**kw):
    from stumplib.stump.two_head import features
    return features(**{"y": (_x() >= 0.5).double(), **kw})


def _th_estimate(**kw):
    from stumplib.stump.two_head import estimate
    x = _x()
    return estimate(**{"x": x, "y": (x >= 0.5).double(), "heads": _th_heads(), "A": _th_A(), **kw})


def _th_loss_and_grad(**kw):
    from stumplib.stump.two_head import loss_and_grad
    return loss_and_grad(**{"corpora": _th_corpora(), "heads": _th_heads(1), "A": _th_A(1), **kw})


def _th_combination_step(**kw):
    from stumplib.stump.two_head import combination_step
    return combination_step(**{"corpora": _th_corpora(), "heads": _th_heads(1), **kw})


def _th_train(**kw):
    from stumplib.stump.trainer import RunConfig
    from stumplib.stump.two_head import train_two_head
    cfgs = [RunConfig(m=6, n=5, seed=0, lr=100.0, tau_lo=0.0, tau_hi=1.0)]
    return train_two_head(**_grouped({"configs": cfgs, "steps": 2, "device": "cpu", **kw},
                                     _train_group()))


def _th_weights(**kw):
    from stumplib.stump.two_head import weights
    return weights(**{"A": _th_A(), "n1": [0, 5, 10], "N": 10, **kw})


def _th_profile_errors(**kw):
    from stumplib.stump.two_head import profile_errors
    return profile_errors(**{"x": _x(), "tau": _tau_grid(), "heads": _th_heads(), "A": _th_A(), **kw})


def _th_sq_errors(**kw):
    from stumplib.stump.two_head import sq_errors
    x = _x()
    return sq_errors(**{"x": x, "y": (x >= 0.5).double(), "tau": torch.full((4,), 0.5, dtype=torch.float64),
                        "heads": _th_heads(2), "A": _th_A(), **kw})


def _th_rule_sq_errors(**kw):
    from stumplib.stump.two_head import rule_sq_errors
    x = _x()
    return rule_sq_errors(**{"x": x, "y": (x >= 0.5).double(), "tau": torch.full((4,), 0.5, dtype=torch.float64),
                             "heads": np.array([[20.0, 22.0]]), "names": ("symmetrized",), **kw})


def _th_profile_summary(**kw):
    from stumplib.stump.two_head import profile_summary
    return profile_summary(**{"x": _x(), "tau": _tau_grid(), "one_heads": np.array([[20.0, 22.0]]),
                              "heads": _th_heads(1), "A": _th_A(1), "names": ["one-head"], **kw})


def _th_paired_ratio(**kw):
    from stumplib.stump.two_head import paired_ratio
    a = torch.rand(8, 2, generator=torch.Generator().manual_seed(2), dtype=torch.float64) + 0.1
    return paired_ratio(**{"num": a, "den": a[:, 0], "n_boot": 20, **kw})


def _th_phrases(**kw):
    from stumplib.book.sections.two_head import two_head_phrases
    return two_head_phrases(**{"count_slope": 0.1, "fallback": 0.3, "beta_two": 19.0,
                               "beta_one": 36.0, "aware_own": 3.0, "bayes_ratio": 2.0, **kw})


TABLE += [
    ("two_head.rule", _th_rule, {"name": [("bogus", "name")]}),
    ("two_head.features", _th_features, {
        "y": [("bogus", "y"), (torch.zeros(3, 0), "y")], "mask": [(torch.ones(4, 6), "mask")]}),
    ("two_head.estimate", _th_estimate, {
        "x": [("bogus", "x and y")], "heads": [(torch.ones(3), "heads"), ([20.0, NAN, 1.0, 1.0], "heads")],
        "A": [(torch.ones(2, 4), "A")], "mask": [(torch.ones(4, 6), "mask")]}),
    ("two_head.loss_and_grad", _th_loss_and_grad, {
        "corpora": [({"x": torch.ones(1, 2, 3)}, "corpora")], "heads": [(_th_heads(2), "heads")]}),
    ("two_head.combination_step", _th_combination_step, {
        "fraction": [(2.0, "fraction"), (0.0, "fraction")]}),
    ("two_head.train_two_head", _th_train, {
        "configs": [([], "configs")], "steps": [(0, "steps")],
        "start": [("bogus", "start"), (["symmetrized", "one-head"], "start")],
        "comb_step": [(2.0, "comb_step"), (-0.1, "comb_step")], "n_records": [(1, "n_records")],
        "corpora": [(_th_corpora(2), "corpora")], "max_loss_ratio": [(0.5, "max_loss_ratio")]}),
    ("two_head.weights", _th_weights, {
        "n1": [([11], "n1"), ([], "n1")], "N": [(0, "N")], "A": [(np.ones((2, 4)), "A")]}),
    ("two_head.profile_errors", _th_profile_errors, {
        "x": [(torch.rand(5, dtype=torch.float64), "x")], "heads": [(_th_heads(2), "heads")]}),
    ("two_head.sq_errors", _th_sq_errors, {
        "heads": [(_th_heads(), "heads")], "A": [(torch.ones(3, 3, 4, dtype=torch.float64), "A")],
        "x": [("bogus", "x and y")]}),
    ("two_head.rule_sq_errors", _th_rule_sq_errors, {
        "heads": [(np.ones(4), "heads")], "names": [(["bogus"], "estimators")]}),
    ("two_head.profile_summary", _th_profile_summary, {
        "one_heads": [(np.ones((2, 2)), "one_heads")], "interior": [((0.9, 0.1), "tau_lo"),
                                                                     ((0.3, 0.4), "interior")]}),
    ("two_head.paired_ratio", _th_paired_ratio, {
        "n_boot": [(5, "n_boot")], "level": [(1.5, "level")],
        "den": [(-torch.ones(8, dtype=torch.float64), "den"), (torch.ones(7, dtype=torch.float64), "den")]}),
    ("sections.two_head.two_head_phrases", _th_phrases, {
        "fallback": [(NAN, "fallback")], "beta_one": [("x", "beta_one")]}),
]



# the phase model's study entry points (the review's findings): helpers and rows
def _minimiser_runs(**kw):
    from stumplib.phase.minimise import minimiser_runs
    return minimiser_runs(**_grouped({"alphas": [1.5], "d": 12, "seeds": 1, "omega": 0.3, **kw},
                                     _model_group()))


def _study(**kw):
    from stumplib.phase.minimise import study
    return study(**{"alphas": [1.5], "ds": [12, 16], "seeds": 1, "gd_steps": 0, "cache": False,
                    **kw})


def _runs_two_alphas():
    return {12: {"test_error": np.array([[0.01, 0.02], [0.011, 0.021]]),
                 "converged": np.ones((2, 2), bool), "alphas": np.array([1.0, 1.5])},
            24: {"test_error": np.array([[0.009, 0.019], [0.010, 0.020]]),
                 "converged": np.ones((2, 2), bool), "alphas": np.array([1.0, 1.5])}}


def _decide(**kw):
    from stumplib.book.studies.decision import decide
    return decide(**{"runs": _runs_two_alphas(), "accurate": [0.008, 0.018],
                     "accurate_err": [1e-4, 1e-4], "published": [0.007, 0.017], **kw})


def _replicon(**kw):
    from stumplib.phase.replicon import replicon
    return replicon(**{"alpha": 1.5, "q": 0.12, "V": 0.5, "theta": 0.1, "log2_points": 6,
                       "n_scramblings": 2, **kw})


def _overlap_table(**kw):
    from stumplib.book.studies.overlaps import overlap_table
    r = {k: np.ones((2, 2)) for k in ("train_loss", "theta_emp", "q_emp", "m", "test_error")}
    runs = {12: dict(r, converged=np.ones((2, 2), bool), alphas=np.array([1.0, 1.5]))}
    return overlap_table(**{"runs": runs, "alphas": [1.0, 1.5], **kw})


def _search(**kw):
    from stumplib.book.studies.lowest_minima import search
    return search(**{"alpha": 1.5, "d": 8, "s": 0, "thetas": [0.08, 0.1], "n_rotations": 0,
                     "perturb_scales": (), **kw})


TABLE += [
    ("phase.minimise.minimiser_runs", _minimiser_runs, {
        "seeds": [([], "seeds"), (0, "seeds"), ([-1], "seeds")], "d": [(0, "d must")],
        "alphas": [([], "alphas"), ([-1.0], "alphas")]}),
    ("phase.minimise.study", _study, {
        "ds": [([16, 12], "ds must"), ([], "ds must"), ([2], "ds")],
        "alphas": [([1.5, 1.5], "alphas"), ([], "alphas")]}),
    ("phase.decision.decide", _decide, {
        "accurate": [([0.008], "one value per alpha")], "published": [([0.1, 0.2, 0.3], "one value")],
        "runs": [({}, "at least one d"),
                 ({12: {"test_error": np.ones((2, 3)), "converged": np.ones((2, 3), bool)}},
                  "one column per alpha")]}),
    ("phase.replicon.replicon", _replicon, {
        "V": [(-0.5, "V must"), (NAN, "V must")], "theta": [(NAN, "theta"), (0.3, "theta")],
        "q": [(0.0, "q must"), (0.01, "theta\\^2 < q")], "alpha": [(-1.0, "alpha")]}),
    ("phase.overlaps.overlap_table", _overlap_table, {
        "alphas": [([1.0, 2.0], "in no run")], "runs": [({}, "at least one d")]}),
    ("phase.lowest_minima.search", _search, {
        "thetas": [([0.1], "thetas"), ([0.1, 0.08], "thetas"), ([0.08, 0.3], r"thetas\[1\]")],
        "d": [(2, "d must")], "n_rotations": [(-1, "n_rotations")],
        "perturb_scales": [((0.0,), r"perturb_scales\[0\]")], "alpha": [(0.0, "alpha")]}),
]


# -------------------------------------------------------------------------------- sweeps

def _check_workers(**kw):
    from stumplib.sweep.cluster import check_workers
    return check_workers(**{"workers": 2, "scheduler": None, **kw})


def _sweep_store(**kw):
    from stumplib.sweep.store import Store
    return Store(**{"path": "never_opened.npz", "kind": "test", "params": {"gtol": 1e-8}, **kw})


TABLE += [
    ("sweep.check_workers", _check_workers, {
        "workers": [(-1, "workers"), (2.5, "workers"), (True, "workers")],
        "scheduler": [(" ", "scheduler")]}),
    ("sweep.Store", _sweep_store, {"path": [("runs.csv", "out")]}),
]


#: bad combinations of valid values: (entry point, its call, {argument: value, ...}, word)
COMBOS = [
    ("flow.integrate_flow", _integrate_flow, {"beta0": [1.0, 2.0], "b0": [0.0, 1.0, 2.0]},
     "beta0 and b0"),
    ("flow.integrate_flow", _integrate_flow, {"tau_lo": 0.9, "tau_hi": 0.1}, "tau_lo"),
    ("flow.population_gd", _population_gd, {"beta0": [5.0, 6.0, 7.0], "lr": [1.0, 2.0]}, "lr"),
    ("certified.certified_scales", _certified_scales, {"shapes": [(8, 8), (16, 16)], "n_corpora": [8]},
     "n_corpora"),
    ("phase.replica.theta_profile", _theta_profile, {"rule": "sobol", "n_nodes": 6}, "n_nodes"),
    ("phase.state_evolution", _state_evolution_call, {"min_log2_points": 12, "max_log2_points": 12},
     "max_log2_points"),
]

CASES = [pytest.param(call, arg, value, word, id=f"{name}-{arg}-{value!r}"[:80])
         for name, call, args in TABLE for arg, bad in args.items() for value, word in bad]

#: entry points whose valid call takes more than about a second (their own test files run them)
SLOW = ("trainer.train_gd", "frozen.sq_errors", "phase.state_evolution", "certified.certified_scales")


@pytest.mark.parametrize("call, arg, value, word", CASES)
def test_bad_argument_raises_valueerror_naming_it(call, arg, value, word):
    with pytest.raises(ValueError, match=word):
        call(**{arg: value})


@pytest.mark.parametrize("call, kwargs, word", [pytest.param(c, kw, w, id=f"{n}-{'-'.join(kw)}")
                                                for n, c, kw, w in COMBOS])
def test_bad_combination_raises_valueerror_naming_it(call, kwargs, word):
    with pytest.raises(ValueError, match=word):
        call(**kwargs)


@pytest.mark.parametrize("name, call", [pytest.param(n, c, id=n) for n, c, _ in TABLE if n not in SLOW])
def test_the_valid_calls_of_the_table_are_valid(name, call):
    """Each case differs from a valid call in one argument only (the slow entry points are run by
    their own test files)."""
    call()
