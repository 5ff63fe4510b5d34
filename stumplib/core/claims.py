"""The claims registry: one stated rule per claim of the landing page, applied to the measured statistic.

Each landing row of ``intro.md`` is one :class:`Claim`: the claim in the paper's words, the statistic
a chapter measures, the target, the tolerance with its justification, and the name of the verdict
function of :mod:`stumplib.core.verdicts` that decides. The chapters compute the statistic and call
:func:`decide`, which applies the registry's rule with the registry's arguments (the chapter passes
only the statistic and what describes it, never a target or a tolerance), glues the verdict
(``<key>_status``, ``_verdict``, ``_reason``) and the key number (``<key>_estimate``, ``_lo``, ``_hi``:
the number the reason quotes), and checks the verdict against the committed seed audit
(``scripts/SEED_AUDIT.json``, written by ``scripts/seed_audit.py``): a claim whose status differs
between the audited seeds is reported *undecided*, with the count of seeds behind each status.

The page "How each claim is judged" (``judging.md``) renders :data:`REGISTRY` and the audit at build
time (:mod:`stumplib.core.sphinxext`), so the rules are visible before the numbers.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from stumplib.core import verdicts as V
from stumplib.core.stats import Estimate, coverage_ratio_range

__all__ = ["Claim", "REGISTRY", "claim", "rule_arguments", "judge", "decide", "decide_parts", "check",
           "AUDIT_FILE",
           "read_audit", "seed_agreement", "audit_code_line", "glue_seed_agreement"]


@dataclass(frozen=True)
class Claim:
    """One landing row: what is claimed, what is measured, and the rule that decides.

    Attributes
    ----------
    key : glue prefix: ``<key>_status``, ``_verdict``, ``_reason``, ``_estimate`` (+ ``_lo``,
        ``_hi``), ``_seed_agreement``.
    paper : ``"stump"`` or ``"phase"``.
    chapter : the chapter that measures it, e.g. ``"chapters/04_error_bound"``.
    claim : the claim in the paper's words (or ours, for a finding beyond the papers).
    statistic : what is measured.
    target : the target value or range, as text.
    tolerance : the tolerance and its justification.
    rule : the name of the verdict function in :mod:`stumplib.core.verdicts`.
    number : the glue name of the key number the landing row shows and the reason quotes
        (``""``: ``<key>_estimate``); its interval, where it has one, is ``<number>_lo``,
        ``<number>_hi``.
    """

    key: str
    paper: str
    chapter: str
    claim: str
    statistic: str
    target: str
    tolerance: str
    rule: str
    number: str = ""

    @property
    def key_number(self) -> str:
        """The glue name of the claim's key number (:attr:`number`, else ``<key>_estimate``)."""
        return self.number or f"{self.key}_estimate"


CH2, CH3, CH4 = ("chapters/02_population_dynamics", "chapters/03_finite_corpus",
                 "chapters/04_error_bound")
CH5, CH6 = "chapters/05_boundary_symmetrization", "chapters/06_positional_semantic"

_NO_TOL = "none: the interval alone decides"
_LOGS = ("none beyond the logarithms the Õ allows: with x̄ the grid's geometric middle, "
         "x^-1 (log x)^k has local slope -1 + k/ln x̄ (MODEL.md, 'Judging an Õ bound')")

#: the landing rows, in the order of intro.md
REGISTRY: tuple[Claim, ...] = (
    Claim("pop_calibration", "stump", CH2, "training first calibrates the relative label score",
          "largest share, over every start, of the growth of log β made before calibration ends "
          "(NaN when a start never calibrates)", "at most 10%",
          "none; 10% is the stated margin for 'first' (a start that calibrates late has made "
          "a few percent of its growth on the way)", "at_most"),
    Claim("pop_scale", "stump", CH2, "β(t) grows like t to the power 1/4",
          "the exponent of β(t) extrapolated to β → ∞ (regression of the local exponent on "
          "1, 1/β, log β/β; interval over correction model and fit range)", "1/4",
          "10^-3: the extrapolation's residual curvature (the correction model is known only to "
          "leading order); solver and quadrature errors are below 10^-5", "against_target"),
    Claim("pop_error", "stump", CH2, "the threshold error decays like t to the power −1/4",
          "the exponent of the RMSE extrapolated to β → ∞ (as for β)", "-1/4",
          "10^-3, as for β", "against_target"),
    Claim("certified_scale", "stump", CH3,
          "the certified interval grows with the corpus (linearly in m∧n, up to logarithms, "
          "for the (m∧n)^-1 rate)",
          "log-log slope of β* in m∧n over the worst shape (smallest β*) at each m∧n, the "
          "minimum taken in every bootstrap replicate", "growth like m∧n up to one logarithm",
          "none beyond the logarithms: x (log x)^-k has local slope 1 - k/ln x̄ "
          "(holds at or above k = 1, fails below k = 2)", "growth_up_to_logs"),
    Claim("bound_mn", "stump", CH4, "the frozen error has a (m∧n)^-1 term, Õ",
          "slope in m∧n of the two-term law fitted at the certified stop over the worst shape "
          "(largest error) at each m∧n; all-shape fit reported as robustness", "-1 up to logs",
          _LOGS, "rate_up_to_logs"),
    Claim("bound_N", "stump", CH4, "the frozen error has an N^-1 term, Õ",
          "slope in N of the two-term law fitted at the certified stop over every shape",
          "-1 up to logs", _LOGS, "rate_up_to_logs"),
    Claim("onehead_boundary", "stump", CH5, "one head fails near the boundary",
          "one-head MSE within 2/N of τ = 1 over its interior MSE, hand-set sharp head",
          "at least 10", "none; 10 (an order of magnitude) is the stated meaning of 'fails'",
          "at_least"),
    Claim("sym_interior", "stump", CH5,
          "reflected symmetrization gives about four times smaller interior MSE",
          "interior one-head MSE over symmetrized MSE, hand-set head β = 20N", "4",
          "5% of 4 (0.2): 'about four'; a head of finite β departs from the sharp limit by "
          "less (measured on the same contexts)", "against_target"),
    Claim("prior_risk_sym", "stump", CH5,
          "reflection alone does not remove the boundary failure (over the whole prior)",
          "whole-prior risk of the plain symmetrized head over the Bayes risk, τ ~ U[0, 1], "
          "hand-set head", "at least 2",
          "none; a factor 2 is the margin for 'near Bayes over the whole prior' (the two-head "
          "rule's)", "at_least"),
    Claim("prior_risk_aware", "stump", CH5,
          "the boundary-aware rule reaches the Bayes risk over the whole prior",
          "whole-prior risk of the boundary-aware rule over the Bayes risk, hand-set head", "1",
          "5%: the same margin as the interior floor", "against_target"),
    Claim("phase_transition", "phase", CH6, "a transition α_c exists at ω = 0.3",
          "α_c where the semantic and positional training losses cross", "found and located",
          "none: the interval is where the curves shifted by three quadrature errors cross",
          "located", number="phase_alpha_c_omega03"),
    Claim("phase_order", "phase", CH6, "α_l ≥ α_c",
          "α_l (semantic beats the linear positional baseline) against α_c", "α_l ≥ α_c",
          _NO_TOL, "ordering", number="phase_alpha_l_omega03"),
    Claim("phase_diagram", "phase", CH6, "the phase diagram over ω",
          "α_c and α_l at every ω of the grid", "both found, α_l ≥ α_c at every ω", _NO_TOL,
          "ordering", number="phase_diagram_alpha_c_w020"),
    Claim("gd_theory", "phase", CH6, "ERM minimisers follow the accurate theory",
          "z-scores against the accurate and the published theory of the minimisers' test "
          "error extrapolated to d → ∞ three ways (a straight line in 1/d, with a 1/d² term, "
          "without the smallest d; decided only where all three agree), and of the seed mean "
          "at the largest d (the key number)",
          "|z| ≤ 2 from the accurate theory, ≥ 4 from the published at one α",
          "2 and 4 standard errors: following and separating", "choose_theory",
          number="gd_dmax_z_accurate_1016"),
    Claim("own_over_path", "stump", CH3, "GD tracks beyond the certificate",
          "own-calibration tracking scale over β*, median over shapes [smallest, largest]",
          "at least 1", _NO_TOL, "at_least"),
    Claim("head", "stump", CH4, "head law error² = β^-2 + 2N^-2",
          "exponents p and q of the fitted head law", "1 each",
          "0.05: the law's second-order corrections (the one-sided tail trims at finite N)",
          "against_target", number="head_p"),
    Claim("gd_beats_bound", "stump", CH4, "GD keeps the head's law past the certified stop",
          "β × error at 2 max β* over β × error at the stop, median over diagonal shapes "
          "(the gain itself, about the ratio of the scales, follows from the end point and is "
          "an explanation, not a verdict)", "1",
          "0.1: a stated practical margin for 'keeps' (the N^-1 term moves β × error by "
          "under 1% at the largest N)", "against_target"),
    Claim("calib_mae", "stump", CH4, "m enters the error through calibration",
          "slope in m of the prior-averaged MAE of trained heads", "-1", _NO_TOL,
          "against_target"),
    Claim("sym_bayes", "stump", CH5, "the symmetrized head sits at the Bayes floor inside",
          "interior symmetrized MSE over Bayes MSE, hand-set head β = 20N", "1",
          "5%: a stated practical margin for 'at the floor'", "against_target"),
    Claim("sym_trained", "stump", CH5, "the trained head gains about four times inside",
          "interior one-head over symmetrized MSE of the trained head at the reference N "
          "(its dependence on N shown alongside)", "4", "5% of 4, as for the hand-set head",
          "against_target"),
    Claim("two_head", "stump", CH5, "a trained two-head model learns the symmetrization",
          "the trained two-head model's interior gain and whole-prior risk over Bayes",
          "interior gain at least 4, whole-prior risk within a factor 2 of Bayes",
          "none on the gain (the claim's four); a factor 2 on the risk, the margin for 'near "
          "Bayes over the whole prior'; both parts met holds, both missed fails, else partly",
          "combine", number="two_head_bayes_ratio"),
    Claim("phase_replay", "phase", CH6, "the published curves are replayed",
          "largest relative deviation of the replayed (stopped) 144-node iteration from the "
          "published overlaps, per branch", "at most 10^-3",
          "none; 10^-3 is the published curves' printed precision", "at_most",
          number="phase_stopped_pos_max_rel_dev"),
    Claim("phase_semantic_end", "phase", CH6, "where the semantic branch ends",
          "the α bracketed by the lowest converged semantic point and the highest without one",
          "found and bracketed", _NO_TOL, "located", number="phase_semantic_end_alpha"),
    Claim("phase_stability", "phase", CH6, "the semantic minimum is stable",
          "largest ∂F_m/∂m at the converged semantic points, checked by minimisation",
          "at most +1", "none: +1 is where the point repels for every damping", "at_most",
          number="phase_stability_derivative_max"),
)

#: the rule's arguments per claim (targets, bounds, tolerances: the registry's, not the chapter's);
#: a claim with a tolerance cannot hold on an interval wider than twice it (``max_width``): such an
#: interval does not resolve the claim to its own stated precision, and the claim is undecided
_ARGS: dict[str, dict[str, Any]] = {
    "pop_calibration": dict(bound=0.1, fmt=".3f"),
    "pop_scale": dict(target=0.25, tol=1e-3, fmt=".4f", target_text="1/4", max_width=0.002),
    "pop_error": dict(target=-0.25, tol=1e-3, fmt=".4f", target_text="-1/4", max_width=0.002),
    "certified_scale": dict(exponent=1.0, fmt=".2f"),
    "bound_mn": dict(exponent=-1.0, fmt=".2f"),
    "bound_N": dict(exponent=-1.0, fmt=".2f"),
    "onehead_boundary": dict(bound=10.0, fmt=".0f"),
    "sym_interior": dict(target=4.0, tol=0.2, fmt=".3f", target_text="4", max_width=0.4),
    "prior_risk_sym": dict(bound=2.0, fmt=".3g"),
    "prior_risk_aware": dict(target=1.0, tol=0.05, fmt=".3f", target_text="1", max_width=0.1),
    "own_over_path": dict(bound=1.0, fmt=".3g"),
    "head": dict(target=1.0, tol=0.05, fmt=".3g", max_width=0.1),
    "gd_beats_bound": dict(target=1.0, tol=0.1, fmt=".3f", target_text="1", max_width=0.2),
    "calib_mae": dict(target=-1.0, fmt=".2f"),
    "sym_bayes": dict(target=1.0, tol=0.05, fmt=".4f", target_text="1", max_width=0.1),
    "sym_trained": dict(target=4.0, tol=0.2, fmt=".3g", max_width=0.4),
    "phase_replay": dict(bound=1e-3, fmt=".1e"),
    "phase_stability": dict(bound=1.0, fmt=".2g"),
}

#: the rules :func:`judge` applies to one estimate (the others need several inputs; chapter 6's
#: library functions call them)
_ONE_ESTIMATE = {"at_least", "at_most", "against_target", "rate_up_to_logs", "growth_up_to_logs"}

_BY_KEY = {c.key: c for c in REGISTRY}


def claim(key: str) -> Claim:
    """The registry entry of ``key`` (a :class:`Claim`); ``KeyError`` naming the known keys.

    Parameters
    ----------
    key : str
        A registry key (``Claim.key``).

    Returns
    -------
    Claim
        The registry's entry for ``key``.
    """
    try:
        return _BY_KEY[key]
    except KeyError:
        raise KeyError(f"no claim {key!r} in the registry; known: {', '.join(_BY_KEY)}") from None


def rule_arguments(key: str) -> dict[str, Any]:
    """The registry's arguments of ``key``'s rule (target, bound, tolerance, exponent), a copy.

    Parameters
    ----------
    key : str
        A registry key; ``KeyError`` when it is not in the registry.

    Returns
    -------
    dict[str, Any]
        A fresh copy of the rule's keyword arguments (``{}`` when the rule takes none).
    """
    claim(key)
    return dict(_ARGS.get(key, {}))


def judge(key: str, statistic: Estimate, **context: Any) -> V.Verdict:
    """Apply the registry's rule of ``key`` to the measured statistic.

    Parameters
    ----------
    key : a registry key.
    statistic : the measured statistic with its interval.
    **context : what describes the statistic, passed to the rule: ``symbol`` (or ``variable``),
        ``x_mid`` for the log-rate rules, ``qualifier``. A target, bound or tolerance here is
        refused: the registry states them.

    Returns
    -------
    stumplib.core.verdicts.Verdict
    """
    c = claim(key)
    if c.rule not in _ONE_ESTIMATE:
        raise ValueError(f"claim {key!r} is decided by {c.rule}, which takes more than one "
                         "estimate; call it through the chapter's library function")
    stated = set(context) & {"target", "bound", "tol", "exponent", "max_width"}
    if stated:
        raise ValueError(f"{', '.join(sorted(stated))} of claim {key!r} come from the registry, "
                         "not from the chapter")
    if not isinstance(statistic, Estimate):
        raise ValueError(f"statistic must be an Estimate; got {type(statistic).__name__}")
    args = {**_ARGS.get(key, {}), **context}
    fn = getattr(V, c.rule)
    if c.rule in ("at_least", "at_most"):
        return fn(statistic, args.pop("bound"), **args)
    if c.rule == "against_target":
        return fn(statistic, args.pop("target"), **args)
    return fn(statistic, **args)


# --- the seed audit ------------------------------------------------------------------------

#: the committed output of ``scripts/seed_audit.py``
AUDIT_FILE = Path(__file__).resolve().parents[2] / "scripts" / "SEED_AUDIT.json"


def read_audit(path: str | Path | None = None) -> dict[str, Any]:
    """The seed audit (``{}`` when there is none): ``{"commit", "profile", "seeds", "claims":
    {key: {"status": [...], ...}}, ...}``.

    Parameters
    ----------
    path : str, pathlib.Path or None
        The audit's JSON file; ``None`` reads the committed :data:`AUDIT_FILE`.

    Returns
    -------
    dict[str, Any]
        The parsed JSON, or ``{}`` when the file does not exist.
    """
    p = Path(path) if path is not None else AUDIT_FILE
    if not p.is_file():
        return {}
    return json.loads(p.read_text())


def seed_agreement(key: str, audit: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """How the audited seeds agree on ``key``'s status.

    Parameters
    ----------
    key : str
        A registry key; ``KeyError`` when it is not in the registry.
    audit : Mapping[str, Any] or None
        The seed audit as :func:`read_audit` returns it; ``None`` reads the committed one.

    Returns
    -------
    ``{"text", "status", "agree", "seeds", "counts"}``: ``text`` is ``"5/5"`` (seeds with the
    most common status over seeds audited; a seed whose chapter failed counts in the denominator:
    ``"4/5, 1 failed"``) or ``"not audited"``; ``status`` that most common status (``None`` when
    not audited); ``agree`` whether every audited seed gave it; ``counts`` a ``{status: seeds}``
    mapping (``"failed"`` for failed seeds).
    """
    claim(key)
    audit = read_audit() if audit is None else audit
    entry = audit.get("claims", {}).get(key, {})
    st, failed = [s for s in entry.get("status", []) if s], int(entry.get("failed", 0))
    if not st and not failed:
        return {"text": "not audited", "status": None, "agree": True, "seeds": 0, "counts": {}}
    counts = Counter(st)
    top, n = counts.most_common(1)[0] if st else (None, 0)
    if failed:
        counts["failed"] = failed
    total = len(st) + failed
    return {"text": f"{n}/{total}" + (f", {failed} failed" if failed else ""), "status": top,
            "agree": n == total, "seeds": total, "counts": dict(counts)}


def audit_code_line(audit: Mapping[str, Any] | None = None, built: str | None = None) -> str:
    """One line comparing the code the seed audit ran with the code the pages were built with.

    Parameters
    ----------
    audit : Mapping[str, Any] or None
        The seed audit (``None``: the committed :data:`AUDIT_FILE`); ``scripts/seed_audit.py``
        records the library's ``code_version``.
    built : str or None
        The built code's version (``None``: :func:`stumplib.core.version.code_version` now).

    Returns
    -------
    str
        ``"Audited code: <hash>; built code: <hash>."`` followed by whether they are the same code,
        and plainly when they differ or the audit does not record its code.
    """
    from stumplib.core.version import code_version

    audit = read_audit() if audit is None else audit
    built = code_version() if built is None else built
    audited = audit.get("code_version")
    line = f"Audited code: {audited or 'not recorded'}; built code: {built}."
    reruns = sorted({str(r["code_version"]) for r in audit.get("reruns", [])
                     if r.get("code_version") and r.get("code_version") != audited})
    if reruns:
        line += f" Some chapters were rerun at code {', '.join(reruns)}."
    if not audit:
        return line + " No seed audit is committed."
    if not audited:
        return line + (" The audit does not record the code it ran, so it may not describe these "
                       "pages: rerun scripts/seed_audit.py on this code.")
    if audited != built or reruns:
        return line + (" They differ: the seed audit ran on other code than these pages, so its "
                       "agreement may not hold for them; rerun scripts/seed_audit.py on this code.")
    return line + " The same code: the audit describes these pages."


def _seed_checked(key: str, v: V.Verdict, profile: str | None,
                  audit: Mapping[str, Any]) -> V.Verdict:
    """``v``, or undecided when the audited seeds of this profile disagree on ``key``."""
    if not audit or (profile is not None and audit.get("profile") != profile):
        return v
    a = seed_agreement(key, audit)
    if a["agree"]:
        return v
    parts = ", ".join(f"{s} at {n}" for s, n in sorted(a["counts"].items(), key=lambda x: -x[1]))
    return V.Verdict("undecided", f"{v.sentence[:-1]}; across {a['seeds']} seeds the rule says "
                                  f"{parts}, so the status is not decided.")


def decide(key: str, statistic: Estimate, *, profile: str | None = None,
           audit: Mapping[str, Any] | None = None, glue: bool = True,
           **context: Any) -> V.Verdict:
    """Judge ``key`` by its registry rule, check it against the seed audit, and glue it.

    Glues ``<key>_estimate`` (+ ``_lo``, ``_hi``: the statistic, the number the reason quotes),
    ``<key>_rule_status`` (the rule's status at this seed, which the audit records), and the
    verdict (``<key>_status``, ``_verdict``, ``_reason``) after the seed check: a claim whose
    audited seeds of ``profile`` disagree is *undecided*.

    Parameters
    ----------
    key : a registry key.
    statistic : the measured statistic.
    profile : the chapter's profile (the audit applies to its own profile only; ``None``: any).
    audit : the audit (default: the committed :data:`AUDIT_FILE`).
    glue : glue the values (``False``: only return the verdict).
    **context : passed to the rule (see :func:`judge`).

    Returns
    -------
    the glued :class:`~stumplib.core.verdicts.Verdict`.
    """
    v = judge(key, statistic, **context)
    audit = read_audit() if audit is None else audit
    final = _seed_checked(key, v, profile, audit)
    if glue:
        from stumplib.core import book

        book.glue_estimate(f"{key}_estimate", statistic)
        book.glue_value(f"{key}_rule_status", v.status)
        book.glue_verdict(key, final)
    return final


def check(key: str, verdict: V.Verdict, *, profile: str | None = None,
          audit: Mapping[str, Any] | None = None, glue: bool = True,
          why: str | None = None) -> V.Verdict:
    """Seed-check and glue a verdict computed by a chapter's library function with ``key``'s rule
    (chapter 6's verdicts need several inputs): glues ``<key>_rule_status`` and the verdict, which
    is *undecided* where the audited seeds of ``profile`` disagree (see :func:`decide`).

    Parameters
    ----------
    key : str
        A registry key; ``KeyError`` when it is not in the registry.
    verdict : stumplib.core.verdicts.Verdict
        The verdict the chapter's library function computed with ``key``'s rule.
    profile : str or None
        The chapter's profile (the audit applies to its own profile only; ``None``: any).
    audit : Mapping[str, Any] or None
        The seed audit (``None``: the committed :data:`AUDIT_FILE`).
    glue : bool
        Glue ``<key>_rule_status`` and the verdict (``False``: only return the verdict).
    why : str or None
        The landing row's reason when the shortened sentence would not quote the row's key
        number (see :func:`stumplib.core.book.glue_verdict`); a seed disagreement is appended.

    Returns
    -------
    the glued :class:`~stumplib.core.verdicts.Verdict`.
    """
    claim(key)
    audit = read_audit() if audit is None else audit
    final = _seed_checked(key, verdict, profile, audit)
    if glue:
        from stumplib.core import book

        book.glue_value(f"{key}_rule_status", verdict.status)
        if why is not None and final is not verdict:
            why = f"{why.rstrip('.')}; the {seed_agreement(key, audit)['seeds']} audited seeds disagree"
        book.glue_verdict(key, final, why=why)
    return final


def decide_parts(key: str, parts: Mapping[str, Estimate], *, profile: str | None = None,
                 audit: Mapping[str, Any] | None = None, glue: bool = True,
                 **context: Any) -> V.Verdict:
    """:func:`decide` for a claim made of several statistics judged by the same rule (the head
    law's exponents ``p`` and ``q``): each part is judged with its name as the symbol, the parts
    are combined (:func:`stumplib.core.verdicts.combine`: ``partly`` when they differ), and the
    first part is glued as the key number ``<key>_estimate``.

    Parameters
    ----------
    key : a registry key.
    parts : ``{symbol: statistic}``, at least one; the first is the key number.
    profile, audit, glue, **context : as for :func:`decide`.

    Returns
    -------
    the glued :class:`~stumplib.core.verdicts.Verdict`.
    """
    if not parts:
        raise ValueError("parts must hold at least one statistic")
    vs = [judge(key, est, symbol=name, **context) for name, est in parts.items()]
    v = V.combine(vs, "; ".join(x.sentence.rstrip(".") for x in vs))
    audit = read_audit() if audit is None else audit
    final = _seed_checked(key, v, profile, audit)
    if glue:
        from stumplib.core import book

        book.glue_estimate(f"{key}_estimate", next(iter(parts.values())))
        book.glue_value(f"{key}_rule_status", v.status)
        book.glue_verdict(key, final)
    return final


def glue_seed_agreement(chapter: str, audit: Mapping[str, Any] | None = None) -> dict[str, str]:
    """Glue ``<key>_seed_agreement`` (``"5/5"`` or ``"not audited"``) for every claim of
    ``chapter`` (``"chapters/02_population_dynamics"``), and ``seed_audit_commit`` (the audited
    commit, ``"none"`` without an audit).

    Parameters
    ----------
    chapter : str
        The chapter as the registry names it (``"chapters/02_population_dynamics"``); a
        ``ValueError`` when no claim belongs to it.
    audit : Mapping[str, Any] or None
        The seed audit (``None``: the committed :data:`AUDIT_FILE`).

    Returns
    -------
    ``{key: text}``.
    """
    from stumplib.core import book

    audit = read_audit() if audit is None else audit
    keys = [c.key for c in REGISTRY if c.chapter == chapter]
    if not keys:
        raise ValueError(f"no claim of chapter {chapter!r} in the registry")
    out = {k: seed_agreement(k, audit)["text"] for k in keys}
    for k, text in out.items():
        book.glue_value(f"{k}_seed_agreement", text)
    book.glue_value("seed_audit_commit", str(audit.get("commit", "none"))[:10])
    return out



# --- tables for the page "How each claim is judged" ----------------------------------------
RULE_HEADER = ("claim", "chapter", "statistic", "target", "tolerance", "rule")


def registry_rows() -> list[list[str]]:
    """One row per claim of :data:`REGISTRY`, the columns of :data:`RULE_HEADER`."""
    from stumplib.core.verdicts import typeset

    return [[typeset(c.claim), c.chapter.removeprefix("chapters/"), typeset(c.statistic),
             typeset(c.target), typeset(c.tolerance), c.rule] for c in REGISTRY]


AUDIT_HEADER = ("claim", "status per seed", "seeds agree", "key number (mean)",
                "seed-to-seed SD", "mean half-width", "coverage ratio")


def audit_rows(audit: Mapping[str, Any] | None = None) -> list[list[str]]:
    """One row per registry claim from the seed audit (``"not audited"`` where it has none).

    The coverage ratio is the mean nominal half-width of the key number's 95% interval over
    ``1.96`` times its standard deviation between seeds: about 1 when the intervals are as wide as
    the seed-to-seed spread says. With ``k`` seeds the ratio is itself uncertain; it is marked
    "under-covers" below the range nominal intervals give 95% of the time
    (:func:`stumplib.core.stats.coverage_ratio_range`) and "wide" above it; inside, the number
    stands alone (consistent with nominal coverage).

    Parameters
    ----------
    audit : Mapping[str, Any] or None
        The seed audit (``None``: the committed :data:`AUDIT_FILE`).

    Returns
    -------
    list of list of str
        One row per registry claim, the columns of :data:`AUDIT_HEADER`.
    """
    from stumplib.core.verdicts import number, typeset

    audit = read_audit() if audit is None else audit
    rows = []
    for c in REGISTRY:
        a = audit.get("claims", {}).get(c.key)
        if not a or not [s for s in a.get("status", []) if s]:
            rows.append([typeset(c.claim), "not audited", "", "", "", "", ""])
            continue
        agree = seed_agreement(c.key, audit)

        def num(k: str, fmt: str = ".3g") -> str:
            v = a.get(k)
            return "" if v is None or not isinstance(v, (int, float)) or v != v else number(v, fmt)
        cover = "no spread" if a.get("sd") == 0 else num("coverage_ratio", ".2f")
        k = sum(v is not None for v in a.get("value", []))
        ratio = a.get("coverage_ratio")
        if cover and isinstance(ratio, (int, float)) and k >= 2:
            lo, hi = coverage_ratio_range(k)
            cover += " under-covers" if ratio < lo else " wide" if ratio > hi else ""
        st = [s or "-" for s in a["status"]]
        per_seed = f"{st[0]} at all {len(st)}" if len(set(st)) == 1 else ", ".join(st)
        rows.append([typeset(c.claim), per_seed, agree["text"],
                     num("mean"), num("sd"), num("half_width"), cover])
    return rows
