"""Claims judged: the registry's rule applied to the measured statistic, seed-checked and glued.

The chapters compute the statistic and call :func:`decide` (or :func:`decide_parts`, or
:func:`check` for a verdict that needs several inputs), which applies the registry's rule
(:mod:`stumplib.book.registry`) with the registry's arguments (the chapter passes only the
statistic and what describes it, never a target or a tolerance), glues the verdict
(``<key>_status``, ``_verdict``, ``_reason``) and the key number (``<key>_estimate``, ``_lo``,
``_hi``: the number the reason quotes), and checks the verdict against the committed seed audit
(:mod:`stumplib.book.audit`): a claim whose status differs between the audited seeds is reported
*undecided*, with the count of seeds behind each status.
"""
from __future__ import annotations

from typing import Any, Mapping

from stumplib.book import verdicts as V
from stumplib.book.glue import glue_estimate, glue_value, glue_verdict
from stumplib.book.audit import seed_agreement
from stumplib.book.registry import RULE_ARGS, ONE_ESTIMATE_RULES, REGISTRY, claim
from stumplib.book.runs import read_audit
from stumplib.core.stats import Estimate


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
    stumplib.book.verdicts.Verdict
    """
    c = claim(key)
    if c.rule not in ONE_ESTIMATE_RULES:
        raise ValueError(f"claim {key!r} is decided by {c.rule}, which takes more than one "
                         "estimate; call it through the chapter's library function")
    stated = set(context) & {"target", "bound", "tol", "exponent", "max_width"}
    if stated:
        raise ValueError(f"{', '.join(sorted(stated))} of claim {key!r} come from the registry, "
                         "not from the chapter")
    if not isinstance(statistic, Estimate):
        raise ValueError(f"statistic must be an Estimate; got {type(statistic).__name__}")
    args = {**RULE_ARGS.get(key, {}), **context}
    fn = getattr(V, c.rule)
    if c.rule in ("at_least", "at_most"):
        return fn(statistic, args.pop("bound"), **args)
    if c.rule == "against_target":
        return fn(statistic, args.pop("target"), **args)
    return fn(statistic, **args)


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
           audit: Mapping[str, Any] | None = None, glue: bool = True, why: str | None = None,
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
    why : the landing row's reason when the shortened sentence would drop what matters (a
        qualifier the row must keep); a seed disagreement is appended (see :func:`check`).
    **context : passed to the rule (see :func:`judge`).

    Returns
    -------
    the glued :class:`~stumplib.book.verdicts.Verdict`.
    """
    v = judge(key, statistic, **context)
    audit = read_audit() if audit is None else audit
    final = _seed_checked(key, v, profile, audit)
    if glue:
        glue_estimate(f"{key}_estimate", statistic)
        glue_value(f"{key}_rule_status", v.status)
        if why is not None and final is not v:
            why = f"{why.rstrip('.')}; the {seed_agreement(key, audit)['seeds']} audited seeds disagree"
        glue_verdict(key, final, why=why)
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
    verdict : stumplib.book.verdicts.Verdict
        The verdict the chapter's library function computed with ``key``'s rule.
    profile : str or None
        The chapter's profile (the audit applies to its own profile only; ``None``: any).
    audit : Mapping[str, Any] or None
        The seed audit (``None``: the committed :data:`AUDIT_FILE`).
    glue : bool
        Glue ``<key>_rule_status`` and the verdict (``False``: only return the verdict).
    why : str or None
        The landing row's reason when the shortened sentence would not quote the row's key
        number (see :func:`stumplib.glue_verdict`); a seed disagreement is appended.

    Returns
    -------
    the glued :class:`~stumplib.book.verdicts.Verdict`.
    """
    claim(key)
    audit = read_audit() if audit is None else audit
    final = _seed_checked(key, verdict, profile, audit)
    if glue:
        glue_value(f"{key}_rule_status", verdict.status)
        if why is not None and final is not verdict:
            why = f"{why.rstrip('.')}; the {seed_agreement(key, audit)['seeds']} audited seeds disagree"
        glue_verdict(key, final, why=why)
    return final


def decide_parts(key: str, parts: Mapping[str, Estimate], *, profile: str | None = None,
                 audit: Mapping[str, Any] | None = None, glue: bool = True,
                 **context: Any) -> V.Verdict:
    """:func:`decide` for a claim made of several statistics judged by the same rule (the head
    law's exponents ``p`` and ``q``): each part is judged with its name as the symbol, the parts
    are combined (:func:`stumplib.book.verdicts.combine`: ``partly`` when they differ), and the
    first part is glued as the key number ``<key>_estimate``.

    Parameters
    ----------
    key : a registry key.
    parts : ``{symbol: statistic}``, at least one; the first is the key number.
    profile, audit, glue, **context : as for :func:`decide`.

    Returns
    -------
    the glued :class:`~stumplib.book.verdicts.Verdict`.
    """
    if not parts:
        raise ValueError("parts must hold at least one statistic")
    vs = [judge(key, est, symbol=name, **context) for name, est in parts.items()]
    v = V.combine(vs, "; ".join(x.sentence.rstrip(".") for x in vs))
    audit = read_audit() if audit is None else audit
    final = _seed_checked(key, v, profile, audit)
    if glue:
        glue_estimate(f"{key}_estimate", next(iter(parts.values())))
        glue_value(f"{key}_rule_status", v.status)
        glue_verdict(key, final)
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
    audit = read_audit() if audit is None else audit
    keys = [c.key for c in REGISTRY if c.chapter == chapter]
    if not keys:
        raise ValueError(f"no claim of chapter {chapter!r} in the registry")
    out = {k: seed_agreement(k, audit)["text"] for k in keys}
    for k, text in out.items():
        glue_value(f"{k}_seed_agreement", text)
    glue_value("seed_audit_commit", str(audit.get("commit", "none"))[:10])
    return out

