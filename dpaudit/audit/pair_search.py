"""Searching for a bad neighbouring pair before the audit, without invalidating its bounds.

An audit certifies a lower bound for *one* pair; a black box does not say which pair leaks most.
:func:`search_pairs` tries a family of candidates (user-given pairs, every record position,
boundary values, random pairs: :func:`record_pairs`; every answer pattern of a query vector:
:func:`answer_pairs`; these and more generators live in :mod:`dpaudit.mechanisms.pairs`) with
a cheap **pilot** audit each, ranks them by the pilot's ``eps`` lower bound at a low confidence
(``pilot_confidence``, default 0.5: close to a point estimate, which ranks better than a bound
that small pilots would leave at zero), and runs the **final** audit of the best ``finalists``
candidates on fresh trials.

Why the final bound stays valid. The pilots and the final audits use disjoint random streams
(different seeds, hence independent trials), and only the *choice* of pair depends on the pilot
data. Conditionally on that choice the final audit is an ordinary audit of a fixed pair on fresh
trials, so its bound is wrong with probability at most ``gamma = 1 - confidence``; averaging over
the choice keeps the same bound. With ``m`` finalists each final audit runs at confidence
``1 - gamma/m`` and the largest of their bounds is reported: by the union bound all ``m`` hold
simultaneously with probability at least ``1 - gamma``. The pilots' own bounds are never
reported as results (they were the selection statistic).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpaudit._core.streams import TAGS
from dpaudit._core.validation import check_integer, check_probability, check_seed
from dpaudit.attacks.base import Attack
from dpaudit.audit.engine import audit_mechanism
from dpaudit.audit.result import AuditResult
from dpaudit.mechanisms.base import NeighbouringPair
from dpaudit.mechanisms.pairs import answer_pairs, record_pairs

__all__ = ["PairSearchResult", "answer_pairs", "record_pairs", "search_pairs"]

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


def _pilot_seeds(seed: int, n: int, finalists: int) -> list[int]:
    """The pilots' seeds: :func:`_pilot_seed` of each candidate, moved past any final seed."""
    finals_seeds = {seed + j for j in range(finalists)}
    seeds = []
    for i in range(n):
        s = _pilot_seed(seed, i)
        while s in finals_seeds:
            s += 1
        seeds.append(s)
    return seeds


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
    """Choose the pair with the largest pilot ``eps`` lower bound, then audit it on fresh trials.

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
        Evaluation trials per dataset of each final audit and of each pilot.
    pilot_confidence:
        Confidence of the pilots' bounds (a ranking statistic only).
    pilot_selection_trials:
        Selection trials per dataset of each pilot (default: those of the final audits, from
        ``audit_options`` or the engine's default); fewer make the pilots cheaper.
    finalists:
        How many of the best candidates get a final audit (each at confidence
        ``1 - (1 - confidence)/finalists``).
    delta:
        The ``delta`` at which ``eps`` is ranked and reported.
    seed:
        Seed of the final audits (finalist ``j`` uses ``seed + j``); the pilots use seeds derived
        from ``SeedSequence([seed, tag, i])``, never equal to a final seed.
    audit_options:
        Passed to :func:`dpaudit.audit` (``strategy``, ``selection_trials``, ...).
    """
    pairs = _checked_candidates(candidates)
    trials = check_integer("trials", trials, minimum=1)
    pilot_trials = check_integer("pilot_trials", pilot_trials, minimum=1)
    finalists = check_integer("finalists", finalists, minimum=1, maximum=len(pairs))
    delta = check_probability("delta", delta, high_open=True)
    seed = check_seed("seed", seed)
    confidence = check_probability("confidence", confidence, low_open=True, high_open=True)
    pilot_confidence = check_probability(
        "pilot_confidence", pilot_confidence, low_open=True, high_open=True
    )
    pilot_options: dict[str, Any] = {}
    if pilot_selection_trials is not None:
        pilot_options["selection_trials"] = check_integer(
            "pilot_selection_trials", pilot_selection_trials, minimum=2
        )

    def run(pair: NeighbouringPair, **options: Any) -> AuditResult:
        fresh = None if attack is None else attack(pair)
        return audit_mechanism(
            mechanism, pair, fresh, n_jobs=n_jobs, **{**audit_options, **options}
        )

    seeds = _pilot_seeds(seed, len(pairs), finalists)
    pilot = np.empty(len(pairs))
    for i, (pair, s) in enumerate(zip(pairs, seeds, strict=True)):
        result = run(
            pair, trials=pilot_trials, seed=s, confidence=pilot_confidence, **pilot_options
        )
        pilot[i] = result.epsilon_lower_bound(delta)
    chosen = [int(i) for i in np.argsort(-pilot, kind="stable")[:finalists]]
    level = 1.0 - (1.0 - confidence) / finalists
    finals = [
        run(pairs[i], trials=trials, seed=seed + j, confidence=level) for j, i in enumerate(chosen)
    ]
    return PairSearchResult(
        candidates=pairs,
        pilot_epsilon=pilot,
        chosen=chosen,
        finals=finals,
        confidence=confidence,
        delta=delta,
        pilot_trials=pilot_trials,
        settings={
            "trials": trials,
            "finalists": finalists,
            "seed": seed,
            "pilot_confidence": pilot_confidence,
            **{f"pilot_{k}": v for k, v in pilot_options.items()},
        },
    )
