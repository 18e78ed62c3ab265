"""The flawed-mechanism benchmark: audit every mechanism of the catalogue
(:data:`dpaudit.mechanisms.flawed.FLAWED`) with the learned attack on its worst-case pair and
compare the certified bound with the proven and the published ones (``dpaudit bench-flawed``;
the table it prints is :func:`dpaudit.reports.tables.format_benchmark`).

It lives beside the engine because it runs audits; the catalogue itself only describes mechanisms.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from dpaudit._core.validation import check_integer
from dpaudit.attacks.delta_leak import DeltaLeak
from dpaudit.attacks.learned import Learned
from dpaudit.audit.engine import audit_mechanism
from dpaudit.mechanisms.flawed import FLAWED, PUBLISHED, flawed

__all__ = ["benchmark_attack", "run_benchmark", "summarize_benchmark"]


def summarize_benchmark(frame: Any) -> dict[str, int]:
    """Counts of a :func:`run_benchmark` frame: broken mechanisms flagged (of all broken ones),
    correct ones flagged (of all correct ones), certified bounds above the published ones (of
    those with a published value), and certified bounds above the proven upper bound (must be
    0)."""
    broken = ~frame["correct"]
    published = frame["published"].notna()
    return {
        "broken": int(broken.sum()),
        "broken_flagged": int((broken & frame["flagged"]).sum()),
        "correct": int((~broken).sum()),
        "correct_flagged": int((~broken & frame["flagged"]).sum()),
        "with_published": int(published.sum()),
        "above_published": int((published & (frame["certified"] > frame["published"])).sum()),
        "above_true_upper": int((frame["certified"] > frame["true_upper"] + 1e-12).sum()),
    }


def benchmark_attack(mechanism: Any, seed: int = 0, train_trials: int = 2**17) -> DeltaLeak:
    """The benchmark's attack on a flawed mechanism's worst-case pair: a learned score (with the
    mechanism's distinguishing statistic when it has one) plus exact-output events, learned from
    the engine's fit sample plus ``train_trials`` outputs per dataset (raised to the mechanism's
    :attr:`~dpaudit.mechanisms.flawed.FlawedMechanism.benchmark_train_trials`)."""
    pair = mechanism.worst_case_pair()
    return DeltaLeak(
        Learned(features=mechanism.features(pair), seed=seed),
        mechanism=mechanism,
        pair=pair,
        train_trials=max(train_trials, mechanism.benchmark_train_trials),
        seed=seed,
    )


def run_benchmark(
    trials: int = 10**6,
    *,
    names: list[str] | tuple[str, ...] | None = None,
    eps: float = 0.1,
    seed: int = 0,
    confidence: float = 0.95,
    n_jobs: int = 1,
    trials_for: Mapping[str, int] | None = None,
    train_trials: int = 2**17,
    progress: bool = False,
) -> Any:
    """Audit every flawed mechanism with the learned attack on its worst-case pair.

    Returns a ``pandas.DataFrame`` with one row per mechanism: ``name``, ``correct``,
    ``claimed_epsilon``, ``true_lower`` / ``true_upper`` (the proven bounds), ``certified`` (the
    ``eps`` lower bound at the claimed ``delta``, ``0`` except for the delta-leak block),
    ``flagged`` (the certified bound exceeds the claimed ``eps`` at that ``delta``: one test at
    the stated confidence, so the verdict and the bound shown cannot disagree), ``published``
    and ``published_source`` (:data:`~dpaudit.mechanisms.flawed.PUBLISHED`), ``attack`` (the
    estimator the learned attack chose), ``trials`` and ``seconds``. ``trials_for`` overrides
    the number of trials per mechanism; a mechanism's
    :attr:`~dpaudit.mechanisms.flawed.FlawedMechanism.benchmark_train_trials` raises
    ``train_trials`` for its row. The attack is :class:`~dpaudit.attacks.DeltaLeak`: a learned
    score (:class:`~dpaudit.attacks.learned.Learned`, with the mechanism's distinguishing
    statistic when it has one) plus exact-output events, learned from the engine's fit sample
    plus ``train_trials`` outputs per dataset drawn independently of the audit.
    """
    import pandas as pd

    trials = check_integer("trials", trials, minimum=1)
    selected = list(FLAWED) if names is None else list(names)
    for name in selected:
        if name not in FLAWED:
            raise ValueError(f"names must be registry names ({', '.join(FLAWED)}); got {name!r}")
    overrides = dict(trials_for or {})
    rows = []
    for name in selected:
        mechanism = flawed(name, eps)
        pair = mechanism.worst_case_pair()
        n = check_integer(f"trials_for[{name!r}]", overrides.get(name, trials), minimum=1)
        started = time.perf_counter()
        attack = benchmark_attack(mechanism, seed, train_trials)
        result = audit_mechanism(
            mechanism,
            pair,
            attack,
            trials=n,
            seed=seed,
            confidence=confidence,
            n_jobs=n_jobs,
            progress=progress,
        )
        lower, upper = mechanism.epsilon_bounds()
        published = PUBLISHED.get(name)
        delta = getattr(mechanism, "claimed_delta", 0.0)
        # A family of one test: the eps bound at the claimed delta, read at the full confidence.
        # The claim is (eps, delta)-DP, so that bound exceeding the claimed eps *is* the test of
        # the claim; the verdict is read off the bound shown and never disagrees with it.
        certified = result.epsilon_lower_bound(delta)
        flagged = certified > mechanism.claimed_epsilon
        rows.append(
            {
                "name": name,
                "correct": mechanism.correct,
                "claimed_epsilon": mechanism.claimed_epsilon,
                "true_lower": lower,
                "true_upper": upper,
                "certified": certified,
                "flagged": flagged,
                "published": None if published is None else published[0],
                "published_source": None if published is None else published[1],
                "attack": result.attack.name,
                "trials": n,
                "seconds": time.perf_counter() - started,
            }
        )
    return pd.DataFrame(rows)
