"""A test oracle for privacy claims: :func:`assert_private` fails a test when an audit refutes
the claim at a stated false-alarm rate.

A library states what its mechanism guarantees (``approx_dp(1.0, 0.0)``, ``ZCDP(0.5)``, an RDP
curve, ...); ``assert_private(release, claim, pairs=[...])`` audits the code with the engine
(:func:`dpaudit.audit`) and its verdict (:meth:`~dpaudit.audit.result.AuditResult.verdict`), and
raises :class:`PrivacyViolation` (an ``AssertionError``) with the witness when the claim is
refuted. A correct mechanism fails with probability at most ``false_alarm``, however many looks
and pairs were tested, so the check can run in every CI build.

**Sequential design.** Look ``k = 1, 2, ...`` audits every pair with ``trials * growth^(k-1)``
trials per dataset, each audit at level ``false_alarm * 6 / (pi^2 k^2) / len(pairs)``. These
levels sum to at most ``false_alarm`` (``sum 1/k^2 = pi^2/6``), so by the union bound the
probability that any look on any pair refutes a correct claim is at most ``false_alarm``,
whatever the looks' dependence and whenever the design stops. It stops at the first refutation
(a clear one is found at a small look), at ``max_trials``, or before a look that the time already
spent predicts would end after ``max_seconds``. Each look's audit draws from its own root seed,
derived from ``seed``, the look and the pair (:func:`dpaudit._core.streams.derived_seed`), so the
looks are independent and a run is reproducible; only where ``max_seconds`` stops it depends on
the machine.

The pytest plugin (:mod:`dpaudit.pytest_plugin`, installed with dpaudit) offers the fixture
``dp_audit``, which calls :func:`assert_private` with the settings of the command line
(``--dp-audit-false-alarm``, ``--dp-audit-max-seconds``, ``--dp-audit-seed``) and the
``dp_audit`` marker of the test (``@pytest.mark.dp_audit(max_seconds=30)``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit._core.numbers import format_number
from dpaudit._core.streams import derived_seed
from dpaudit._core.validation import check_integer, check_positive, check_probability, check_seed
from dpaudit.attacks.base import Attack
from dpaudit.audit.engine import audit_mechanism
from dpaudit.audit.result import DEFAULT_DELTAS, claim_curve
from dpaudit.audit.witness import Witness
from dpaudit.mechanisms.base import NeighbouringPair
from dpaudit.mechanisms.blackbox import BlackBox

__all__ = ["Look", "PrivacyCheck", "PrivacyViolation", "assert_private", "look_level"]


def look_level(false_alarm: float, look: int) -> float:
    """The false-alarm rate spent at look ``look >= 1``: ``false_alarm * 6 / (pi^2 look^2)``;
    the levels of all looks sum to ``false_alarm``."""
    false_alarm = check_probability("false_alarm", false_alarm, low_open=True, high_open=True)
    look = check_integer("look", look)
    return false_alarm * 6.0 / (math.pi**2 * look**2)


@dataclass(frozen=True)
class Look:
    """One audit of the sequential design: look ``look`` on pair ``pair`` (an index into the
    pairs tested), with ``trials`` per dataset from root seed ``seed``, tested at ``level``;
    ``verdict`` is ``"consistent"`` or ``"violated"``, ``epsilon_lower_bounds`` the certified
    ``eps`` at each ``delta`` (keyed by ``repr(delta)``), ``seconds`` its wall-clock time."""

    look: int
    pair: int
    trials: int
    seed: int
    level: float
    verdict: str
    epsilon_lower_bounds: dict[str, float]
    seconds: float


@dataclass(frozen=True)
class PrivacyCheck:
    """The outcome of :func:`assert_private` when the claim was not refuted.

    ``claim`` is the claim's name, ``false_alarm`` the rate the check was run at, ``looks``
    every audit made, ``trials`` the trials per dataset of the last look, ``stopped`` why the
    design ended (``"max_trials"`` or ``"max_seconds"``) and ``seconds`` the time it took.
    """

    claim: str
    false_alarm: float
    looks: tuple[Look, ...]
    trials: int
    stopped: str
    seconds: float

    def epsilon_lower_bound(self, delta: float = 0.0) -> float:
        """The largest certified ``eps`` at ``delta`` over all looks and pairs; each one holds at
        its look's level, so all hold together with probability at least ``1 - false_alarm``."""
        key = repr(float(delta))
        values = [look.epsilon_lower_bounds.get(key) for look in self.looks]
        if not values or any(v is None for v in values):
            raise ValueError(f"delta must be one of the deltas tested, got {delta!r}")
        return max(values)


class PrivacyViolation(AssertionError):
    """Raised by :func:`assert_private` when an audit refutes the claim.

    ``witness`` is the refuting test (:class:`~dpaudit.audit.witness.Witness`: threshold,
    certified errors, the claim's value there), ``pair`` the neighbouring pair it was found on,
    ``claim`` the claim's name, ``trials`` the trials per dataset of the refuting look, ``look``
    that look's record and ``false_alarm`` the rate of the whole check. ``str(error)`` is a
    one-paragraph explanation.
    """

    def __init__(
        self,
        message: str,
        *,
        witness: Witness,
        pair: NeighbouringPair,
        claim: str,
        trials: int,
        look: Look,
        false_alarm: float,
    ) -> None:
        super().__init__(message)
        self.witness = witness
        self.pair = pair
        self.claim = claim
        self.trials = trials
        self.look = look
        self.false_alarm = false_alarm


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


def _explain(
    witness: Witness, pair: NeighbouringPair, index: int, look: Look, false_alarm: float
) -> str:
    where = pair.description or f"D = {pair.d.tolist()!r}, D' = {pair.d_prime.tolist()!r}"
    text = (
        f"The claim {witness.claim} is refuted on pair {index} ({where}) at look {look.look}, "
        f"with {look.trials} trials per dataset: the test '{witness.test}' (threshold "
        f"{witness.threshold:.6g}) has type I error at most "
        f"{format_number(witness.alpha_upper, rounding='up')} and type II error at most "
        f"{format_number(witness.beta_upper, rounding='up')}"
    )
    if witness.claimed_beta is not None and witness.margin is not None and witness.margin > 0:
        error = "type II" if witness.order == "d_d_prime" else "type I"
        text += f", where the claim requires a {error} error of at least {witness.claimed_beta:.4g}"
    if witness.epsilon is not None:
        claimed = witness.claimed_epsilon
        shown = format_number(witness.epsilon, rounding="down")
        text += f"; it certifies eps >= {shown} at delta = {witness.delta:g}" + (
            f" where the claim states {claimed:.4g}" if claimed is not None else ""
        )
    return (
        text + f". These bounds hold at level {look.level:.3g}; the levels of all looks and pairs "
        f"sum to at most {false_alarm:g}, so a mechanism that satisfies the claim fails this "
        f"check with probability at most {false_alarm:g}."
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
    n_jobs: int | None = 1,
) -> PrivacyCheck:
    """Fail with :class:`PrivacyViolation` if an audit refutes ``claim`` for ``mechanism``.

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
        else a learned score).
    false_alarm:
        Probability, at most, that a mechanism satisfying the claim fails the check, in
        ``(0, 1)``.
    max_seconds:
        Time budget: no look starts that the time of the previous one predicts would end after
        it (the first look always runs). ``None``: no budget.
    seed:
        Root of every look's seed.
    trials:
        Trials per dataset at the first look.
    growth:
        Factor (``>= 2``) by which each look multiplies the trials.
    max_trials:
        No look has more trials per dataset than this.
    deltas:
        ``delta`` values at which the verdict also tests the certified ``eps`` against the
        claim's.
    n_jobs:
        Workers of each audit (default 1, this process).

    Returns
    -------
    PrivacyCheck
        The looks made, when none refuted the claim.

    Raises
    ------
    PrivacyViolation
        An ``AssertionError`` carrying the witness, the pair, the claim and the trials, when a
        look refutes the claim.
    """
    false_alarm = check_probability("false_alarm", false_alarm, low_open=True, high_open=True)
    if max_seconds is not None:
        max_seconds = check_positive("max_seconds", max_seconds)
    seed = check_seed("seed", seed)
    trials = check_integer("trials", trials)
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
    start = time.perf_counter()
    looks: list[Look] = []
    size, k, last_seconds = trials, 1, 0.0
    while True:
        level = look_level(false_alarm, k)
        for index, pair in enumerate(tested):
            look_seed = derived_seed(seed, "assert_private_look", k, index)
            began = time.perf_counter()
            result = audit_mechanism(
                mechanism,
                pair,
                attack,
                trials=size,
                seed=look_seed,
                confidence=1.0 - level / len(tested),
                n_jobs=n_jobs,
                progress=False,
            )
            verdict = result.verdict(curve, deltas)
            record = Look(
                look=k,
                pair=index,
                trials=size,
                seed=look_seed,
                level=level / len(tested),
                verdict=verdict["verdict"],
                epsilon_lower_bounds=dict(verdict["epsilon_lower_bounds"]),
                seconds=time.perf_counter() - began,
            )
            looks.append(record)
            if verdict["verdict"] == "violated":
                witness = verdict["witness"]
                raise PrivacyViolation(
                    _explain(witness, pair, index, record, false_alarm),
                    witness=witness,
                    pair=pair,
                    claim=curve.name,
                    trials=size,
                    look=record,
                    false_alarm=false_alarm,
                )
        last_seconds = sum(look.seconds for look in looks if look.look == k)
        stopped = _stop(size, growth, max_trials, max_seconds, start, last_seconds)
        if stopped is not None:
            return PrivacyCheck(
                claim=curve.name,
                false_alarm=false_alarm,
                looks=tuple(looks),
                trials=size,
                stopped=stopped,
                seconds=time.perf_counter() - start,
            )
        size, k = min(size * growth, max_trials), k + 1


def _stop(
    size: int,
    growth: int,
    max_trials: int,
    max_seconds: float | None,
    start: float,
    last_seconds: float,
) -> str | None:
    """Why the design ends after a look of ``size`` trials that took ``last_seconds``, or
    ``None``: the next look would exceed ``max_trials``' cap already reached, or, timed as the
    last one scaled by its trials, end after ``max_seconds``."""
    if size >= max_trials:
        return "max_trials"
    if max_seconds is not None:
        predicted = last_seconds * min(size * growth, max_trials) / size
        if time.perf_counter() - start + predicted > max_seconds:
            return "max_seconds"
    return None
