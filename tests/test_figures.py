"""Every figure a chapter shows, checked by :func:`stumplib.book.figcheck.figure_problems`, not by eye.

Each figure function of :mod:`stumplib.book.plots` is drawn on small data shaped like a chapter's run
(the library's own computations at a few seconds' size where they are cheap: chapter 2's flow,
chapter 5's error profiles; elsewhere synthetic curves that follow the measured laws at the quick
profile's grid sizes, so that legends meet data where the book's figures have them). A figure
fails when a legend's frame covers a data point or a drawn line, a legend repeats a label or lists
an artist with no data in view, a legend leaves the figure, or a text is below 8 pt at the column
width. The first tests show that the check itself catches each fault.
"""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from stumplib.book import figcheck, style  # noqa: E402
from stumplib.core.stats import Estimate  # noqa: E402
from stumplib.stump import FlowOptions, Prior, TrainOptions

style.use()


# ------------------------------------------------------------------ the check catches each fault
def test_check_flags_a_legend_over_a_line_and_not_one_beside_it():
    x = np.linspace(0, 1, 5)  # a diagonal with vertices far apart: the crossing is mid-segment
    fig, ax = style.figure()
    ax.plot(x, x, label="diagonal")
    ax.legend(loc="center")
    assert any("covers data" in p for p in figcheck.figure_problems(fig))
    fig, ax = style.figure()
    ax.plot(x, x, label="diagonal")
    ax.legend(loc="upper left")
    assert figcheck.figure_problems(fig) == []
    plt.close("all")


def test_check_flags_duplicates_empty_entries_and_small_text():
    fig, ax = style.figure()
    ax.plot([0, 1], [0, 0.2], label="a")
    ax.plot([0, 1], [0.1, 0.3], label="a")
    ax.plot([], [], "^", label="never drawn")
    ax.set_ylim(0, 3)
    ax.legend(loc="upper right")
    got = figcheck.figure_problems(fig)
    assert any("more than once" in p for p in got)
    assert any("'never drawn' has no drawn data" in p for p in got)
    assert not any("covers data" in p for p in got)
    fig, ax = style.figure(width=2 * style.COLUMN_WIDTH)  # drawn at the column width: 9 pt
    ax.set_title("small", fontsize=7.9)
    assert any("'small' is 7.9 pt" in p for p in figcheck.figure_problems(fig))
    plt.close("all")


def test_check_flags_two_entries_drawn_alike_and_not_two_that_differ():
    fig, ax = style.figure()
    ax.plot([0, 1], [0, 0.2], "o", color="C0", label="128×128")
    ax.plot([0, 1], [0.1, 0.3], "o", color="C0", label="2048×2048")  # same colour and marker
    ax.plot([0, 1], [0.2, 0.4], "X", color="C0", label="other marker")
    ax.plot([0, 1], [0.3, 0.5], "-", color="k", lw=1.5, label="curve")
    ax.plot([0, 1], [0.4, 0.6], "--", color="k", lw=1.5, label="dashed")
    ax.set_ylim(0, 3)
    ax.legend(loc="upper right")
    got = [p for p in figcheck.figure_problems(fig) if "alike" in p]
    assert len(got) == 1 and "'128×128' and '2048×2048'" in got[0]
    plt.close("all")


def test_check_sees_error_bars_and_step_histograms():
    fig, ax = style.figure()
    ax.errorbar([0.5], [0.5], yerr=[0.4], fmt="o", label="bar")
    ax.set_xlim(0, 1); ax.set_ylim(0, 1)
    ax.legend(loc="center")
    assert any("covers data" in p for p in figcheck.figure_problems(fig))
    fig, ax = style.figure()
    ax.hist(np.linspace(0, 1, 100), bins=5, histtype="step", label="hist")  # flat top at 20
    ax.set_ylim(0, 40)
    ax.legend(loc="center")
    assert any("covers data" in p for p in figcheck.figure_problems(fig))
    plt.close("all")


# ------------------------------------------------------------------ chapter inputs
class _Fit:
    """A power-law fit as the chapters pass it (callable, ``slope``, ``ci``)."""

    def __init__(self, a=1.0, slope=0.6):
        self.a, self.slope, self.ci = a, slope, (slope - 0.1, slope + 0.1)

    def __call__(self, x):
        return self.a * np.asarray(x, dtype=float) ** self.slope


class _Profile:
    """A transfer / own-calibration profile: ``beta`` and ``curve()``."""

    def __init__(self, beta, y):
        self.beta, self._y = beta, y

    def curve(self, which="along"):
        return self._y


def _ch1():
    from stumplib.book.plots import setup as ch1
    from stumplib.stump.population import population_estimate
    from stumplib.stump.model import estimate
    from stumplib.stump.tasks import sample_contexts

    g = torch.Generator().manual_seed(0)
    x = torch.rand(1, 32, generator=g, dtype=torch.float64)
    y = (x >= 0.5).double()
    yield "fig_setup_weights", lambda: ch1.weights(x, y, [2.0, 10.0, 50.0, 250.0], 0.9)
    taus = torch.linspace(0.02, 0.98, 41, dtype=torch.float64)
    u = torch.rand(200, 32, generator=g, dtype=torch.float64)
    R = {k: [] for k in ("mean", "q10", "q90", "pop")}
    for beta in (2.0, 10.0, 50.0):
        est = torch.stack([estimate(u, (u >= t).double(), beta, 0.9 * beta) for t in taus]).numpy()
        q10, q90 = np.quantile(est, [0.1, 0.9], axis=1)
        for k, v in zip(R, (est.mean(1), q10, q90, population_estimate(taus, beta, 0.9 * beta).numpy())):
            R[k].append(v)
    R = {"tau": taus.numpy(), "single": est[:, :3].T, **{k: np.array(v) for k, v in R.items()}}
    del sample_contexts
    yield "fig_setup_estimator", lambda: ch1.estimator(R["tau"], R, [2.0, 10.0, 50.0], 0.9, 32, 0.2, 0.8)


def _ch2():
    from stumplib.book.plots import dynamics as ch2
    from stumplib.stump import exponents as EX
    from stumplib.stump import flow as FL
    from stumplib.stump import landscape as LA

    lo, hi = 0.2, 0.8
    starts = [(20.0, 20.0), (1.0, 0.0), (5.0, 5.0), (100.0, 90.0), (50.0, 25.0)]
    flow = FL.integrate_flow([s[0] for s in starts], [s[1] for s in starts], 1e7, n_records=45,
                             prior=Prior(lo, hi), options=FlowOptions(rtol=1e-4, atol=1e-6))
    t_cal = EX.calibration_time(flow)
    lb_top = np.log10(flow.beta.max()) + 0.15
    field = LA.gradient_field(np.linspace(-0.1, 1.25, 24), np.linspace(-0.35, lb_top, 20),
                              Prior(lo, hi))
    yield "fig_pop_trajectory", lambda: ch2.trajectory(flow, starts, t_cal, field, lo, hi, lb_top)
    win = flow.t >= 1e3
    window = dict(t_lo=1e3, t_hi=1e7, n_windows=20, seed=0)
    fit_b = EX.fit_exponent(flow.t, flow.beta[0], **window)
    fit_r = EX.fit_exponent(flow.t, flow.rmse[0], **window)
    local_rmse = np.gradient(np.log(flow.rmse[0][1:]), np.log(flow.t[1:]))
    yield "fig_pop_laws", lambda: ch2.laws(flow, fit_b, fit_r, flow.dlogbeta_dlogt[0], local_rmse,
                                           win, t_cal[0], hi, p_inf=0.25004, q_inf=-0.25002)
    lam = LA.hessian_max_eig(flow.beta[0], flow.b[0], Prior(lo, hi))
    fracs = [0.02, 0.2, 0.9]
    gd = FL.population_gd(20.0, 20.0, [f * 2 / lam.max() for f in fracs], 100,
                          prior=Prior(lo, hi), options=TrainOptions(n_records=30))
    yield "fig_pop_gd", lambda: ch2.gd(flow, gd, [f * 2 / lam.max() for f in fracs], fracs)
    other = FL.integrate_flow([5.0, 20.0], [0.0, 20.0], 1e7, n_records=45, prior=Prior(0.4, 0.8),
                              options=FlowOptions(rtol=1e-4, atol=1e-6))
    priors = {(lo, hi): (flow, starts), (0.4, 0.8): (other, [(5.0, 0.0), (20.0, 20.0)])}
    yield "fig_pop_constants", lambda: ch2.constants(priors)


def _ch3():
    from stumplib.book.plots import corpus as ch3

    rng = np.random.default_rng(0)
    base = 128
    series = {"m": [(m, base) for m in (32, 128, 512, 2048)],
              "n": [(base, n) for n in (32, 128, 512, 2048)]}
    P, E = {}, {}
    for sh in series["m"] + series["n"]:
        b = np.geomspace(4, 4096, 40)
        scale = 0.3 * min(sh)
        P[sh] = _Profile(b, 0.02 * (1 + (b / scale) ** 2) ** 0.5 * (1 + 0.05 * rng.random(40)))
        E[sh] = float(scale * 2.5)
    yield "fig_corpus_transfer", lambda: ch3.transfer_curves(series, P, E, 0.05)
    shapes = [(v, v) for v in (32, 64, 128, 256, 512, 1024, 2048)] + [(128, 512), (512, 128)]
    mn = np.array([min(s) for s in shapes], float)
    beta = 0.9 * mn ** 0.6
    own = np.where([s[0] == s[1] and s[0] <= 512 for s in shapes], 8 * mn ** 0.9, np.nan)
    cens = np.array([s == (512, 512) for s in shapes])
    yield "fig_certified_scale", lambda: ch3.certified_growth(
        shapes, beta, 0.8 * beta, 1.2 * beta, _Fit(0.9, 0.6), own, cens, fit_all=_Fit(0.9, 0.55))
    own_shapes = [(v, v) for v in (32, 64, 128, 256, 512)] + [(512, 4), (512, 8), (512, 16)]
    prof = []
    for m, n in own_shapes:
        b = 2.0 ** np.arange(2, 14.01, 0.5)
        prof.append((rf"$m\times n$ = {m}x{n}", _Profile(b, 0.01 * (1 + b / (4 * min(m, n))))))
    both = [s for s in own_shapes if s[0] == s[1]]
    mnb = np.array([min(s) for s in both], float)
    c2 = np.array([False, False, False, False, True])
    yield "fig_corpus_own", lambda: ch3.own_tracking(prof, 0.05, 0.9 * mnb ** 0.6, 8 * mnb ** 0.9,
                                                     c2, mnb)
    c2n = np.zeros(5, bool)  # no censored shape: the lower-bound entry must not appear
    yield "fig_corpus_own_uncensored", lambda: ch3.own_tracking(prof, 0.05, 0.9 * mnb ** 0.6,
                                                                8 * mnb ** 0.9, c2n, mnb)
    t = np.geomspace(1e-2, 4e3, 60)
    labels = ["m×n = 32x32"] * 2 + ["m×n = 128x128"] * 2 + ["m×n = 256x512"] * 2
    fb = (8 * t / 1.64) ** 0.25 + 20
    betas = np.stack([fb * (1 + 0.02 * k) for k in range(6)])
    cs = np.stack([0.8 + np.log(0.4 * betas[k]) / betas[k] + 0.01 * k for k in range(6)])
    bp = np.geomspace(4, 64, 30)
    yield "fig_corpus_traj", lambda: ch3.trajectories(
        np.r_[0, t], np.c_[np.full(6, 20.0), betas], np.c_[np.ones(6), cs], labels, t, fb,
        0.8 + np.log(0.4 * fb) / fb, bp, 0.8 + np.log(0.4 * bp) / bp, 0.8)


def _ch4():
    from stumplib.book.plots import bound as ch4

    hb, hN = [2 ** k for k in range(4, 11)], [2 ** k for k in range(5, 12)]
    fit = {"A": 0.3, "p": 1.0, "B": 0.5, "q": 1.0}
    B_, N_ = np.meshgrid(hb, hN, indexing="ij")
    rmse = np.sqrt(fit["A"] / B_ ** 2 + fit["B"] / N_ ** 2)
    yield "fig_head_law", lambda: ch4.head_law(hb, hN, rmse, fit)
    # the quick grid's nine shapes: five on the diagonal, four with m or n at 512
    shapes = ([(v, v) for v in (128, 256, 512, 1024, 2048)]
              + [(128, 512), (256, 512), (512, 128), (512, 256)])
    mn = np.array([min(s) for s in shapes], float)
    Ns = np.array([2.0 ** k for k in range(4, 13)])
    law = {"A": 40.0, "p": 1.0, "B": 2.0, "q": 1.0}
    X, NN = np.meshgrid(mn, Ns, indexing="ij")
    err = np.sqrt(law["A"] / X ** 2 + law["B"] / NN ** 2)
    beta_star = 0.08 * mn * 8
    yield "fig_frozen_headline", lambda: ch4.headline(mn, Ns, err, 0.9 * err, 1.1 * err, law,
                                                      beta_star, [16, 256, 4096], shapes)
    worst = {"fit": {**law, "p": 0.93}, "rows": [0, 5, 6, 3, 4]}  # largest error at each m∧n
    yield "fig_frozen_headline_worst", lambda: ch4.headline(
        mn, Ns, err, 0.9 * err, 1.1 * err, law, beta_star, [16, 256, 4096], shapes, worst=worst)
    runs = []
    for i, v in enumerate((32, 64, 128, 256, 512)):
        steps = np.geomspace(1, 6e4, 40)
        beta = 4 + 0.5 * steps ** 0.25 * v ** 0.3
        e = np.sqrt(1 / beta ** 2 + 1e-6) * (1 + 0.1 * i)
        runs.append({"key": (v, v), "steps": steps, "beta": beta, "err": e,
                     "stop_step": steps[20], "stop_beta": beta[20], "stop_err": e[20]})
    yield "fig_past_stop", lambda: ch4.past_stop(runs, lambda k: rf"$m\times n$ = {k[0]}x{k[1]}")
    ms = np.array([4, 8, 16, 32, 64])
    taus = [0.5, 0.6, 0.7]
    p_pred = np.array([[np.exp(-m * (0.85 - t)) for t in taus] for m in ms])
    mae = 0.75 / (ms + 1)
    yield "fig_calibration", lambda: ch4.calibration(
        ms, taus, p_pred, 0.8 * p_pred, np.minimum(1.2 * p_pred, 1), p_pred, mae, 0.8 * mae,
        1.2 * mae, 0.8 / np.sqrt(ms), mae, 0.8 / np.sqrt(ms))


def _ch5():
    from stumplib.book.plots import boundary as ch5
    from stumplib.stump import boundary as B

    N_grid, N_ref = [16, 32, 64], 64
    PROF, KEEP = {}, {}
    for N in N_grid:
        for head, (beta, b) in (("sharp", (20.0 * N, 1.1 * 20 * N)), ("trained", (60.0, 63.0))):
            gen = torch.Generator().manual_seed(N)
            x = torch.rand(600, N, generator=gen, dtype=torch.float64)
            tau = B.threshold_grid(41, N)
            err = B.profile_errors(x, tau, beta, b)
            PROF[head, N] = B.profile_record(N, beta, b, tau, err, interior=(0.1, 0.9),
                                             boundary_width=2.0, n_boot=100, seed=0)
            if N == N_ref:
                KEEP[head] = (tau, err)
    for head in ("sharp", "trained"):
        yield f"fig_boundary_profiles_{head}", lambda h=head: ch5.profiles(PROF, h, N_grid, N_ref)
    tau_r, err_r = KEEP["sharp"]
    k = int(torch.argmin((tau_r - (1 - 1 / N_ref)).abs()))
    yield "fig_boundary_mechanism", lambda: ch5.mechanism(PROF, tau_r, err_r, k, N_grid, N_ref)
    sweep = [(r, Estimate(4.0 - 3 / (1 + r), 3.8 - 3 / (1 + r), 4.2 - 3 / (1 + r)),
              Estimate(1.0 + 0.5 / (1 + r), 0.95 + 0.5 / (1 + r), 1.05 + 0.5 / (1 + r)))
             for r in (0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 200.0, 1000.0)]
    yield "fig_boundary_ratios", lambda: ch5.ratios(sweep, PROF, N_grid, N_ref, 1.1)


def _ch6():
    from stumplib.book.plots import phase as ch6

    om = np.array([0.2, 0.3, 0.4])
    diag = {"omega": om, "alpha_c": np.array([1.0, 1.06, 1.12]),
            "alpha_c_lo": np.array([0.98, 1.04, 1.1]), "alpha_c_hi": np.array([1.02, 1.08, 1.14]),
            "alpha_l": np.array([1.3, 1.4, 1.5]), "alpha_l_lo": np.array([1.28, 1.38, 1.47]),
            "alpha_l_hi": np.array([1.32, 1.42, 1.53]),
            "pt_alpha": np.array([2.6, 2.2, 1.8, 1.5, 1.25, 1.05, 0.9, 0.8])}
    yield "fig_phase_diagram", lambda: ch6.diagram_figure(diag, published=(1.02, 1.35))
    a = np.array([0.8, 0.9, 1.05, 1.25, 1.5, 1.8, 2.2, 2.6])
    dl = 0.05 * (a - 1.06)
    te = 0.6 / (1 + a)
    ca = Estimate(1.06, 1.04, 1.08)
    cl = Estimate(1.4, 1.38, 1.42)
    yield "fig_phase_train", lambda: ch6.transition_figure(a, dl, 0.002 + 0 * a, te, 0.002 + 0 * a,
                                                           0.6 / 2.4, ca, cl)
    th, pub = {}, {}
    for key, shift in (("sem", 0.0), ("pos", 0.03)):
        th[f"{key}_alpha"] = a
        th[f"{key}_outcome"] = np.array(["converged"] * len(a))
        th[f"{key}_test_error"] = 0.6 / (1 + a) + shift
        th[f"{key}_test_error_err"] = 0.001 + 0 * a
        th[f"{key}_theta"] = 0.1 * (1 - 1 / (1 + a)) * (key == "sem")
        th[f"{key}_theta_err"] = 0.001 + 0 * a
        pa = np.linspace(0.3, 2.6, 12)
        pub[f"{key}_alpha"] = pa
        for k in ("test_error", "theta"):
            f = (0.6 / (1 + pa) + shift + 0.01) if k == "test_error" else 0.1 * (1 - 1 / (1 + pa))
            pub[f"{key}_{k}"] = f
            pub[f"{key}_replay_{k}"] = f * 1.01
    yield "fig_phase_theory", lambda: ch6.theory_figure(th, pub, 0.25, 0.5)
    dec = {"ds": np.array([100, 200, 400]),
           "mean": np.array([[0.31, 0.27], [0.305, 0.265], [0.302, 0.262]]),
           "se": np.full((3, 2), 0.002),
           "limit": [Estimate(0.3, 0.297, 0.303), Estimate(0.26, 0.257, 0.263)]}
    yield "fig_phase_gd", lambda: ch6.minimiser_figure(dec, [1.0164, 1.25], np.array([0.3, 0.26]),
                                                       np.array([0.001, 0.001]),
                                                       np.array([0.29, 0.255]))
    thetas = np.linspace(0.01, 0.09, 7)
    prof = [{"residual": 0.02 - 0.3 * thetas + 0.002 * k, "test_error": 0.3 - thetas + 0.003 * k,
             "root": (0.02 + 0.002 * k) / 0.3} for k in range(2)]
    rules = [("Gauss-Hermite, $6^4$ nodes", "gauss-hermite", 6), ("Sobol, $2^{12}$ points", "sobol", 12)]
    yield "fig_phase_window", lambda: ch6.window_figure(prof, thetas, rules, 1.6)


def _ch7():
    from stumplib.book.plots import phase as ch7

    for tag, sizes in (("", None), ("_three_d", ((2000, 6), (4000, 6), (8000, 4)))):
        yield f"fig_lowest_minima{tag}", lambda sz=sizes: ch7.lowest_minima_figure(
            *_lowest_minima_data(sz), accurate=0.0028, accurate_err=1e-5, published=0.00268,
            theory_theta=0.0966)


def _lowest_minima_data(sizes=None):
    """Searches at five d (18 starts, 4 to 8 seeds; or ``sizes``, ``((d, seeds), ...)``) with their
    summary and limits: the figure at the recorded run's size."""
    from stumplib.book.studies import lowest_summary as ls

    rng = np.random.default_rng(0)
    searches = {}
    for d, S in sizes or ((500, 8), (1000, 8), (2000, 6), (4000, 6), (8000, 4)):
        K = 18
        loss = 1e-3 + 1e-6 * rng.random((S, K))
        label = rng.integers(0, 3, (S, K))
        lowest = np.argmin(loss, 1)
        searches[d] = dict(loss=loss, theta=0.095 + 0.01 * rng.random((S, K)) + 2 / d,
                           test_error=0.0028 + 0.05 / d + 1e-5 * rng.random((S, K)),
                           converged=np.ones((S, K), bool), label=label, lowest=lowest,
                           saturated=lowest < K // 2, n_distinct=np.full(S, 3),
                           seconds=np.full(S, 60.0), objective_seconds=np.full(S, 0.03))
    summ = ls.summary(searches)
    return summ, ls.limits(summ), searches


def _ch5_two_head():
    """Chapter 5's two-head figures on a short run of the library's own training (2 corpora a
    start, 60 steps) and the evaluation helpers, at the quick profile's context sizes."""
    from stumplib.book.plots import boundary as ch5
    from stumplib.stump import boundary as B
    from stumplib.stump import two_head as TH
    from stumplib.stump.trainer import RunConfig

    starts = {"symmetric start": ("symmetrized", 1.0), "mirror off": ("one-head", 1.0),
              "one head": ("one-head", 0.0)}
    runs = [(s, RunConfig(m=32, n=16, seed=r, lr=400.0, beta0=20.0, b0=20.0, tau_lo=0.0,
                          tau_hi=1.0)) for s in starts for r in range(2)]
    TW = TH.train_two_head([c for _, c in runs], 60, start=[starts[s][0] for s, _ in runs],
                           comb_step=[starts[s][1] for s, _ in runs],
                           options=TrainOptions(n_records=12))
    idx = {s: [i for i, (t, _) in enumerate(runs) if t == s] for s in starts}
    yield "fig_two_head_training", lambda: ch5.two_head_training(TW, idx, 16)
    names = ["one-head", "symmetrized", "boundary-aware", "Bayes"]
    PROF2 = {}
    for N in (16, 64, 256):
        x = torch.rand(300, N, generator=torch.Generator().manual_seed(N), dtype=torch.float64)
        tau = B.threshold_grid(41, N)
        mse, _ = TH.profile_summary(x, tau, TW.final_heads[idx["one head"], :2],
                                    TW.final_heads[idx["symmetric start"]],
                                    TW.final_A[idx["symmetric start"]], names)
        PROF2[N] = {"tau": tau.numpy(), **mse}
    yield "fig_two_head_profiles", lambda: ch5.two_head_profiles(PROF2, [16, 64, 256],
                                                                 ["two-head"] + names)
    yield "fig_two_head_weights", lambda: ch5.two_head_weights(
        TW.final_A[idx["symmetric start"]], 64,
        {"boundary-aware (Bayes)": TH.rule("boundary-aware"),
         "plain average": TH.rule("symmetrized")})



_CHAPTERS = {"ch1": _ch1, "ch2": _ch2, "ch3": _ch3, "ch4": _ch4, "ch5": _ch5,
             "ch5_two_head": _ch5_two_head, "ch6": _ch6, "ch7": _ch7}


@pytest.mark.parametrize("chapter", sorted(_CHAPTERS))
def test_every_figure_of_the_chapter_reads_cleanly(chapter):
    bad = {}
    n = 0
    for name, draw in _CHAPTERS[chapter]():
        fig = draw()
        n += 1
        assert fig.get_size_inches()[0] <= style.COLUMN_WIDTH + 1e-9, name
        problems = figcheck.figure_problems(fig)
        if problems:
            bad[name] = problems
        plt.close(fig)
    assert n >= 2
    assert not bad, "\n".join(f"{k}: {'; '.join(v)}" for k, v in bad.items())


def test_check_flags_a_panel_letter_over_a_y_label_and_not_one_beside_it():
    fig, axes = style.panels(3, height=2.6)
    for ax in axes:
        ax.plot([0, 1], [0, 1])
        ax.set_ylabel("a y label long enough to reach the top of its panel and beyond it")
    fig.canvas.draw()  # planted on the y label, wherever the tick labels' size puts it
    yl = axes[2].yaxis.label.get_window_extent()
    x_ax = axes[2].transAxes.inverted().transform(((yl.x0 + yl.x1) / 2, 0))[0]
    axes[2].text(x_ax, 0.5, "(c)", transform=axes[2].transAxes, fontsize=11, ha="center")
    got = [p for p in figcheck.figure_problems(fig) if "panel letter" in p]
    assert got and "(c) lies over the text 'a y label" in got[0]
    fig, axes = style.panels(3, height=2.6)
    for ax in axes:
        ax.plot([0, 1], [0, 1])
        ax.set_ylabel("MSE")
    style.label_panels(axes)
    assert not [p for p in figcheck.figure_problems(fig) if "panel letter" in p]
    plt.close("all")


def test_check_flags_two_thin_lines_that_render_the_same_grey():
    """A 0.6 pt black line at alpha 0.7 and a 1 pt grey-0.6 line show the same grey in a legend
    (Fig. 2's diagonal and single contexts, before the fix); a dash-dotted diagonal does not."""
    fig, ax = style.figure()
    ax.plot([0, 1], [0, 1], color="0.6", lw=1, label="diagonal")
    ax.plot([0, 1], [0.2, 0.4], color="k", lw=0.6, alpha=0.7, label="single contexts")
    ax.set_ylim(0, 3)
    ax.legend(loc="upper right")
    got = [p for p in figcheck.figure_problems(fig) if "alike" in p]
    assert got and "'diagonal' and 'single contexts'" in got[0]
    fig, ax = style.figure()
    ax.plot([0, 1], [0, 1], color="0.45", ls="-.", lw=1.2, label="diagonal")
    ax.plot([0, 1], [0.2, 0.4], color="k", lw=0.6, alpha=0.7, label="single contexts")
    ax.set_ylim(0, 3)
    ax.legend(loc="upper right")
    assert not [p for p in figcheck.figure_problems(fig) if "alike" in p]
    plt.close("all")


# ------------------------------------------------------------------ format, resolution, font size
def test_figures_are_glued_as_svg_and_pdf_with_text_no_smaller_than_the_small_print():
    """Inside IPython (a chapter) :func:`style.use` makes the inline backend glue SVG (the pages)
    and PDF (the PDF book); the SVG is at most 7 in (+ its margin) = 677 CSS px wide, and every
    text of a chapter figure is at least the page's small print (14.4 px = 10.8 pt)."""
    from IPython.core.interactiveshell import InteractiveShell

    assert figcheck.format_problems(style.FIGURE_FORMATS) == []
    assert style.MIN_FONT_PT * figcheck.CSS_PX_PER_INCH / 72 >= figcheck.SMALL_PRINT_PX
    assert abs(figcheck.LEGIBLE_PT - 10.8) < 1e-9
    had = InteractiveShell.initialized()
    shell = InteractiveShell.instance()
    try:
        style.use()
        fig, ax = style.figure()
        ax.plot([0, 1], [0, 1], label="line")
        data, _ = shell.display_formatter.format(fig)
        assert "image/svg+xml" in data and "application/pdf" in data
        assert "image/png" not in data  # no bitmap for the pages to pick
        import re

        svg = data["image/svg+xml"]
        width_pt = float(re.search(r'<svg[^>]*\swidth="([0-9.]+)pt"', svg).group(1))
        # the column plus the crop's margin (677 CSS px; the column is 690 px at 1280 px and
        # wider at 1400 px): shown at its natural size, never shrunk
        assert width_pt <= (style.COLUMN_WIDTH + 2 * style.PAD_INCHES) * 72 + 0.5
        sizes = [t.get_fontsize() for t in fig.findobj(matplotlib.text.Text)
                 if t.get_visible() and t.get_text().strip()]
        assert min(sizes) >= figcheck.LEGIBLE_PT
        plt.close(fig)
    finally:
        if not had:
            InteractiveShell.clear_instance()


def test_format_check_flags_soft_bitmaps_and_passes_vector_or_2x():
    assert figcheck.format_problems(["svg"]) == []
    assert figcheck.format_problems(["svg", "pdf"]) == []
    assert figcheck.format_problems(["png"], dpi=192) == []
    assert figcheck.format_problems(["retina"], dpi=98) == []
    got = figcheck.format_problems(["png"], dpi=98)
    assert got and "98 dpi" in got[0]
    assert figcheck.format_problems(["pdf"])  # the pages would have no figure


def test_lowest_minima_bars_reach_a_theory_exactly_when_the_rule_says_it_is_followed():
    """Fig. 28: each acceptable form's bar is the rule's reach (2 combined standard errors, the
    z-score's denominator), so it reaches the accurate line when |z| <= 2 and stops short when
    |z| > 2; the saturation panel counts starts in integers."""
    import inspect

    from stumplib.book.plots import phase as ch6
    from stumplib.book.registry import rule_arguments
    from stumplib.book.studies.scaling_forms import form_z

    reach = inspect.signature(ch6.lowest_minima_figure).parameters["reach"].default
    assert reach == rule_arguments("lowest_min")["follow"]
    summ, lim, searches = _lowest_minima_data()
    f = lim["lowest_test_error"]
    order = [f["form"]] + [g for g in f["acceptable"] if g != f["form"]]
    err = 1e-6
    for shift in (1.5, 2.5):  # the accurate theory at 1.5 and at 2.5 combined SE of the form
        se = float(f["fits"][f["form"]]["se"])
        acc = float(f["fits"][f["form"]]["limit"].value) + shift * np.hypot(se, err)
        z = form_z(f["fits"], order, acc, err)[f["form"]]["z"]
        fig = ch6.lowest_minima_figure(summ, lim, searches, accurate=acc, accurate_err=err,
                                       published=0.0026, theory_theta=0.0966)
        ax = fig.axes[0]
        bar = next(c for c in ax.containers if c.get_label().startswith("limit"))
        top = max(np.asarray(seg)[:, 1].max() for seg in bar.lines[2][0].get_segments())
        assert (top >= 1e3 * acc - 1e-9) == (abs(z) <= reach), (shift, z, top, 1e3 * acc)
        ticks = fig.axes[2].get_xticks()
        assert np.allclose(ticks, np.round(ticks))
        plt.close(fig)


def test_fit_column_narrows_a_figure_whose_outside_legend_overflows_the_column():
    """A figure whose tight box (legend outside the axes) is wider than the column is narrowed
    until it fits, fonts unchanged, so the page shows it 1:1; a figure that fits is untouched."""
    import matplotlib.pyplot as plt

    from stumplib.book.style import COLUMN_WIDTH, PAD_INCHES, fit_column

    fig, ax = plt.subplots(figsize=(COLUMN_WIDTH, 3))  # no layout engine: nothing makes room
    for k in range(3):
        ax.plot([0, 1], [k, k + 1], label=f"a long legend entry number {k}")
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.draw_without_rendering()
    before = fig.get_tightbbox().width + 2 * PAD_INCHES
    assert before > COLUMN_WIDTH + 0.3  # the legend sticks out
    size = ax.get_legend().get_texts()[0].get_fontsize()
    after = fit_column(fig)
    assert after <= COLUMN_WIDTH + 1e-3 and fig.get_figwidth() < COLUMN_WIDTH
    assert ax.get_legend().get_texts()[0].get_fontsize() == size
    small, _ = plt.subplots(figsize=(3, 2), constrained_layout=True)
    assert fit_column(small) < 3.0 and small.get_figwidth() == 3.0
    plt.close("all")


def test_fit_column_never_breaks_a_figure_it_cannot_fit():
    """A figure whose overflow does not shrink with it (a row of figure-legend entries, a long
    fixed text) is kept at its narrowest print, at least half its width: no error, no negative
    size (the guard that chapter 6's landscape figure once needed)."""
    import matplotlib.pyplot as plt

    from stumplib.book.style import COLUMN_WIDTH, fit_column

    fig, ax = plt.subplots(figsize=(COLUMN_WIDTH, 3), layout="constrained")
    for k in range(8):
        ax.plot([0, 1], [k, k + 1], label=f"legend entry {k}")
    fig.legend(loc="outside lower center", ncols=8)
    assert fit_column(fig) > COLUMN_WIDTH and fig.get_figwidth() >= COLUMN_WIDTH / 2
    odd, ax2 = plt.subplots(figsize=(COLUMN_WIDTH, 2))
    ax2.text(0.0, 0.5, "x" * 200, transform=ax2.transAxes)  # sticks out whatever the width
    fit_column(odd)
    assert odd.get_figwidth() >= COLUMN_WIDTH / 2
    plt.close("all")
