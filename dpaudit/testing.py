"""A test oracle for privacy claims: :func:`assert_private` fails a test when an audit refutes
the claim at a stated false-alarm rate.

A library states what its mechanism guarantees (``approx_dp(1.0, 0.0)``, ``ZCDP(0.5)``, an RDP
curve, ...); ``assert_private(release, claim, pairs=[...])`` audits the code sequentially
(:func:`dpaudit.audit.engine.audit_sequential`) and raises :class:`PrivacyViolation` (an
``AssertionError``) with the evidence and the certified ``eps`` when the claim is refuted. A
correct mechanism fails with probability at most ``false_alarm``, however many pairs are tested
and wherever the check stops, so it can run in every CI build.

**Sequential design.** The trials arrive in phases of ``trials * growth^r`` trials per dataset
on every pair (the last of ``max_trials``), each looked at up to
:data:`~dpaudit.audit.engine.LOOKS_PER_PHASE` times as it fills. At every look an anytime-valid
test (:mod:`dpaudit.audit.sequential`: a test supermartingale by betting, the mean over the
pairs; a ladder of ``eps`` values above the claim) decides whether the claim is refuted; the
check stops at the first refutation, after the last phase, or before a look or phase that the
time already spent predicts would end after ``max_seconds``. At the stop each pair's
fixed-sample verdict is read at a per-look level, and may refute the claim too. The false-alarm
rate holds at any stopping time, so stopping early on clear evidence and stopping on the clock
cost nothing. Each phase of each pair draws from its own root seed derived from ``seed``
(:func:`dpaudit._core.streams.derived_seed`), so a run is reproducible; only where
``max_seconds`` stops it depends on the machine.

The pytest plugin (:mod:`dpaudit.pytest_plugin`, installed with dpaudit) offers the fixture
``dp_audit``, which calls :func:`assert_private` with the settings of the command line
(``--dp-audit-false-alarm``, ``--dp-audit-max-seconds``, ``--dp-audit-seed``) and the
``dp_audit`` marker of the test (``@pytest.mark.dp_audit(max_seconds=30)``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit._core.numbers import format_number
from dpaudit._core.validation import check_integer, check_positive, check_probability
from dpaudit.attacks.base import Attack
from dpaudit.audit.engine import audit_sequential
from dpaudit.audit.result import DEFAULT_DELTAS, claim_curve
from dpaudit.audit.sequential import SequentialAudit, claim_delta
from dpaudit.mechanisms.base import NeighbouringPair
from dpaudit.mechanisms.blackbox import BlackBox

__all__ = ["PrivacyCheck", "PrivacyViolation", "assert_private"]


@dataclass(frozen=True)
class PrivacyCheck:
    """The outcome of :func:`assert_private` when the claim was not refuted.

    ``claim`` is the claim's name, ``false_alarm`` the rate the check was run at, ``audit`` the
    sequential audit (:class:`~dpaudit.audit.sequential.SequentialAudit`: its looks, evidence and
    the results at the stop), ``trials`` the evaluation trials per dataset of the last phase at
    the stop (of the first pair), ``stopped``
    why the design ended (``"max_trials"`` or ``"max_seconds"``) and ``seconds`` the time it
    took.
    """

    claim: str
    false_alarm: float
    audit: SequentialAudit
    trials: int
    stopped: str
    seconds: float

    def epsilon_lower_bound(self, delta: float = 0.0) -> float:
        """The certified ``eps`` at ``delta`` at the stop, over all pairs
        (:meth:`~dpaudit.audit.sequential.SequentialAudit.epsilon_lower_bound`); it holds, with
        the verdict, with probability at least ``1 - false_alarm``."""
        return self.audit.epsilon_lower_bound(delta)


class PrivacyViolation(AssertionError):
    """Raised by :func:`assert_private` when the claim is refuted.

    ``pair`` is the neighbouring pair that carries the evidence, ``claim`` the claim's name,
    ``evidence`` what refuted it (:meth:`~dpaudit.audit.sequential.SequentialAudit.evidence`),
    ``witness`` the fixed-sample witness of that pair when its family refuted the claim (else
    ``None``), ``epsilon`` the certified ``eps`` at ``delta`` (the claim's ``delta``) against the
    claim's ``claimed_epsilon``, ``trials`` the outputs per dataset drawn on that pair,
    ``audit`` the sequential audit and ``false_alarm`` the rate of the whole check. ``str(error)``
    is a one-paragraph explanation.
    """

    def __init__(
        self,
        message: str,
        *,
        audit: SequentialAudit,
        pair: NeighbouringPair,
        claim: str,
        false_alarm: float,
    ) -> None:
        super().__init__(message)
        self.audit = audit
        self.pair = pair
        self.claim = claim
        self.false_alarm = false_alarm
        self.evidence = audit.evidence()
        index = audit.pair
        self.witness = audit.verdicts[index]["witness"] if audit.verdicts[index] else None
        self.delta = float(audit.test.delta)
        self.epsilon = audit.epsilon_lower_bound(self.delta)
        self.claimed_epsilon = audit.test.claimed_epsilon
        self.trials = int(audit.outputs_per_dataset[index])


def _pairs(mechanism: Any, pairs: Sequence[Any] | None) -> list[NeighbouringPair]:
    if pairs is None:
        try:
            return [mechanism.worst_case_pair()]
        except ValueError:
            raise ValueError(
                f"pairs must be given: {mechanism.name} has no worst-case pair of its own"
            ) from None
    if isinstance(pairs, NeighbouringPair) or not isinstance(pairs, Sequence) or not pairs:
        raise ValueError("pairs must be a non-empty list of NeighbouringPair or (d, d_prime)")
    out = []
    for item in pairs:
        if isinstance(item, NeighbouringPair):
            out.append(item)
        elif isinstance(item, Sequence) and len(item) == 2:
            d, d_prime = np.atleast_1d(item[0]), np.atleast_1d(item[1])
            sizes = {d.shape[0], d_prime.shape[0]}
            relation = "add_remove" if max(sizes) - min(sizes) == 1 else "replace_one"
            out.append(NeighbouringPair(d, d_prime, relation))
        else:
            raise ValueError(f"pairs must hold NeighbouringPair or (d, d_prime), got {item!r}")
    return out


def _where(pair: NeighbouringPair) -> str:
    return pair.description or f"D = {pair.d.tolist()!r}, D' = {pair.d_prime.tolist()!r}"


def _explain(audit: SequentialAudit, pair: NeighbouringPair, claim: str, false_alarm: float) -> str:
    """The paragraph of a :class:`PrivacyViolation`."""
    test, index = audit.test, audit.pair
    evidence = audit.evidence() or {}
    text = (
        f"The claim {claim} is refuted on pair {index} ({_where(pair)}) after "
        f"{audit.outputs_per_dataset[index]:,} outputs per dataset (look {audit.looks}, phase "
        f"{audit.phases}): "
    )
    by = evidence.get("test")
    if by == "e-value":
        text += (
            f"the claim's test supermartingale reached e-value {evidence['e_value']:.4g}, at "
            f"least {test.e_threshold:.4g}"
        )
        if "threshold" in evidence:
            text += (
                f" (its last bet: the test '{evidence['rule']}' at threshold "
                f"{evidence['threshold']:.6g}, with errors estimated at "
                f"{evidence['alpha_estimate']:.3g} and {evidence['beta_estimate']:.3g} from "
                "earlier trials)"
            )
    elif by == "ladder":
        text += "the ladder of eps values above the claim refuted the first of them"
    else:
        w = evidence["witness"]
        text += (
            f"the fixed-sample test '{w.test}' (threshold {w.threshold:.6g}) has type I error "
            f"at most {format_number(w.alpha_upper, rounding='up')} and type II error at most "
            f"{format_number(w.beta_upper, rounding='up')} at level {test.look_gamma:.3g}"
        )
    certified = audit.epsilon_lower_bound(test.delta)
    text += (
        f". It certifies eps >= {format_number(certified, rounding='down')} at delta = "
        f"{test.delta:g}, where the claim states {test.claimed_epsilon:.4g}."
    )
    return text + (
        f" The check is anytime-valid: a mechanism that satisfies the claim fails it with "
        f"probability at most {false_alarm:g}, whenever it stops and however many pairs it tests."
    )


def assert_private(
    mechanism: Any,
    claim: Any,
    *,
    pairs: Sequence[Any] | None = None,
    attack: Attack | None = None,
    false_alarm: float = 1e-6,
    max_seconds: float | None = 10.0,
    seed: int = 0,
    trials: int = 4096,
    growth: int = 4,
    max_trials: int = 2**22,
    deltas: Sequence[float] = DEFAULT_DELTAS,
    n_jobs: int = 1,
) -> PrivacyCheck:
    """Fail with :class:`PrivacyViolation` if a sequential audit refutes ``claim`` for
    ``mechanism``.

    Parameters
    ----------
    mechanism:
        A mechanism (anything :func:`dpaudit.audit` runs) or a release function, wrapped as
        :class:`~dpaudit.mechanisms.blackbox.BlackBox`: ``fn(dataset, rng)``, or
        ``fn(dataset, size, rng)`` drawing ``size`` outputs at once.
    claim:
        What the mechanism is said to satisfy: a trade-off curve (``approx_dp(eps, delta)``,
        ``gdp(mu)``) or a guarantee with ``.tradeoff()`` (``ZCDP``, ``ApproxZCDP``,
        ``RDPCurve``, a PLD).
    pairs:
        Neighbouring pairs to test: :class:`~dpaudit.mechanisms.base.NeighbouringPair` objects
        or ``(d, d_prime)`` tuples; default: the mechanism's worst case. A release function needs
        them.
    attack:
        The score; default: the engine's (the likelihood ratio when the mechanism has a density,
        else a learned score, fitted again in each phase).
    false_alarm:
        Probability, at most, that a mechanism satisfying the claim fails the check, in
        ``(0, 1)``.
    max_seconds:
        Time budget: no look or phase starts that the time already spent predicts would end
        after it (the first look always runs). ``None``: no budget.
    seed:
        Root of every phase's seed.
    trials:
        Trials per dataset of the first phase.
    growth:
        Factor (``>= 2``) by which each phase multiplies the trials.
    max_trials:
        Trials per dataset of the last phase.
    deltas:
        ``delta`` values at which the check also reports certified ``eps`` (the claim's own
        ``delta``, :func:`~dpaudit.audit.sequential.claim_delta`, is always one).
    n_jobs:
        Workers drawing the trials (default 1, this process).

    Returns
    -------
    PrivacyCheck
        The sequential audit, when it did not refute the claim.

    Raises
    ------
    PrivacyViolation
        An ``AssertionError`` carrying the evidence, the pair, the certified ``eps`` and the
        claim, when the claim is refuted.
    """
    false_alarm = check_probability("false_alarm", false_alarm, low_open=True, high_open=True)
    if max_seconds is not None:
        max_seconds = check_positive("max_seconds", max_seconds)
    seed = check_integer("seed", seed, minimum=0)
    trials = check_integer("trials", trials, minimum=2)
    growth = check_integer("growth", growth, minimum=2)
    max_trials = check_integer("max_trials", max_trials, minimum=trials)
    curve = claim_curve(claim)
    if not hasattr(mechanism, "sample"):
        if not callable(mechanism):
            raise ValueError(
                f"mechanism must be a mechanism or a release function, got {mechanism!r}"
            )
        mechanism = BlackBox(mechanism, curve)
    tested = _pairs(mechanism, pairs)
    audit = audit_sequential(
        mechanism,
        curve,
        tested,
        attack,
        level=false_alarm,
        trials=trials,
        growth=growth,
        max_trials=max_trials,
        max_seconds=max_seconds,
        seed=seed,
        deltas=tuple(dict.fromkeys([*(float(d) for d in deltas), claim_delta(curve)])),
        n_jobs=n_jobs,
    )
    if audit.verdict == "violated":
        pair = tested[audit.pair]
        raise PrivacyViolation(
            _explain(audit, pair, curve.name, false_alarm),
            audit=audit,
            pair=pair,
            claim=curve.name,
            false_alarm=false_alarm,
        )
    return PrivacyCheck(
        claim=curve.name,
        false_alarm=false_alarm,
        audit=audit,
        trials=int(audit.results[0].trials),
        stopped=audit.stopped,
        seconds=audit.seconds,
    )
