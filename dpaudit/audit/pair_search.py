"""Searching for the input that leaks most, before the audit, without invalidating its bounds.

An audit certifies a lower bound for *one* pair of datasets given to a function in *one*
setting; a black box does not say which leaks most. :func:`search_inputs` is the one search:
batteries of library functions, ``dpaudit library`` and tests of code all call it. It takes
candidates (:class:`~dpaudit.mechanisms.inputs.Candidate`: a setting of the function, such as
its bounds, number of records, dtype and ``epsilon``, and a pair of datasets for it; made by
:func:`~dpaudit.mechanisms.pairs.space_candidates` from a function's declared input space),
and works in two stages:

1. **Screen.** A cheap audit of every candidate (``screen_trials`` trials, fewer for costly
   candidates), read at a low confidence (``screen_confidence``, default 0.5: close to a point
   estimate) as a ranking statistic: its ``eps`` lower bound divided by the ``eps`` the
   candidate's claim states (just its ``eps`` when there is no claim). The budget (outputs,
   weighted by what one output costs, and seconds) decides how many candidates are screened.
2. **Confirm.** The best candidate, and up to ``finalists - 1`` more whose screen promised a
   refutation (a screen ``eps`` at least the claimed ``eps``; without a claim, any ``eps``
   above 0), are audited again at full budget on **fresh** outputs, each at confidence
   ``1 - (1 - confidence) / finalists`` (fixed before the screen, however many are confirmed).

Why the confirmed bounds stay valid. The screen and the confirmation draw from disjoint random
streams (different seeds, hence independent outputs), and only the *choice* of candidates
depends on the screen's outputs. Conditionally on that choice, each confirmation is an ordinary
audit of a fixed candidate on fresh outputs, wrong with probability at most
``(1 - confidence) / finalists``; averaging over the choice keeps that. By the union bound all
confirmed bounds hold together with probability at least ``confidence``, whatever the screen
chose and however many candidates it saw: the screen spends none of the error budget, because
none of its numbers is ever reported as a bound. The number of trials of a confirmation may
depend on how long the screen took (a seconds budget), never on what its outputs were.

:func:`search_pairs` is the same search over pairs of one mechanism (user-given pairs, every
record position, boundary values, random pairs: :func:`record_pairs`; every answer pattern of a
query vector: :func:`answer_pairs`; these and more generators live in
:mod:`dpaudit.mechanisms.pairs`), with ``pilot`` for ``screen``.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from dpaudit._core.streams import TAGS
from dpaudit._core.validation import check_integer, check_positive, check_probability, check_seed
from dpaudit.attacks.base import Attack
from dpaudit.audit.engine import audit_mechanism, most_outputs, selection_trials_for
from dpaudit.audit.result import AuditResult
from dpaudit.bounds.tradeoff import TradeoffCurve
from dpaudit.mechanisms.base import NeighbouringPair
from dpaudit.mechanisms.inputs import Candidate
from dpaudit.mechanisms.pairs import answer_pairs, record_pairs

__all__ = [
    "InputSearchResult",
    "PairSearchResult",
    "SearchBudget",
    "answer_pairs",
    "record_pairs",
    "search_inputs",
    "search_pairs",
]

#: Entropy mixed into the pilots' seeds, so they never share a stream with the final audits.
_PILOT_TAG = TAGS["pair_search_pilot"]


@dataclass
class PairSearchResult:
    """What :func:`search_pairs` tried, what it chose and the final audits.

    ``epsilon_lower_bound`` is the largest final bound, valid at ``confidence`` (each of the
    ``len(finals)`` final audits ran at ``1 - (1 - confidence)/len(finals)``). ``pilot_epsilon``
    holds the pilots' bounds: the selection statistic, not a reported result.
    """

    candidates: list[NeighbouringPair]
    pilot_epsilon: np.ndarray
    chosen: list[int]
    finals: list[AuditResult]
    confidence: float
    delta: float
    pilot_trials: int
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def best(self) -> AuditResult:
        """The final audit with the largest ``eps`` lower bound."""
        return max(self.finals, key=lambda r: r.epsilon_lower_bound(self.delta))

    @property
    def pair(self) -> NeighbouringPair:
        """The pair of :attr:`best`."""
        return self.best.pair

    @property
    def epsilon_lower_bound(self) -> float:
        """The largest final ``eps`` lower bound at ``delta``, valid at ``confidence``."""
        return float(max(r.epsilon_lower_bound(self.delta) for r in self.finals))

    def to_frame(self) -> Any:
        """One row per candidate: description, pilot bound, chosen, final bound (if chosen)."""
        import pandas as pd

        final = {
            i: r.epsilon_lower_bound(self.delta)
            for i, r in zip(self.chosen, self.finals, strict=True)
        }
        return pd.DataFrame(
            {
                "candidate": range(len(self.candidates)),
                "pair": [
                    p.description or f"{p.d.tolist()} vs {p.d_prime.tolist()}"
                    for p in self.candidates
                ],
                "pilot_epsilon": self.pilot_epsilon,
                "chosen": [i in final for i in range(len(self.candidates))],
                "final_epsilon": [final.get(i, np.nan) for i in range(len(self.candidates))],
            }
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (the final audits as their own ``to_dict`` records)."""
        return {
            "confidence": self.confidence,
            "delta": self.delta,
            "pilot_trials": self.pilot_trials,
            "epsilon_lower_bound": self.epsilon_lower_bound,
            "candidates": [p.to_dict() for p in self.candidates],
            "pilot_epsilon": self.pilot_epsilon.tolist(),
            "chosen": list(self.chosen),
            "finals": [r.to_dict() for r in self.finals],
            **self.settings,
        }


def _pilot_seed(seed: int, index: int) -> int:
    state = np.random.SeedSequence([seed, _PILOT_TAG, index]).generate_state(2, dtype=np.uint64)
    value = int(state[0] >> np.uint64(1))
    return value if value != seed else int(state[1] >> np.uint64(1))


def _checked_candidates(candidates: Sequence[NeighbouringPair]) -> list[NeighbouringPair]:
    pairs = list(candidates)
    if not pairs:
        raise ValueError("candidates must hold at least one NeighbouringPair")
    for i, pair in enumerate(pairs):
        if not isinstance(pair, NeighbouringPair):
            raise ValueError(
                f"candidates[{i}] must be a NeighbouringPair, got {type(pair).__name__}"
            )
    return pairs


def _pilot_seeds(seed: int, n: int, final_seeds: set[int]) -> list[int]:
    """The screen's seeds: :func:`_pilot_seed` of each candidate, moved past any final seed."""
    seeds = []
    for i in range(n):
        s = _pilot_seed(seed, i)
        while s in final_seeds:
            s += 1
        seeds.append(s)
    return seeds


#: Fewest trials of a screen audit and of a confirmation (costly candidates get fewer trials,
#: never fewer than these).
MIN_SCREEN_TRIALS = 32
MIN_CONFIRM_TRIALS = 200

#: Share of a seconds budget the screen may take; the confirmations get the rest.
SCREEN_SECONDS_SHARE = 0.5

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


@dataclass(frozen=True)
class SearchBudget:
    """What a search may spend: ``outputs`` drawn from the audited function, each weighted by
    its cost (:attr:`~dpaudit.mechanisms.inputs.Candidate.weight`: one output on a million
    records counts as many on ten), and ``seconds``. ``None``: no limit of that kind."""

    outputs: float | None = None
    seconds: float | None = None

    def __post_init__(self) -> None:
        if self.outputs is not None:
            object.__setattr__(self, "outputs", check_positive("budget outputs", self.outputs))
        if self.seconds is not None:
            object.__setattr__(self, "seconds", check_positive("budget seconds", self.seconds))

    @classmethod
    def parse(cls, text: str, name: str = "budget") -> SearchBudget:
        """A budget from words: ``"2e6"`` (outputs), ``"600s"``, ``"20m"`` or ``"1.5h"``
        (seconds), or both, comma-separated (``"2e6,20m"``). ``ValueError`` naming ``name``
        otherwise."""
        outputs = seconds = None
        parts = [p.strip() for p in str(text).split(",")]
        if not 1 <= len(parts) <= 2 or not all(parts):
            raise ValueError(
                f"{name} must be OUTPUTS, SECONDS (600s, 20m, 1h) or both, got {text!r}"
            )
        for part in parts:
            match = re.fullmatch(r"([0-9.eE+]+)\s*([smh]?)", part)
            try:
                value = float(match.group(1)) if match else math.nan
            except ValueError:
                value = math.nan
            if not (math.isfinite(value) and value > 0):
                raise ValueError(
                    f"{name} must be OUTPUTS, SECONDS (600s, 20m, 1h) or both, got {text!r}"
                )
            unit = match.group(2) if match else ""
            if unit:
                if seconds is not None:
                    raise ValueError(f"{name} gives seconds twice: {text!r}")
                seconds = value * _UNITS[unit]
            else:
                if outputs is not None:
                    raise ValueError(f"{name} gives outputs twice: {text!r}")
                outputs = value
        return cls(outputs, seconds)

    def share(self, parts: int, workers: int = 1) -> SearchBudget:
        """One of ``parts`` equal shares, run ``workers`` at a time: ``outputs / parts`` and
        ``seconds * workers / parts``."""
        return SearchBudget(
            None if self.outputs is None else self.outputs / parts,
            None if self.seconds is None else self.seconds * workers / parts,
        )

    def describe(self) -> str:
        """The budget in words."""
        parts = []
        if self.outputs is not None:
            parts.append(f"{self.outputs:,.0f} outputs")
        if self.seconds is not None:
            parts.append(f"{self.seconds:,.0f} s")
        return " and ".join(parts) or "no limit"


def screen_trials_for(trials: int, weight: float) -> int:
    """The screen trials of a candidate whose output costs ``weight``: ``trials / weight``,
    at least :data:`MIN_SCREEN_TRIALS` (and at most ``trials``)."""
    return min(trials, max(MIN_SCREEN_TRIALS, int(trials / weight)))


def confirm_trials_for(trials: int, weight: float) -> int:
    """The confirmation trials of a candidate whose output costs ``weight``: ``trials /
    weight``, at least :data:`MIN_CONFIRM_TRIALS` (and at most ``trials``)."""
    return min(trials, max(MIN_CONFIRM_TRIALS, int(trials / weight)))


def _selection(trials: int) -> int:
    return max(trials // 2, 2)


def search_cost(
    weights: Sequence[float], trials: int, screen_trials: int, finalists: int
) -> tuple[float, float, int]:
    """What a search of candidates of ``weights`` may cost when it screens all of them: the
    screen's weighted outputs, the confirmations' most weighted outputs, and the most outputs
    drawn in all (unweighted: for a function called once per output, the most calls). A lone
    candidate is confirmed without a screen."""
    if len(weights) == 1:
        t = confirm_trials_for(trials, weights[0])
        drawn = most_outputs(t, _selection(t))
        return 0.0, drawn * weights[0], drawn
    screen = [
        most_outputs(t, _selection(t))
        for t in (screen_trials_for(screen_trials, w) for w in weights)
    ]
    confirm = [
        most_outputs(t, _selection(t)) for t in (confirm_trials_for(trials, w) for w in weights)
    ]
    weighted = sorted(o * w for o, w in zip(confirm, weights, strict=True))[-finalists:]
    return (
        sum(o * w for o, w in zip(screen, weights, strict=True)),
        sum(weighted),
        sum(screen) + sum(sorted(confirm)[-finalists:]),
    )


@dataclass
class InputSearchResult:
    """What :func:`search_inputs` screened, what it chose and the confirmations.

    ``screen_epsilon`` holds each candidate's screen ``eps`` (NaN where it was not screened or
    raised, ``errors`` saying why), ``screen_score`` the ranking statistic (that ``eps`` over
    the candidate's claimed ``eps``): the selection statistic, never a reported result.
    ``finals`` are the confirmations of the candidates ``chosen`` (in that order), each at
    confidence ``1 - (1 - confidence) / finalists`` (:attr:`levels`); ``claims`` the claim of
    each.
    """

    candidates: list[Candidate]
    screen_epsilon: np.ndarray
    screen_score: np.ndarray
    errors: dict[int, str]
    chosen: list[int]
    finals: list[AuditResult]
    claims: list[TradeoffCurve | None]
    confidence: float
    delta: float
    finalists: int
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def levels(self) -> dict[str, Any]:
        """The error budget ``gamma = 1 - confidence`` each stage spends: the screen none (its
        bounds are never reported), each confirmation ``gamma / finalists``."""
        gamma = 1.0 - self.confidence
        return {"screen": 0.0, "confirmation": [gamma / self.finalists] * len(self.finals)}

    def _score(self, j: int) -> float:
        bound = self.finals[j].epsilon_lower_bound(self.delta)
        claim = self.claims[j]
        if claim is None:
            return bound
        claimed = claim.epsilon(self.delta)
        return bound / claimed if claimed > 0 else (math.inf if bound > 0 else 0.0)

    @property
    def best_index(self) -> int:
        """Position in :attr:`finals` of the confirmation to report: among those whose verdict
        on their claim (at ``delta``) is "violated", else among all, the one whose bound is
        largest against its claim (the first of equals)."""
        violated = [
            claim is not None and r.verdict(claim, [self.delta])["verdict"] == "violated"
            for r, claim in zip(self.finals, self.claims, strict=True)
        ]
        keys = [(violated[j], self._score(j)) for j in range(len(self.finals))]
        return max(range(len(keys)), key=lambda j: keys[j])

    @property
    def best(self) -> AuditResult:
        """The confirmation whose bound is largest against its claim."""
        return self.finals[self.best_index]

    @property
    def candidate(self) -> Candidate:
        """The candidate of :attr:`best`."""
        return self.candidates[self.chosen[self.best_index]]

    @property
    def claim(self) -> TradeoffCurve | None:
        """The claim of :attr:`best`."""
        return self.claims[self.best_index]

    @property
    def epsilon_lower_bound(self) -> float:
        """The ``eps`` lower bound at ``delta`` of :attr:`best`, valid (with the other
        confirmations') at ``confidence``."""
        return float(self.best.epsilon_lower_bound(self.delta))

    def to_frame(self) -> Any:
        """One row per candidate: its description, screen ``eps`` and score, whether it was
        chosen, its confirmed bound (if chosen) and its error (if it raised)."""
        import pandas as pd

        final = {
            i: r.epsilon_lower_bound(self.delta)
            for i, r in zip(self.chosen, self.finals, strict=True)
        }
        return pd.DataFrame(
            {
                "candidate": range(len(self.candidates)),
                "generator": [c.generator for c in self.candidates],
                "setting": [
                    "" if c.setting is None else c.setting.describe() for c in self.candidates
                ],
                "screen_epsilon": self.screen_epsilon,
                "screen_score": self.screen_score,
                "chosen": [i in final for i in range(len(self.candidates))],
                "final_epsilon": [final.get(i, np.nan) for i in range(len(self.candidates))],
                "error": [self.errors.get(i, "") for i in range(len(self.candidates))],
            }
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (the confirmations as their own ``to_dict`` records)."""
        return {
            "confidence": self.confidence,
            "delta": self.delta,
            "finalists": self.finalists,
            "levels": self.levels,
            "screened": int(np.isfinite(self.screen_epsilon).sum()),
            "candidates": len(self.candidates),
            "chosen": [
                {
                    "index": i,
                    "generator": self.candidates[i].generator,
                    "setting": None
                    if self.candidates[i].setting is None
                    else self.candidates[i].setting.to_dict(),
                    "screen_epsilon": float(self.screen_epsilon[i]),
                }
                for i in self.chosen
            ],
            "finals": [r.to_dict() for r in self.finals],
            **self.settings,
        }


def _ranked(
    scores: np.ndarray, promising: np.ndarray, weights: Sequence[float], finalists: int
) -> list[int]:
    """The candidates to confirm: the best screened one by score (then the cheaper, then the
    first), and after it at most ``finalists - 1`` more, by score, whose screen ``promising``
    says is worth a confirmation."""
    screened = [i for i in range(len(scores)) if not np.isnan(scores[i])]
    order = sorted(screened, key=lambda i: (-scores[i], weights[i], i))
    return order[:1] + [i for i in order[1:] if promising[i]][: finalists - 1]


def search_inputs(
    audited: Callable[[Candidate], tuple[Any, TradeoffCurve | None]],
    candidates: Sequence[Candidate],
    attack: Callable[[NeighbouringPair], Attack | None] | None = None,
    *,
    trials: int = 10_000,
    screen_trials: int = 64,
    screen_confidence: float = 0.5,
    screen_selection_trials: int | None = None,
    finalists: int = 2,
    delta: float = 0.0,
    confidence: float = 0.95,
    budget: SearchBudget | None = None,
    seed: int = 0,
    screen_seed: int | None = None,
    skip_errors: bool = True,
    n_jobs: int = 1,
    **audit_options: Any,
) -> InputSearchResult:
    """Screen every candidate cheaply, then confirm the most promising on fresh outputs.

    Parameters
    ----------
    audited:
        ``audited(candidate) -> (mechanism, claim)``: the mechanism to audit at the
        candidate's setting (e.g. a :class:`~dpaudit.mechanisms.blackbox.BlackBox` of the
        function with those bounds, size and ``epsilon``) and the trade-off curve it claims
        there (``None``: no claim; candidates are then ranked by their screen ``eps`` alone).
    candidates:
        The candidates (:func:`dpaudit.mechanisms.pairs.space_candidates`, or
        :meth:`~dpaudit.mechanisms.inputs.Candidate.given` pairs), in the order the screen
        takes them when the budget cannot pay for all.
    attack:
        ``attack(pair) -> Attack`` builds a fresh attack for each audit; ``None``: the engine's
        default attack.
    trials, screen_trials:
        Evaluation trials per dataset of each confirmation and of each screen audit; a
        candidate whose output costs ``weight`` gets ``trials / weight`` of each, at least
        :data:`MIN_CONFIRM_TRIALS` and :data:`MIN_SCREEN_TRIALS` (and at most the numbers
        given).
    screen_confidence:
        Confidence of the screen's bounds (a ranking statistic only).
    screen_selection_trials:
        Selection trials per dataset of each screen audit (default: half its trials).
    finalists:
        Most candidates confirmed, each at confidence ``1 - (1 - confidence) / finalists``: the
        best screened one, and after it those whose screen ``eps`` reached the claimed ``eps``
        (any ``eps`` above 0 when there is no claim).
    delta:
        The ``delta`` at which ``eps`` is ranked and reported.
    confidence:
        Confidence that every confirmed bound holds.
    budget:
        :class:`SearchBudget`. ``outputs``: the screen takes candidates in order while it can
        still pay for its own audits and for ``finalists`` confirmations of the costliest
        candidate taken; ``seconds``: the screen stops after
        :data:`SCREEN_SECONDS_SHARE` of them, and a confirmation that its candidate's own
        screen speed predicts to overrun the rest gets fewer trials (never fewer than
        :data:`MIN_CONFIRM_TRIALS`): a function may be far slower on some inputs than on
        others. ``None``: every candidate, full trials.
    seed:
        Seed of the confirmations (confirmation ``j`` uses ``seed + j``).
    screen_seed:
        Seed from which the screen audits' seeds derive (``SeedSequence([screen_seed, tag,
        i])``, never equal to a confirmation's); default ``seed``. The selection depends only
        on the screen: the same ``screen_seed`` with another ``seed`` chooses the same
        candidates and confirms them on other outputs.
    skip_errors:
        A candidate whose audit raises is left out and its error kept in
        :attr:`InputSearchResult.errors` (the function does not accept that input); ``False``:
        the exception propagates.
    n_jobs:
        Workers of each audit (:func:`dpaudit.audit_mechanism`).
    audit_options:
        Passed to every audit (``strategy``, ...); ``selection_trials`` to the confirmations
        only (default: half of each confirmation's trials).

    Raises
    ------
    ValueError
        Bad arguments, or a budget that cannot pay for one confirmation. When every candidate's
        screen raised, the first candidate's exception is raised again.
    """
    cands = list(candidates)
    if not cands:
        raise ValueError("candidates must hold at least one Candidate")
    for i, c in enumerate(cands):
        if not isinstance(c, Candidate):
            raise ValueError(f"candidates[{i}] must be a Candidate, got {type(c).__name__}")
    trials = check_integer("trials", trials, minimum=1)
    screen_trials = check_integer("screen_trials", screen_trials, minimum=1)
    finalists = check_integer("finalists", finalists, minimum=1, maximum=len(cands))
    delta = check_probability("delta", delta, high_open=True)
    seed = check_seed("seed", seed)
    screen_seed = (
        seed if screen_seed is None else check_integer("screen_seed", screen_seed, minimum=0)
    )
    confidence = check_probability("confidence", confidence, low_open=True, high_open=True)
    screen_confidence = check_probability(
        "screen_confidence", screen_confidence, low_open=True, high_open=True
    )
    if screen_selection_trials is not None:
        screen_selection_trials = check_integer(
            "screen_selection_trials", screen_selection_trials, minimum=2
        )
    if budget is not None and not isinstance(budget, SearchBudget):
        raise ValueError(f"budget must be a SearchBudget, got {type(budget).__name__}")
    budget = budget or SearchBudget()
    weights = [c.weight for c in cands]

    def confirm_cost(i: int) -> float:
        t = confirm_trials_for(trials, weights[i])
        return most_outputs(t, audit_options.get("selection_trials") or _selection(t)) * weights[i]

    if (
        budget.outputs is not None
        and finalists * min(map(confirm_cost, range(len(cands)))) > budget.outputs
    ):
        raise ValueError(
            f"budget of {budget.outputs:,.0f} outputs cannot pay for {finalists} confirmation(s) "
            f"of {min(map(confirm_cost, range(len(cands)))):,.0f} weighted outputs each; raise it "
            "or lower trials"
        )

    def run(c: Candidate, pair: NeighbouringPair, **options: Any) -> tuple[AuditResult, Any]:
        mechanism, claim = audited(c)
        fresh = None if attack is None else attack(pair)
        result = audit_mechanism(
            mechanism, pair, fresh, n_jobs=n_jobs, **{**audit_options, **options}
        )
        return result, claim

    start = time.perf_counter()
    final_seeds = {seed + j for j in range(finalists)}
    seeds = _pilot_seeds(screen_seed, len(cands), final_seeds)
    eps = np.full(len(cands), np.nan)
    score = np.full(len(cands), np.nan)
    speed = np.zeros(len(cands))  # seconds per weighted output of each candidate's screen
    promising = np.zeros(len(cands), dtype=bool)
    errors: dict[int, str] = {}
    first_error: BaseException | None = None
    spent = 0.0
    reserve = 0.0
    stopped = ""
    for i, c in enumerate(cands if len(cands) > 1 else []):  # a lone candidate: no choice
        elapsed = time.perf_counter() - start
        if budget.seconds is not None and elapsed >= SCREEN_SECONDS_SHARE * budget.seconds:
            stopped = f"seconds: screen stopped after {i} of {len(cands)} candidates"
            break
        t = screen_trials_for(screen_trials, weights[i])
        selection = screen_selection_trials or _selection(t)
        cost = most_outputs(t, selection) * weights[i]
        held = max(reserve, finalists * confirm_cost(i))
        if budget.outputs is not None and spent + cost + held > budget.outputs:
            continue  # a costlier candidate than the budget allows; a cheaper one may fit
        try:
            pair = c.pair()
            began = time.perf_counter()  # the audit's own time: what a confirmation repeats
            result, claim = run(
                c,
                pair,
                trials=t,
                seed=seeds[i],
                confidence=screen_confidence,
                selection_trials=selection,
            )
        except Exception as exc:  # the function refuses this input: not in its input space
            if not skip_errors:
                raise
            errors[i] = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
            first_error = first_error or exc
            spent += cost
            continue
        spent += cost
        reserve = held
        speed[i] = (time.perf_counter() - began) / cost
        eps[i] = result.epsilon_lower_bound(delta)
        if claim is None:
            score[i] = eps[i]
            promising[i] = eps[i] > 0
        else:
            claimed = claim.epsilon(delta)
            score[i] = eps[i] / claimed if claimed > 0 else (math.inf if eps[i] > 0 else 0.0)
            promising[i] = score[i] >= 1.0
    screen_seconds = time.perf_counter() - start
    chosen = _ranked(score, promising, weights, finalists) if len(cands) > 1 else [0]
    if not chosen:
        if len(errors) == len(cands):
            assert first_error is not None
            raise first_error
        # the budget paid for no screen: the first candidate, chosen without one
        chosen = [next(i for i in range(len(cands)) if i not in errors)]
    level = 1.0 - (1.0 - confidence) / finalists
    finals: list[AuditResult] = []
    claims: list[TradeoffCurve | None] = []
    kept: list[int] = []
    cut = []
    overall = screen_seconds / spent if spent else 0.0  # seconds per weighted output
    for j, i in enumerate(chosen):
        t = confirm_trials_for(trials, weights[i])
        rate = speed[i] or overall
        if budget.seconds is not None and rate > 0:
            left = (budget.seconds - (time.perf_counter() - start)) / (len(chosen) - j)
            predicted = rate * confirm_cost(i)
            if predicted > left:
                t = max(min(t, MIN_CONFIRM_TRIALS), int(t * max(left, 0.0) / predicted))
                cut.append(i)
        try:
            result, claim = run(
                cands[i],
                cands[i].pair(),
                trials=t,
                seed=seed + j,
                confidence=level,
                selection_trials=audit_options.get("selection_trials") or _selection(t),
            )
        except Exception as exc:
            if not skip_errors:
                raise
            errors[i] = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
            first_error = first_error or exc
            continue
        finals.append(result)
        claims.append(claim)
        kept.append(i)
    if not finals:
        assert first_error is not None
        raise first_error
    return InputSearchResult(
        candidates=cands,
        screen_epsilon=eps,
        screen_score=score,
        errors=errors,
        chosen=kept,
        finals=finals,
        claims=claims,
        confidence=confidence,
        delta=delta,
        finalists=finalists,
        settings={
            "trials": trials,
            "screen_trials": screen_trials,
            "screen_confidence": screen_confidence,
            "seed": seed,
            "screen_seed": screen_seed,
            "budget": {"outputs": budget.outputs, "seconds": budget.seconds},
            "screen_seconds": round(screen_seconds, 3),
            **({"stopped": stopped} if stopped else {}),
            **({"trials_cut_by_seconds": cut} if cut else {}),
        },
    )


def _mechanism_of(mechanism: Any, candidate: Candidate) -> tuple[Any, None]:
    return mechanism, None


def search_pairs(
    mechanism: Any,
    candidates: Sequence[NeighbouringPair],
    attack: Callable[[NeighbouringPair], Attack | None] | None = None,
    *,
    trials: int,
    pilot_trials: int = 20_000,
    pilot_confidence: float = 0.5,
    pilot_selection_trials: int | None = None,
    finalists: int = 1,
    delta: float = 0.0,
    seed: int = 0,
    confidence: float = 0.95,
    n_jobs: int = 1,
    **audit_options: Any,
) -> PairSearchResult:
    """Choose the pairs with the largest pilot ``eps`` lower bound, then audit them on fresh
    trials: :func:`search_inputs` over pairs of one mechanism.

    Parameters
    ----------
    mechanism:
        The mechanism audited. It needs no pair of its own: every audit is given its candidate
        (a :class:`~dpaudit.mechanisms.blackbox.BlackBox` without ``dataset`` and ``neighbour``
        is searched like any other).
    candidates:
        The candidate pairs (e.g. the user's pairs plus :func:`record_pairs` or
        :func:`answer_pairs`).
    attack:
        ``attack(pair) -> Attack`` builds a fresh attack for each pair (learning attacks must not
        be shared between pairs); ``None``: the engine's default attack, a fresh one per audit
        (the likelihood ratio when the mechanism knows its density, else
        :class:`~dpaudit.attacks.DeltaLeak`, which learns from each audit's own fit sample in
        which direction the pair moves the output, so pairs that move it down are seen as well
        as pairs that move it up, at no cost to the bounds).
    trials, pilot_trials:
        Evaluation trials per dataset of each final audit and of each pilot (the screen).
    pilot_confidence:
        Confidence of the pilots' bounds (a ranking statistic only).
    pilot_selection_trials:
        Selection trials per dataset of each pilot (default: those of the final audits, from
        ``audit_options`` or the engine's default); fewer make the pilots cheaper.
    finalists:
        How many of the best candidates get a final audit (each at confidence
        ``1 - (1 - confidence)/finalists``); the best pilot, and after it only pilots that
        certified some ``eps`` above 0.
    delta:
        The ``delta`` at which ``eps`` is ranked and reported.
    seed:
        Seed of the final audits (finalist ``j`` uses ``seed + j``); the pilots use seeds derived
        from ``SeedSequence([seed, tag, i])``, never equal to a final seed.
    audit_options:
        Passed to :func:`dpaudit.audit` (``strategy``, ``selection_trials``, ...).
    """
    pairs = _checked_candidates(candidates)
    pilot_trials = check_integer("pilot_trials", pilot_trials, minimum=1)
    trials = check_integer("trials", trials, minimum=1)
    finalists = check_integer("finalists", finalists, minimum=1, maximum=len(pairs))
    delta = check_probability("delta", delta, high_open=True)
    seed = check_seed("seed", seed)
    confidence = check_probability("confidence", confidence, low_open=True, high_open=True)
    pilot_confidence = check_probability(
        "pilot_confidence", pilot_confidence, low_open=True, high_open=True
    )
    # The engine's default selection samples, stated: search_inputs would halve them.
    if pilot_selection_trials is None:
        pilot_selection_trials = audit_options.get("selection_trials") or selection_trials_for(
            mechanism, pilot_trials
        )
    audit_options.setdefault("selection_trials", selection_trials_for(mechanism, trials))
    found = search_inputs(
        partial(_mechanism_of, mechanism),
        [Candidate.given(pair) for pair in pairs],
        attack,
        trials=trials,
        screen_trials=pilot_trials,
        screen_confidence=pilot_confidence,
        screen_selection_trials=pilot_selection_trials,
        finalists=finalists,
        delta=delta,
        confidence=confidence,
        seed=seed,
        skip_errors=False,
        n_jobs=n_jobs,
        **audit_options,
    )
    return PairSearchResult(
        candidates=pairs,
        pilot_epsilon=found.screen_epsilon,
        chosen=found.chosen,
        finals=found.finals,
        confidence=found.confidence,
        delta=found.delta,
        pilot_trials=pilot_trials,
        settings={
            "trials": found.settings["trials"],
            "finalists": finalists,
            "seed": seed,
            "pilot_confidence": found.settings["screen_confidence"],
            "pilot_selection_trials": pilot_selection_trials,
        },
    )
