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

**Searching for a failing input.** A release function that declares what it accepts, an
:class:`~dpaudit.mechanisms.inputs.InputSpace` (``@input_space(space)`` beside its definition, or
``space=``), is called as ``fn(dataset, size, rng, setting=...)`` at each
:class:`~dpaudit.mechanisms.inputs.Setting` of it; ``assert_private(fn, claim)`` without pairs
then searches the space (:func:`dpaudit.audit.pair_search.search_inputs`: a cheap screen of the
candidates of :func:`dpaudit.mechanisms.pairs.space_candidates`, the most promising confirmed on
fresh outputs) within ``max_seconds``. A failure names the setting and the witness pair, states
the certified ``eps`` at the claim's ``delta`` against the claim's, and writes a **replay file**
(``replay``, a directory): the next check of the same function and claim tests that pair first,
sequentially, on half of the false-alarm rate (the search gets the other half), so a bug that is
still there fails in seconds and a fixed one costs the check little.

The pytest plugin (:mod:`dpaudit.pytest_plugin`, installed with dpaudit) offers the fixture
``dp_audit``, which calls :func:`assert_private` with the settings of the command line
(``--dp-audit-false-alarm``, ``--dp-audit-max-seconds``, ``--dp-audit-seed``) and the
``dp_audit`` marker of the test (``@pytest.mark.dp_audit(max_seconds=30)``); the command
line's time budget raises a marker's, never lowers it.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from dpaudit._core.files import write_atomic
from dpaudit._core.numbers import format_number
from dpaudit._core.validation import (
    check_deltas,
    check_integer,
    check_n_jobs,
    check_positive,
    check_probability,
    check_seed,
)
from dpaudit.attacks.base import Attack
from dpaudit.audit.engine import audit_sequential
from dpaudit.audit.pair_search import InputSearchResult, SearchBudget, search_inputs
from dpaudit.audit.result import DEFAULT_DELTAS, claim_curve
from dpaudit.audit.sequential import SequentialAudit, claim_delta
from dpaudit.bounds.tradeoff import TradeoffCurve
from dpaudit.mechanisms.base import NeighbouringPair
from dpaudit.mechanisms.blackbox import BlackBox
from dpaudit.mechanisms.inputs import Candidate, InputSpace, Setting
from dpaudit.mechanisms.pairs import space_candidates

__all__ = [
    "DEFAULT_REPLAY",
    "SEARCH_TRIALS",
    "PrivacyCheck",
    "PrivacyViolation",
    "assert_private",
    "input_space",
    "replay_path",
]

#: Where failures found by a search write their replay files, by default (relative to the
#: working directory; the pytest plugin puts it under the test session's root).
DEFAULT_REPLAY = ".dpaudit-replay"

#: Evaluation trials per dataset of each confirmation of a search (at least).
SEARCH_TRIALS = 10_000

_F = TypeVar("_F", bound=Callable[..., Any])


def input_space(space: InputSpace) -> Callable[[_F], _F]:
    """Declare beside a release function what it accepts::

        @input_space(InputSpace(default=Setting(bounds=(0.0, 1.0), size=10), offsets=...))
        def noisy_sum(dataset, size, rng, *, setting): ...

    :func:`assert_private` then searches ``space`` when it is given no pairs, calling the
    function with each :class:`~dpaudit.mechanisms.inputs.Setting` as ``setting=``."""
    if not isinstance(space, InputSpace):
        raise ValueError(f"space must be an InputSpace, got {type(space).__name__}")

    def declare(fn: _F) -> _F:
        fn.input_space = space  # type: ignore[attr-defined]
        return fn

    return declare


@dataclass(frozen=True)
class PrivacyCheck:
    """The outcome of :func:`assert_private` when the claim was not refuted.

    ``claim`` is the claim's name, ``false_alarm`` the rate the check was run at, ``audit`` the
    sequential audit of the pairs given (or of the replayed pair: a
    :class:`~dpaudit.audit.sequential.SequentialAudit`, its looks, evidence and the results at
    the stop), ``search`` the search of the input space (an
    :class:`~dpaudit.audit.pair_search.InputSearchResult`, ``None`` with pairs), ``trials`` the
    evaluation trials per dataset of the last audit, ``stopped`` why the design ended
    (``"max_trials"``, ``"max_seconds"``, or ``"searched"``) and ``seconds`` the time it took.
    """

    claim: str
    false_alarm: float
    audit: SequentialAudit | None
    trials: int
    stopped: str
    seconds: float
    search: InputSearchResult | None = None

    def epsilon_lower_bound(self, delta: float = 0.0) -> float:
        """The certified ``eps`` at ``delta``: of the sequential audit at its stop
        (:meth:`~dpaudit.audit.sequential.SequentialAudit.epsilon_lower_bound`), or of the
        search's best confirmation; it holds, with the verdict, with probability at least
        ``1 - false_alarm``."""
        values = []
        if self.audit is not None:
            values.append(self.audit.epsilon_lower_bound(delta))
        if self.search is not None:
            verdict = self.search.best.verdict(self.search.claim, [delta])
            values.append(float(verdict["epsilon_lower_bounds"][repr(float(delta))]))
        return max(values)


class PrivacyViolation(AssertionError):
    """Raised by :func:`assert_private` when the claim is refuted.

    ``pair`` is the neighbouring pair that carries the evidence (the witness pair), ``setting``
    the :class:`~dpaudit.mechanisms.inputs.Setting` it was found at (``None`` for pairs given),
    ``claim`` the claim's name, ``evidence`` what refuted it, ``witness`` the fixed-sample witness
    when a fixed-sample test refuted the claim (else ``None``), ``epsilon`` the certified ``eps``
    at ``delta`` (the claim's ``delta``) against the claim's ``claimed_epsilon``, ``trials`` the
    outputs per dataset drawn on that pair, ``audit`` the sequential audit (pairs given, or the
    replay), ``search`` the search (when it found the pair), ``replay`` the replay file written
    or read (``None`` without one) and ``false_alarm`` the rate of the whole check.
    ``str(error)`` is a one-paragraph explanation.
    """

    def __init__(
        self,
        message: str,
        *,
        pair: NeighbouringPair,
        claim: str,
        false_alarm: float,
        evidence: dict[str, Any],
        witness: Any,
        delta: float,
        epsilon: float,
        claimed_epsilon: float,
        trials: int,
        audit: SequentialAudit | None = None,
        search: InputSearchResult | None = None,
        setting: Setting | None = None,
        replay: Path | None = None,
    ) -> None:
        super().__init__(message)
        self.pair = pair
        self.claim = claim
        self.false_alarm = false_alarm
        self.evidence = evidence
        self.witness = witness
        self.delta = delta
        self.epsilon = epsilon
        self.claimed_epsilon = claimed_epsilon
        self.trials = trials
        self.audit = audit
        self.search = search
        self.setting = setting
        self.replay = replay

    @classmethod
    def of_audit(
        cls,
        audit: SequentialAudit,
        pair: NeighbouringPair,
        claim: str,
        false_alarm: float,
        **context: Any,
    ) -> PrivacyViolation:
        """The violation a sequential audit found (``context``: ``setting``, ``replay``)."""
        index = audit.pair
        delta = float(audit.test.delta)
        return cls(
            _explain(audit, pair, claim, false_alarm, **context),
            pair=pair,
            claim=claim,
            false_alarm=false_alarm,
            evidence=audit.evidence() or {},
            witness=audit.verdicts[index]["witness"],
            delta=delta,
            epsilon=audit.epsilon_lower_bound(delta),
            claimed_epsilon=audit.test.claimed_epsilon,
            trials=int(audit.outputs_per_dataset[index]),
            audit=audit,
            **context,
        )


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


def _explain(
    audit: SequentialAudit,
    pair: NeighbouringPair,
    claim: str,
    false_alarm: float,
    *,
    setting: Setting | None = None,
    replay: Path | None = None,
) -> str:
    """The paragraph of a :class:`PrivacyViolation` found by a sequential audit."""
    test, index = audit.test, audit.pair
    evidence = audit.evidence() or {}
    where = "" if setting is None else f" at {setting.describe()}"
    text = (
        f"The claim {claim} is refuted{where} on pair {index} ({_where(pair)}) after "
        f"{audit.outputs_per_dataset[index]:,} outputs per dataset (look {audit.looks}, phase "
        f"{audit.phases}): "
    )
    if replay is not None:
        text = f"Replayed from {replay}: " + text
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
            f"{format_number(w.beta_upper, rounding='up')} at level "
            f"{audit.results[index].gamma:.3g}"
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


def _explain_search(
    search: InputSearchResult,
    verdict: dict[str, Any],
    claim: str,
    delta: float,
    epsilon: float,
    claimed: float,
    false_alarm: float,
    replay: Path | None,
) -> str:
    """The paragraph of a :class:`PrivacyViolation` found by a search of the input space."""
    candidate, best = search.candidate, search.best
    w = verdict["witness"]
    setting = "" if candidate.setting is None else f" at {candidate.setting.describe()}"
    text = (
        f"The claim {claim} is refuted{setting} on the pair the {candidate.generator} generator "
        f"made ({_where(best.pair)}), found by a search of the function's input space "
        f"({int(np.isfinite(search.screen_epsilon).sum())} of {len(search.candidates)} "
        f"candidates screened, {len(search.finals)} confirmed on fresh outputs, "
        f"{best.trials:,} trials per dataset): the test '{w.test}' (threshold "
        f"{w.threshold:.6g}) has type I error at most "
        f"{format_number(w.alpha_upper, rounding='up')} and type II error at most "
        f"{format_number(w.beta_upper, rounding='up')}. It certifies eps >= "
        f"{format_number(epsilon, rounding='down')} at delta = {delta:g}, where the claim states "
        f"{claimed:.4g}."
    )
    if replay is not None:
        text += f" Replay file: {replay} (the next check tests this pair first)."
    return text + (
        f" A function that satisfies its claim fails this check with probability at most "
        f"{false_alarm:g}."
    )


# ---------------------------------------------------------------------------- replay files
def replay_path(directory: str | os.PathLike[str], fn: Any, claim: str) -> Path:
    """The replay file of ``fn`` and ``claim`` in ``directory``: the function's module and
    qualified name, made safe as a file name, and a hash of the claim's name."""
    name = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', type(fn).__name__)}"
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "function"
    digest = hashlib.sha256(claim.encode("utf-8")).hexdigest()[:10]
    return Path(directory) / f"{safe[:120]}-{digest}.npz"


def _write_replay(
    path: Path, fn: Any, claim: str, setting: Setting | None, pair: NeighbouringPair, **facts: Any
) -> Path:
    """Write the witness pair and its setting to ``path`` atomically (the datasets as arrays,
    every bit kept; the rest as JSON)."""
    meta = {
        "function": f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', '')}",
        "claim": claim,
        "setting": None if setting is None else setting.to_dict(),
        "relation": str(pair.relation),
        "description": pair.description,
        **facts,
    }
    buffer = io.BytesIO()
    np.savez_compressed(buffer, d=pair.d, d_prime=pair.d_prime, meta=np.array(json.dumps(meta)))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, lambda handle: handle.write(buffer.getvalue()))
    return path


def _read_replay(path: Path) -> tuple[Setting | None, NeighbouringPair] | None:
    """The setting and pair of a replay file, ``None`` when there is none or it cannot be read
    (a damaged file is no reason to fail a check; the search runs as usual)."""
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            d, d_prime = np.array(data["d"]), np.array(data["d_prime"])
        raw = meta["setting"]
        setting = None if raw is None else Setting(**{**raw, "bounds": tuple(raw["bounds"])})
        return setting, NeighbouringPair(d, d_prime, meta["relation"], meta["description"])
    except (OSError, ValueError, KeyError, TypeError, json.JSONDecodeError):
        return None


def assert_private(
    mechanism: Any,
    claim: Any,
    *,
    pairs: Sequence[Any] | None = None,
    space: InputSpace | None = None,
    attack: Attack | None = None,
    false_alarm: float = 1e-6,
    max_seconds: float | None = 10.0,
    seed: int = 0,
    trials: int = 4096,
    growth: int = 4,
    max_trials: int = 2**22,
    deltas: Sequence[float] = DEFAULT_DELTAS,
    n_jobs: int = 1,
    replay: str | os.PathLike[str] | None = DEFAULT_REPLAY,
) -> PrivacyCheck:
    """Fail with :class:`PrivacyViolation` if an audit refutes ``claim`` for ``mechanism``.

    Parameters
    ----------
    mechanism:
        A mechanism (anything :func:`dpaudit.audit` runs) or a release function, wrapped as
        :class:`~dpaudit.mechanisms.blackbox.BlackBox`: ``fn(dataset, rng)``, or
        ``fn(dataset, size, rng)`` drawing ``size`` outputs at once; with an input space, also
        taking ``setting=`` (a :class:`~dpaudit.mechanisms.inputs.Setting`).
    claim:
        What the mechanism is said to satisfy: a trade-off curve (``approx_dp(eps, delta)``,
        ``gdp(mu)``) or a guarantee with ``.tradeoff()`` (``ZCDP``, ``ApproxZCDP``,
        ``RDPCurve``, a PLD); with an input space, also ``claim(setting)`` returning one (a
        claim that depends on the setting's ``epsilon``).
    pairs:
        Neighbouring pairs to test: :class:`~dpaudit.mechanisms.base.NeighbouringPair` objects
        or ``(d, d_prime)`` tuples; default: the mechanism's worst case, or the search of the
        release function's input space.
    space:
        What the release function accepts (default: the space it declares with
        :func:`input_space`); searched when no pairs are given.
    attack:
        The score; default: the engine's (the likelihood ratio when the mechanism has a density,
        else a learned score, fitted again in each phase).
    false_alarm:
        Probability, at most, that a mechanism satisfying the claim fails the check, in
        ``(0, 1)``.
    max_seconds:
        Time budget: no look or phase starts that the time already spent predicts would end
        after it (the first look always runs), and a search screens within it. ``None``: no
        budget.
    seed:
        Root of every phase's and every screen's seed.
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
    replay:
        Directory of the replay files (:func:`replay_path`): a failure a search finds is written
        there, and a check with a replay file tests its pair first. ``None``: none read or
        written.

    Returns
    -------
    PrivacyCheck
        The sequential audit or the search, when neither refuted the claim.

    Raises
    ------
    PrivacyViolation
        An ``AssertionError`` carrying the evidence, the witness pair (and its setting), the
        certified ``eps`` and the claim, when the claim is refuted.
    """
    false_alarm = check_probability("false_alarm", false_alarm, low_open=True, high_open=True)
    if max_seconds is not None:
        max_seconds = check_positive("max_seconds", max_seconds)
    seed = check_seed("seed", seed)
    trials = check_integer("trials", trials, minimum=2)
    growth = check_integer("growth", growth, minimum=2)
    max_trials = check_integer("max_trials", max_trials, minimum=trials)
    n_jobs = check_n_jobs("n_jobs", n_jobs)
    if space is None and pairs is None and not hasattr(mechanism, "sample"):
        space = getattr(mechanism, "input_space", None)
    if space is not None and not isinstance(space, InputSpace):
        raise ValueError(f"space must be an InputSpace, got {type(space).__name__}")
    if replay is not None and not isinstance(replay, str | os.PathLike):
        raise ValueError(f"replay must be None or a directory path, got {replay!r}")
    design = {
        "attack": attack,
        "trials": trials,
        "growth": growth,
        "max_trials": max_trials,
        "deltas": tuple(check_deltas("deltas", deltas)),
        "n_jobs": n_jobs,
    }
    if space is not None and pairs is None:
        if not callable(mechanism) or hasattr(mechanism, "sample"):
            raise ValueError("space needs a release function fn(dataset, size, rng, setting=...)")
        return _search_check(
            mechanism, claim, space, false_alarm, max_seconds, seed, replay, design
        )
    curve = claim_curve(claim)
    if not hasattr(mechanism, "sample"):
        if not callable(mechanism):
            raise ValueError(
                f"mechanism must be a mechanism or a release function, got {mechanism!r}"
            )
        mechanism = BlackBox(mechanism, curve)
    tested = _pairs(mechanism, pairs)
    audit = _sequential(mechanism, curve, tested, false_alarm, max_seconds, seed, design)
    if audit.verdict == "violated":
        pair = tested[audit.pair]
        raise PrivacyViolation.of_audit(audit, pair, curve.name, false_alarm)
    trials = int(audit.results[0].trials)
    return PrivacyCheck(curve.name, false_alarm, audit, trials, audit.stopped, audit.seconds)


def _sequential(
    mechanism: Any,
    curve: TradeoffCurve,
    tested: list[NeighbouringPair],
    level: float,
    max_seconds: float | None,
    seed: int,
    design: dict[str, Any],
) -> SequentialAudit:
    """The sequential audit of ``tested`` at ``level`` (:func:`audit_sequential`), with the
    certified ``eps`` also at the claim's ``delta``."""
    deltas = tuple(dict.fromkeys([*(float(d) for d in design["deltas"]), claim_delta(curve)]))
    return audit_sequential(
        mechanism,
        curve,
        tested,
        design["attack"],
        level=level,
        trials=design["trials"],
        growth=design["growth"],
        max_trials=design["max_trials"],
        max_seconds=max_seconds,
        seed=seed,
        deltas=deltas,
        n_jobs=design["n_jobs"],
    )


def _at(fn: Callable[..., Any], claim: Any, setting: Setting | None) -> tuple[BlackBox, Any]:
    """The release function and the claim at ``setting`` (a claim given as a function of the
    setting is called with it)."""
    curve = claim_curve(claim(setting) if _per_setting(claim) else claim)
    release = fn if setting is None else partial(fn, setting=setting)
    return BlackBox(release, curve, vectorised=True, name=_name(fn)), curve


def _per_setting(claim: Any) -> bool:
    return (
        callable(claim) and not isinstance(claim, TradeoffCurve) and not hasattr(claim, "tradeoff")
    )


def _name(fn: Any) -> str:
    return str(getattr(fn, "__qualname__", None) or type(fn).__name__)


def _search_check(
    fn: Callable[..., Any],
    claim: Any,
    space: InputSpace,
    false_alarm: float,
    max_seconds: float | None,
    seed: int,
    replay: str | os.PathLike[str] | None,
    design: dict[str, Any],
) -> PrivacyCheck:
    """Replay the last failure (if a replay file says there was one), then search ``space``."""
    started = time.perf_counter()
    default_claim = claim_curve(claim(space.default) if _per_setting(claim) else claim)
    path = None if replay is None else replay_path(replay, fn, default_claim.name)
    previous = None if path is None else _read_replay(path)
    level = false_alarm
    audit = None
    if previous is not None:
        setting, pair = previous
        level = false_alarm / 2
        box, curve = _at(fn, claim, setting)
        budget = None if max_seconds is None else max_seconds / 2
        audit = _sequential(box, curve, [pair], level, budget, seed, design)
        if audit.verdict == "violated":
            raise PrivacyViolation.of_audit(
                audit, pair, curve.name, false_alarm, setting=setting, replay=path
            )
    left = None if max_seconds is None else max(max_seconds - (time.perf_counter() - started), 1.0)
    candidates = _interleaved(space, seed)
    search = search_inputs(
        lambda c: _at(fn, claim, c.setting),
        candidates,
        trials=max(SEARCH_TRIALS, design["trials"]),
        confidence=1.0 - level,
        budget=SearchBudget(seconds=left),
        seed=seed,
        delta=claim_delta(default_claim),
        n_jobs=design["n_jobs"],
    )
    curve = search.claim
    delta = claim_delta(curve)
    asked = tuple(dict.fromkeys([*(float(d) for d in design["deltas"]), delta]))
    verdict = search.best.verdict(curve, asked)
    if verdict["verdict"] != "violated":
        seconds = time.perf_counter() - started
        trials = int(search.best.trials)
        return PrivacyCheck(
            default_claim.name, false_alarm, audit, trials, "searched", seconds, search
        )
    candidate = search.candidate
    pair = search.best.pair
    epsilon = float(verdict["epsilon_lower_bounds"][repr(delta)])
    claimed = float(curve.epsilon(delta))
    written = None
    if path is not None:
        written = _write_replay(
            path,
            fn,
            default_claim.name,
            candidate.setting,
            pair,
            epsilon=epsilon,
            delta=delta,
            claimed_epsilon=claimed,
            seed=seed,
        )
    raise PrivacyViolation(
        _explain_search(search, verdict, curve.name, delta, epsilon, claimed, false_alarm, written),
        pair=pair,
        claim=curve.name,
        false_alarm=false_alarm,
        evidence={"test": "search", "refuted_by": verdict["refuted_by"]},
        witness=verdict["witness"],
        delta=delta,
        epsilon=epsilon,
        claimed_epsilon=claimed,
        trials=int(sum(search.best.metadata["random"]["outputs_per_dataset"].values())),
        audit=audit,
        search=search,
        setting=candidate.setting,
        replay=written,
    )


def _interleaved(space: InputSpace, seed: int) -> list[Candidate]:
    """Every candidate of ``space`` under each of its relations, the generators taking turns
    (so that a screen cut short by its budget has tried every generator)."""
    lists = [
        candidates
        for relation in space.relations
        for candidates in space_candidates(space, relation, seed=seed).values()
    ]
    out: list[Candidate] = []
    for position in range(max((len(c) for c in lists), default=0)):
        out += [c[position] for c in lists if position < len(c)]
    if not out:
        raise ValueError("space has no candidate pair: no generator makes one at its settings")
    return out
