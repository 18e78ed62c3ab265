"""Words and numbers of a report: number formatting, labels and the one-sentence verdict."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dpaudit._core.numbers import format_number, format_probability
from dpaudit.mechanisms.base import METHOD_KINDS
from dpaudit.reports.records import from_json_value

__all__ = [
    "format_number",
    "format_probability",
    "format_delta",
    "verdict_sentence",
    "sequential_sentence",
    "report_summary",
    "BOUNDS_TABLE_NOTE",
    "reach_note",
    "verdict_label",
    "NO_CLAIM",
    "claim_label",
    "METHOD_TITLES",
    "method_title",
    "level_per_test",
    "attack_label",
]

#: Title of each theory method: ``(short, long)``. The short title heads the columns of the
#: tables and names an accountant claim (``PLD accountant``); the long one labels the curves of
#: the figures, where there is room for a few words.
METHOD_TITLES: dict[str, tuple[str, str]] = {
    "exact": ("exact", "exact"),
    "pld": ("PLD", "PLD accountant"),
    "rdp": ("RDP", "RDP"),
    "gdp_clt": ("GDP CLT", "GDP CLT"),
    "berry_esseen": ("Berry–Esseen", "Berry–Esseen"),
    "advanced": ("advanced", "advanced composition"),
    "kov": ("KOV", "optimal composition (KOV)"),
    "last_iterate": ("last iterate", "last iterate (final model, Dirac canary)"),
}


def method_title(method: str, *, long: bool = False) -> str:
    """Title of a theory method (``pld`` -> ``PLD``, or ``PLD accountant`` with ``long=True``);
    a long title marks an approximation, which is no bound (``GDP CLT (approx.)``). A method
    without a title is named by its key."""
    short, full = METHOD_TITLES.get(method, (method, method))
    if not long:
        return short
    return f"{full} (approx.)" if METHOD_KINDS.get(method) == "approximation" else full


#: What each attack class does, in a few words (its own short label names the variant).
_ATTACK_WORDS = {
    "LikelihoodRatio": "the exact likelihood ratio of the two output laws (Neyman–Pearson)",
    "Threshold": "a threshold on the output, a coordinate of it or a projection",
    "Learned": "a likelihood ratio learned from training outputs",
    "DeltaLeak": "a learned score plus tests on exact output events",
    "MembershipInference": "membership inference from the target's loss or confidence",
    "Tracing": "correlation of the released mean with the target record",
    "scores": "scores computed outside dpaudit",
}


def attack_label(attack: Mapping[str, Any]) -> str:
    """The attack of a record (``record["attack"]``) in a few words: its short label and what
    it does, e.g. ``Learned(histogram): a likelihood ratio learned from training outputs``.
    Its configuration is left out; the parameters table shows it on a row of its own."""
    name = str(attack.get("name"))
    words = _ATTACK_WORDS.get(str(attack.get("class")))
    return f"{name}: {words}" if words else name


def format_delta(key: str | float) -> str:
    """A delta for display: ``0``, ``1e-05`` -> ``1e-05``, ``0.001``."""
    x = float(key)
    return "0" if x == 0 else f"{x:.3g}"


#: How an audit without a claim is shown in place of a verdict: it measured lower bounds and
#: tested nothing, so it gets neither the green of a claim that held nor the red of a refuted one.
NO_CLAIM = "no claim tested"


def level_per_test(record: Mapping[str, Any]) -> str | None:
    """The confidence of each test of the record's family as a report writes it (``"98.75%"``),
    or ``None`` when the record has no family of several tests."""
    family = record.get("family")
    if not isinstance(family, Mapping) or family.get("tests", 1) <= 1:
        return None
    return f"{100 * family['confidence_per_test']:.4g}%"


def verdict_label(record: Mapping[str, Any]) -> str:
    """The verdict as a report shows it: ``"violated"``, ``"consistent"`` (a claim was tested
    and held) or :data:`NO_CLAIM` (there was no claim to test)."""
    verdict = str(record.get("verdict"))
    if verdict == "consistent" and not record.get("claim"):
        return NO_CLAIM
    return verdict


def claim_label(record: Mapping[str, Any]) -> str:
    """How the claim of an audit is named in sentences and legends."""
    claim = record.get("claim")
    if not claim:
        return "no claim"
    table = claim.get("table") or {}
    kind = table.get("kind")
    if kind == "approx_dp":
        return f"({format_number(table.get('eps'))}, {format_number(table.get('delta', 0.0))})-DP"
    if kind == "gdp":
        return f"{format_number(table.get('mu'))}-GDP"
    if kind == "accountant":
        return f"{method_title(table.get('method') or 'default')} accountant"
    return str(claim.get("name", "the claim"))


def _claim_phrase(record: Mapping[str, Any]) -> str:
    table = (record.get("claim") or {}).get("table") or {}
    if table.get("kind") == "accountant":
        return f"the claim of the mechanism's {claim_label(record)}"
    return f"the claim {claim_label(record)}"


def _first_delta_summary(record: Mapping[str, Any]) -> str:
    bounds = record.get("epsilon_lower_bounds") or {}
    if not bounds:
        return ""
    key = next(iter(bounds))
    lower = format_number(bounds[key], rounding="down")
    text = f"the measured ε lower bound at δ = {format_delta(key)} is {lower}"
    claim = record.get("claim") or {}
    claimed = (claim.get("epsilon") or {}).get(key)
    if claimed is not None:
        text += f" against ε = {format_number(claimed)} claimed"
        tight = (claim.get("tightness") or {}).get(key)
        if tight is not None:
            text += f" (tightness {format_number(tight, 3)})"
    return text


#: The note under every report's table of lower bounds against theory (HTML and Markdown).
BOUNDS_TABLE_NOTE = (
    "ε lower bounds hold at the stated confidence (the family's confidence per test, as in the "
    "verdict). ceiling: the most any attack could certify with this many trials (a perfect "
    "attack, no errors at all); a bound near it is limited by the trials, not by the attack. "
    "tightness = lower bound / theoretical ε: 1 means the audit meets the theory; above 1 "
    "against a valid bound means a violation; 0 against ∞ means the theory gives no finite ε "
    "(e.g. an RDP conversion at that δ)."
)


def reach_note(record: Mapping[str, Any]) -> str | None:
    """For an audit that observes only the final model of DP-SGD (theory ``last_iterate``,
    ``record["observe"]`` ``"final"`` or ``"final_canary"``): what this threat model can reach, the
    last-iterate ``eps``, beside the composition's (the PLD accountant's) and their ratio, at the
    first reported ``delta``. ``None`` for any other audit."""
    theory = record.get("theory") or {}
    if "last_iterate" not in theory or record.get("observe") not in ("final", "final_canary"):
        return None
    key = next(iter(theory["last_iterate"].get("epsilon") or {}), None)
    reach = (theory["last_iterate"].get("epsilon") or {}).get(key)
    composed = ((theory.get("pld") or {}).get("epsilon") or {}).get(key)
    if reach is None or composed is None or not reach > 0:
        return None
    return (
        f"Only the final model is observed. For the Dirac canary this threat model can reach "
        f"the last-iterate curve, ε = {format_number(reach)} at δ = {format_delta(key)}; the "
        f"composition of every step (PLD accountant) states ε = {format_number(composed)}, "
        f"{format_number(composed / reach)} times as much, which no final-model audit of this "
        "canary can certify. For other canaries and losses the last-iterate curve is a "
        "prediction, not a bound."
    )


def report_summary(records: Sequence[Mapping[str, Any]]) -> str:
    """The first line of a report, the same in every format: how many audits, how many claims
    were refuted, and whether every verdict is the one its audit expected (an audit of a
    deliberately wrong claim expects "violated")."""
    violated = sum(1 for r in records if r.get("verdict") == "violated")
    unexpected = sum(1 for r in records if r.get("verdict") != r.get("expect", "consistent"))
    untested = sum(1 for r in records if verdict_label(r) == NO_CLAIM)
    summary = f"{len(records)} audit{'s' if len(records) != 1 else ''}, {violated} violated"
    if untested:
        summary += f", {untested} with {NO_CLAIM}"
    if unexpected:
        summary += f"; {unexpected} not as expected"
    else:
        summary += "; all verdicts as expected"
    return summary


def sequential_sentence(record: Mapping[str, Any]) -> str:
    """When and why a sequential audit (``dpaudit run --until-decided``) stopped, in one or two
    sentences; ``""`` for an audit of fixed size."""
    seq = record.get("sequential")
    if not isinstance(seq, Mapping):
        return ""
    outputs = max(seq.get("outputs_per_dataset") or [0])
    looks = int(seq.get("looks_at_most", 0))
    text = (
        f"Sequential audit: stopped after {outputs:,} outputs per dataset (look "
        f"{seq.get('looks')} of at most {looks}, phase {seq.get('phases')}) because "
        f"{seq.get('reason')}; the claim's e-value is {format_number(seq.get('e_value'), 4)} "
        f"(it refutes at {format_number(seq.get('e_threshold'), 4)})."
    )
    certified = seq.get("certified_epsilon")
    if certified is not None:
        text += (
            f" Certified (anytime-valid): ε ≥ {format_number(certified, rounding='down')} at "
            f"δ = {format_delta(seq.get('delta', 0.0))}."
        )
    return text + (
        f" The bounds of this report are read at level {format_number(seq.get('family_gamma'), 3)},"
        " this look's share of a level split over every look, so they hold at whatever look the "
        "audit stopped."
    )


def verdict_sentence(record: Mapping[str, Any]) -> str:
    """The verdict of an audit in one sentence, naming the witnessing test when it is violated."""
    confidence = from_json_value(record.get("confidence"))
    level = f"{100 * confidence:g}%" if confidence is not None else "the stated"
    claim = _claim_phrase(record)
    witness = record.get("witness")
    if record.get("verdict") == "violated" and witness:
        a_up, b_up = witness.get("alpha_upper"), witness.get("beta_upper")
        claimed = witness.get("claimed_beta")
        test = "a test"
        if witness.get("threshold") is not None:
            test += f" (score threshold {format_number(witness['threshold'])})"
        a_text = format_probability(a_up, rounding="up")
        b_text = format_probability(b_up, rounding="up")
        if witness.get("order") == "d_prime_d":
            detail = (
                f"with the roles of D and D′ swapped, {test} has type I error ≤ {b_text} "
                f"and type II error ≤ {a_text}"
            )
        else:
            detail = f"{test} has α ≤ {a_text} and β ≤ {b_text}"
        sentence = f"Violated: {claim} is refuted at {level} confidence — {detail}"
        if claimed is not None:
            sentence += (
                f", while the claim allows no type II error below {format_probability(claimed)} "
                "at that type I error"
            )
        sentence += "."
    elif record.get("verdict") == "violated":
        sentence = f"Violated: {claim} is refuted at {level} confidence."
    elif not record.get("claim"):
        summary = _first_delta_summary(record)
        sentence = "No claim tested: this audit measured lower bounds only"
        sentence += f"; {summary}." if summary else "."
    else:
        summary = _first_delta_summary(record)
        sentence = f"Consistent: no test refutes {claim} at {level} confidence"
        sentence += f"; {summary}." if summary else "."
    stop = sequential_sentence(record)
    if stop:
        sentence += " " + stop
    each = level_per_test(record)
    if each is not None:
        sentence += (
            f" The {record['family']['tests']} tests of this audit (eps at each delta, mu"
            + (", the claim's own test" if record.get("claim") else "")
            + f") share the confidence: each at {each}."
        )
    if record.get("expect") == "violated":
        if record.get("verdict") == "violated":
            sentence += " This was expected: the claim is deliberately wrong."
        else:
            sentence += " The claim is deliberately wrong, and this audit failed to catch it."
    return sentence
