"""Tests of stumplib.book.sections.flat_window: the flat window's tables and verdict."""
from __future__ import annotations

import numpy as np
import pytest

from stumplib.book.sections.flat_window import (lowest_min_verdict, lowest_minima_rows,
                                                per_form_rows, scaling_rows)
from stumplib.core.stats import Estimate


def test_scaling_rows_extrapolate_each_quantity_and_compare_with_the_theory():
    """Seed means exactly a + b/d at four d: each row's limit is a, its distance to a theory at a
    is 0; a quantity at fewer than four usable d gets no row."""
    ds = np.array([100, 200, 400, 800])
    table = {"ds": ds, "n": np.full((1, 4), 8.0)}
    for k, a in (("theta", 0.097), ("test_error", 0.0028), ("train_loss", 0.0024), ("q", 0.12)):
        table[k] = (a + 0.5 / ds)[None]
        table[f"{k}_se"] = np.full((1, 4), 1e-5)
    theory = {"theta": np.array([0.097]), "test_error": np.array([0.0028])}
    rows, fits = scaling_rows(table, 0, quantities=("theta", "test_error"), theory=theory)
    assert [r["quantity"] for r in rows] == ["theta", "test error"] and set(fits) == {"theta",
                                                                                      "test_error"}
    assert rows[0]["limit"] == np.float64(fits["theta"]["limit"].value)
    assert abs(rows[0]["limit / theory - 1"]) < 1e-9 and abs(rows[1]["limit / theory - 1"]) < 1e-9
    table["n"][0, 0] = 1  # one seed at the smallest d: three d left, no form can be chosen
    assert scaling_rows(table, 0, theory=theory) == ([], {})


def _fits(**forms):
    """A choose_form-like result: ``form=(limit, se)`` each, the first the chosen one; the
    envelope is the hull of their 95% intervals (what the old rule took its error from)."""
    fits = {f: dict(limit=Estimate(v, v - 1.96 * se, v + 1.96 * se, "seeds"), se=se, chi2=1.0,
                    dof=3, p_value=0.8) for f, (v, se) in forms.items()}
    names = list(fits)
    lim = fits[names[0]]["limit"]
    env = Estimate(lim.value, min(f["limit"].lo for f in fits.values()),
                   max(f["limit"].hi for f in fits.values()), "seeds")
    return dict(form=names[0], limit=lim, envelope=env, fits=fits, acceptable=names)


def _envelope_rule(fit, acc, err, pub):
    """The rule issue 47 replaced: one SE from the envelope, centred on the chosen form."""
    from stumplib.book.verdicts import choose_theory

    e = fit["envelope"]
    se = (e.hi - e.lo) / 3.919927969
    return choose_theory([(e.value - acc) / np.hypot(se, err)], [(e.value - pub) / se])


def test_lowest_min_verdict_judges_every_acceptable_form_with_its_own_fit():
    """Within 2 SE of the accurate theory and 4 or more from the published in every form: holds;
    every form the other way round: fails; no published curve or no fit: undecided."""
    acc, err, pub = 0.002815, 1.4e-5, 0.002676
    near = _fits(a=(0.002812, 1.6e-5), b=(0.002818, 2.0e-5))
    assert lowest_min_verdict(near, acc, err, pub).status == "holds"
    assert lowest_min_verdict(_fits(a=(0.002676, 1.3e-5), b=(0.002680, 1.5e-5)), acc, err,
                              pub).status == "fails"
    assert lowest_min_verdict(near, acc, err, float("nan")).status == "undecided"
    assert lowest_min_verdict(None, acc, err, pub).status == "undecided"
    none = dict(near, acceptable=[])
    assert "no acceptable form" in lowest_min_verdict(none, acc, err, pub).sentence


def test_the_envelope_rule_and_the_per_form_rule_disagree_where_issue_47_found_them_apart():
    """Issue 47's numbers: the envelope's SE (2.76e-5) put the 1/d limit 0.0027731 at |z| 1.5
    from the accurate theory 0.002815 while printing an interval that excludes it; each form's
    own fit puts it 2.7 SE away (1/d; 2.6 with the theory's quadrature error) and 2.3
    (1/sqrt(d))."""
    acc, err, pub = 0.002815, 0.0, 0.0026763
    fit = _fits(**{"1/d": (0.0027731, 1.58e-5), "1/sqrt(d)": (0.0027516, 2.76e-5)})
    old = _envelope_rule(fit, acc, err, pub)
    assert "1.5 (accurate)" in old.sentence
    v = lowest_min_verdict(fit, acc, err, pub)
    assert v.status == "undecided"
    assert "1/d -2.7, +6.1" in v.sentence and "1/√d -2.3, +2.7" in v.sentence
    assert "1.5" not in v.sentence
    # the printed interval is the form's own: it and its z-score agree
    row = per_form_rows(fit, acc, err, pub)[0]
    assert row["form"] == "1/d" and row["95% interval"] == "[0.002742, 0.002804]"
    assert row["z accurate"] == "-2.7"
    # where the rules' statuses differ: the envelope's inflated SE lets the chosen form "follow"
    # the accurate theory at 3 of its own SE (accurate 0, published 10, in units of 1e-4)
    wide = _fits(a=(1.5e-4, 0.5e-4), b=(0.0, 1.0e-4))
    assert _envelope_rule(wide, 0.0, 0.0, 1e-3).status == "holds"
    assert lowest_min_verdict(wide, 0.0, 0.0, 1e-3).status == "undecided"
    # and one form 4 or more from both theories fails, which the envelope hid as undecided
    apart = _fits(a=(5e-4, 0.5e-4), b=(3e-4, 3e-4))
    assert _envelope_rule(apart, 0.0, 0.0, 1e-3).status == "undecided"
    assert lowest_min_verdict(apart, 0.0, 0.0, 1e-3).status == "fails"


def test_per_form_rows_show_each_form_then_the_largest_d_as_a_check():
    acc, err, pub = 0.0966, 1e-4, 0.104
    fit = _fits(**{"1/sqrt(d)": (0.0963, 0.00116), "1/d": (0.0972, 0.0007)})
    rows = per_form_rows(fit, acc, err, pub, check=(8000, 0.0967, 0.0009, 8), fmt=".4f",
                         quantity="θ")
    assert [r["form"] for r in rows] == ["1/sqrt(d)", "1/d",
                                         "seed mean at d = 8000 (8 seeds; a check)"]
    assert rows[0]["quantity"] == "θ" and rows[0]["limit ± SE"] == "0.0963 ± 0.0012"
    assert rows[2]["z accurate"] == f"{(0.0967 - acc) / np.hypot(0.0009, err):+.1f}"
    assert per_form_rows(None, acc, err, pub)[0]["form"].startswith("none")


def test_lowest_minima_rows_show_each_d_with_its_seeds_and_gap():
    n = np.array([8.0, 4.0])
    summ = {k: np.array([0.1, 0.2]) for k in (
        "informed_theta", "informed_theta_se", "lowest_theta", "lowest_theta_se",
        "informed_test_error", "informed_test_error_se", "lowest_test_error",
        "lowest_test_error_se", "theta_gap", "theta_gap_lo", "theta_gap_hi", "share_lower",
        "saturated", "distinct_mean", "distinct_max")}
    summ.update(ds=np.array([500, 1000]), seeds=n, seeds_ok=np.array([8.0, 3.0]))
    rows = lowest_minima_rows(summ)
    assert [r["d"] for r in rows] == [500, 1000]
    assert rows[0]["seeds"] == 8 and rows[1]["seeds"] == "3 of 4"
    assert rows[0]["theta gap [95%]"] == "0.1000 [0.1000, 0.1000]"
    minima = lowest_minima_rows(summ, "minima")
    assert [r["d"] for r in minima] == [500, 1000]
    assert minima[1]["test error lowest"] == "0.200000 ± 0.200000"
    with pytest.raises(ValueError, match="part"):
        lowest_minima_rows(summ, "both")


# ------------------------------------------------------------------ the confirmatory run's store
A0 = np.array([[0.6, 0.4], [0.4, 0.6]])
MODEL = dict(omega=0.3, sigma=0.5, lam=0.01, A=A0)
COMMAND = ("python3 scripts/phase_flat_window.py --d 8000 4000 2000 --seeds {} --stages "
           "landscape --seed 1 --workers 1 --no-progress --out scripts/PHASE_CONFIRM.npz")


def _search(d, seed, rng):
    """One seed's search records (three starts, the last the lowest) near the accurate theory:
    theta 0.0966 + 2/d, test error 0.002815 + 0.02/d, with seed noise."""
    th = np.array([0.11, 0.10, 0.0966 + 2.0 / d + 2e-4 * rng.standard_normal()])
    te = np.array([0.0030, 0.0029, 0.002815 + 0.02 / d + 2e-5 * rng.standard_normal()])
    one = dict(line_theta=np.linspace(0.082, 0.112, 7), line_loss=np.ones(7),
               line_q=np.ones(7), line_m=np.zeros(7), line_test_error=np.full(7, 3e-3),
               line_converged=np.ones(7, bool), line_sweeps_differ=np.zeros(7, bool),
               start_kind=np.array(["informed", "release", "rotation"]),
               loss=np.array([1.0, 0.9, 0.8]), theta=th, q=np.ones(3), m=np.zeros(3),
               test_error=te, converged=np.ones(3, bool), label=np.arange(3),
               lowest=np.array(2), saturated=np.array(True), n_distinct=np.array(3),
               d=np.array(d), alpha=np.array(1.0164), seconds=np.array(1.0),
               objective_seconds=np.array(1e-3))
    return {k: np.asarray(v)[None] for k, v in one.items()}


def _confirm_store(path, done, *, seeds="8 16 16", **change):
    """A store of scripts/phase_flat_window.py as the confirmatory run writes it, with the tasks
    ``done`` ([(d, seed)]) finished."""
    from stumplib.book.runs import CONFIRM_PARAMETERS
    from stumplib.sweep.readers import seed_task
    from stumplib.sweep.store import Store

    params = dict(CONFIRM_PARAMETERS, **{**MODEL, **change})
    rng = np.random.default_rng(0)
    with Store(path, kind="phase_flat_window", params=params,
               run={"command": COMMAND.format(seeds)}) as st:
        for d, s in done:
            st.put(seed_task(d, s), _search(d, s, rng), {"seconds": 1.0})
    return path


THEORIES = {"theta": (0.0966, 1e-4, 0.1040), "test_error": (0.002815, 1.4e-6, 0.0026763)}


def test_a_partial_confirmatory_store_says_how_far_it_got_and_decides_nothing(tmp_path):
    from stumplib.book.runs import CONFIRM_PARAMETERS, read_confirm
    from stumplib.book.sections.flat_window import confirm_rows, confirm_verdicts

    expect = dict(CONFIRM_PARAMETERS, **MODEL)
    p = _confirm_store(tmp_path / "c.npz", [(8000, 0), (2000, 0), (2000, 1)])
    conf = read_confirm(p, expect=expect)
    assert conf["state"] == "partial" and conf["done"] == 3 and conf["planned"] == 40
    assert conf["message"] == "3 of 40 tasks done."
    assert conf["seeds"] == {2000: 2, 4000: 0, 8000: 1}
    cv = confirm_verdicts(conf, THEORIES)
    for k in ("theta", "test", "landing"):
        assert cv[k].status == "undecided" and "3 of 40 tasks done" in cv[k].sentence
    assert cv["limits"] == {}
    rows = {r["d"]: r for r in confirm_rows(conf, cv["summary"])}
    assert rows[4000]["seeds"] == "0 of 16" and rows[4000]["theta lowest"] == "not yet run"
    assert rows[8000]["seeds"] == "1 of 8" and "one seed" in rows[8000]["test error lowest"]
    assert rows[2000]["seeds"] == "2 of 16" and " ± " in rows[2000]["theta lowest"]
    # no store at all: 0 of 40, undecided, every d "not yet run"
    none = read_confirm(tmp_path / "absent.npz", expect=expect)
    assert none["state"] == "absent" and "0 of 40 tasks done" in none["message"]
    assert confirm_verdicts(none, THEORIES)["landing"].status == "undecided"
    assert {r["theta lowest"] for r in confirm_rows(none, None)} == {"not yet run"}


def test_a_confirmatory_store_with_other_parameters_or_seeds_is_refused_naming_them(tmp_path):
    from stumplib.book.runs import CONFIRM_PARAMETERS, read_confirm
    from stumplib.book.sections.flat_window import confirm_verdicts

    expect = dict(CONFIRM_PARAMETERS, **MODEL)
    p = _confirm_store(tmp_path / "lam.npz", [(2000, 0)], lam=0.02)
    conf = read_confirm(p, expect=expect)
    assert conf["state"] == "refused" and conf["searches"] == {}
    assert "lam = 0.02 (this page: 0.01)" in conf["message"]
    assert "lam = 0.02" in confirm_verdicts(conf, THEORIES)["landing"].sentence
    q = _confirm_store(tmp_path / "seeds.npz", [(2000, 0)], seeds="4 4 4")
    conf = read_confirm(q, expect=expect)
    assert conf["state"] == "refused" and "plans seeds 4 at d = 8000" in conf["message"]


def test_a_complete_confirmatory_store_is_judged_per_form_on_its_three_d(tmp_path):
    """Every planned task done (a small plan): theta and the test error are extrapolated by the
    two-parameter forms the data do not reject and each judged per form; the landing row holds
    only when both hold."""
    from stumplib.book.runs import CONFIRM_PARAMETERS, read_confirm
    from stumplib.book.sections.flat_window import confirm_verdicts

    plan = {8000: 6, 4000: 6, 2000: 6}
    done = [(d, s) for d, n in plan.items() for s in range(n)]
    p = _confirm_store(tmp_path / "c.npz", done, seeds="6")
    conf = read_confirm(p, expect=dict(CONFIRM_PARAMETERS, **MODEL), plan=plan)
    assert conf["state"] == "complete" and conf["message"] == "18 of 18 tasks done."
    cv = confirm_verdicts(conf, THEORIES)
    for k in ("lowest_theta", "lowest_test_error"):
        assert set(cv["limits"][k]["fits"]) == {"1/d", "1/sqrt(d)"}  # one dof each
    assert cv["theta"].status == "holds" and cv["test"].status == "holds"
    assert cv["landing"].status == "holds"
    # against a theory the limit misses in every form, the claim fails, and so does the row
    far = dict(THEORIES, theta=(0.0900, 1e-4, 0.1040))
    cv = confirm_verdicts(conf, far)
    assert cv["theta"].status == "fails" and cv["landing"].status == "fails"


def _records(seeds, lowest):
    """Stacked search records of ``seeds``, two starts each; ``lowest``: {seed: (loss, theta,
    test error)} of the second start (the first: loss 1, theta 0.1, test error 3e-3)."""
    rows = [dict(loss=[1.0, lowest[s][0]], theta=[0.1, lowest[s][1]],
                 test_error=[3e-3, lowest[s][2]], converged=[True, True],
                 lowest=1 if lowest[s][0] < 1.0 else 0, s=s) for s in seeds]
    return {k: np.asarray([r[k] for r in rows]) for k in rows[0]}


def test_search_bias_counts_still_lower_minima_and_averages_over_every_recorded_seed():
    """A seed searched again whose new lowest minimum is lower by more than the margin shifts by
    new minus recorded; one within the margin (another minimum at the same loss) does not; the
    bias is the mean over all the recorded seeds of that d (issue 47, part 3)."""
    from stumplib.book.sections.flat_window import search_bias, shifted_summary

    rec = {4000: _records([0, 1, 2, 3], {0: (0.5, 0.097, 2.8e-3), 1: (0.5, 0.098, 2.8e-3),
                                         2: (0.5, 0.099, 2.8e-3), 3: (0.5, 0.100, 2.8e-3)})}
    new = {4000: _records([1, 3], {1: (0.5 - 1e-6, 0.100, 2.84e-3),
                                   3: (0.5 - 1e-10, 0.090, 2.6e-3)})}
    b = search_bias(rec, new)
    assert [(r["seed"], r["lower"], r["higher"]) for r in b["rows"]] == [
        (1, True, False), (3, False, False)]
    assert b["rows"][0]["d_theta"] == pytest.approx(0.002)
    assert b["rows"][0]["d_test"] == pytest.approx(4e-5) and b["rows"][1]["d_test"] == 0.0
    p = b["per_d"][4000]
    assert (p["rerun"], p["lower"], p["seeds"]) == (2, 1, 4)
    assert p["bias_theta"] == pytest.approx(0.002 / 4)
    assert p["bias_theta_se"] == pytest.approx(np.std([0, 0.002, 0, 0], ddof=1) / 2)
    assert p["bias_test"] == pytest.approx(1e-5)
    summ = {"ds": np.array([2000, 4000]), "lowest_theta": np.array([0.1, 0.098]),
            "lowest_test_error": np.array([3e-3, 2.8e-3]), "lowest_theta_se": np.ones(2)}
    moved = shifted_summary(summ, b["per_d"])
    assert moved["lowest_theta"].tolist() == pytest.approx([0.1, 0.0985])
    assert moved["lowest_test_error"].tolist() == pytest.approx([3e-3, 2.81e-3])
    assert summ["lowest_theta"][1] == 0.098  # the input is not changed
    # a search that ends above the recorded lowest missed it: counted, not a shift
    up = search_bias(rec, {4000: _records([2], {2: (0.5 + 1e-6, 0.12, 3e-3)})})
    assert up["rows"][0]["higher"] and up["per_d"][4000]["higher"] == 1
    assert up["per_d"][4000]["bias_test"] == 0.0
    with pytest.raises(ValueError, match="seed 7 at d = 4000 is not in the recorded sweep"):
        search_bias(rec, {4000: _records([7], {7: (0.4, 0.1, 3e-3)})})


def test_the_bias_store_is_read_as_far_as_it_got_and_refused_with_other_picks(tmp_path):
    from stumplib.book.runs import BIAS_PARAMETERS, read_bias
    from stumplib.sweep.readers import seed_task
    from stumplib.sweep.store import Store

    cmd = ("scripts/phase_flat_window.py --pick {} --theta-range 0.075 0.12 16 "
           "--stages landscape --seed 0 --out scripts/PHASE_BIAS.npz")
    expect = dict(BIAS_PARAMETERS, **MODEL)

    def store(path, picks, **change):
        with Store(path, kind="phase_flat_window", params=dict(expect, **change),
                   run={"command": cmd.format(picks)}) as st:
            r = _search(4000, 1, np.random.default_rng(0))
            st.put(seed_task(4000, 1), dict(r, s=np.array([1])), {"seconds": 1.0})
        return path

    b = read_bias(store(tmp_path / "b.npz", "4000:1,3,4,9,11 8000:1,2,3,4,7"), expect=expect)
    assert b["state"] == "partial" and b["seeds"] == {4000: 1, 8000: 0}
    assert b["message"] == "1 of 10 tasks done (1 of 5 at d = 4000, 0 of 5 at d = 8000)."
    assert np.asarray(b["searches"][4000]["s"]).tolist() == [1]
    r = read_bias(store(tmp_path / "o.npz", "4000:1,3"), expect=expect)
    assert r["state"] == "refused" and "picks {4000: (1, 3)}" in r["message"]
    t = read_bias(store(tmp_path / "t.npz", "4000:1,3,4,9,11 8000:1,2,3,4,7",
                        thetas=np.linspace(0.082, 0.112, 7).tolist()), expect=expect)
    assert t["state"] == "refused" and "thetas" in t["message"]
    assert read_bias(tmp_path / "none.npz", expect=expect)["state"] == "absent"


def test_bias_survival_says_which_verdict_keeps_its_status_under_the_measured_bias():
    """Seed means on the accurate theory (+ c/d, small errors): a tiny bias keeps both statuses
    ("survives"); a bias of many standard errors at d = 4000 and 8000 moves theta's limit off the
    theory and its status changes; the confirmatory run's part waits for its completion."""
    from stumplib.book.sections.flat_window import bias_survival

    ds = np.array([2000.0, 4000.0, 8000.0])
    summ = {"ds": ds, "seeds": np.full(3, 16.0),
            "lowest_theta": 0.0966 + 0.2 / ds, "lowest_theta_se": np.full(3, 5e-5),
            "lowest_test_error": 0.002815 + 0.002 / ds,
            "lowest_test_error_se": np.full(3, 5e-7)}
    for k in ("informed_theta", "informed_test_error"):
        summ[k], summ[f"{k}_se"] = np.full(3, np.nan), np.full(3, np.nan)
    small = {d: dict(bias_theta=1e-7, bias_test=1e-10) for d in (4000, 8000)}
    text = bias_survival({"recorded": (summ, "p_value"), "confirm": (None, "p_value")},
                         small, THEORIES, complete=False)
    assert "test error holds (survives); θ holds (survives)" in text
    assert "Section 4.4 (fresh seeds): not yet" in text and "d = 4000, d = 8000" in text
    big = {d: dict(bias_theta=-0.004, bias_test=0.0) for d in (4000, 8000)}
    text = bias_survival({"recorded": (summ, "p_value")}, big, THEORIES, complete=True)
    assert "test error holds (survives)" in text and "θ holds, " in text
    assert "with the bias" in text.split("θ holds")[1]
    assert bias_survival({"recorded": (summ, None)}, {}, THEORIES, complete=True).startswith(
        "Not measured yet")
