"""Sampling the privacy loss in both orders of the pair and bounding ``delta(eps)`` with the
three estimators of :mod:`dpaudit.audit.accountant`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from dpaudit._core.jsonvalues import to_json_value
from dpaudit._core.numbers import format_number
from dpaudit._core.streams import chunk_generator
from dpaudit.audit.confidence import (
    clopper_pearson_lower,
    clopper_pearson_upper,
    empirical_bernstein_radius,
)
from dpaudit.audit.importance import LossTilt, log_conversion_factor
from dpaudit.mechanisms.base import NeighbouringPair

__all__ = ["ORDERS", "ESTIMATORS", "STAIRCASE", "DeltaBounds"]

ORDERS = ("d_d_prime", "d_prime_d")

#: The estimators of one order (module docstring).
ESTIMATORS = ("plain_bernstein", "plain_events", "importance_bernstein")

#: Levels ``c_j`` of the event staircases (``c_0 = 0``).
STAIRCASE = np.array([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99])

#: Random streams (:data:`dpaudit._core.streams.STREAMS`) of the two orders of the pair (indexed
#: like :data:`ORDERS`) and of the two-output probe of the output shape.
_ORDER_STREAMS = ("accountant_d_d_prime", "accountant_d_prime_d")

#: Largest number of chunks in one task and tasks per order (as in the engine, the task
#: partition depends only on the sizes, never on the number of workers).
_TASK_CHUNKS = 64
_TASKS_PER_ORDER = 8

#: Mixture weight of the order's own (untilted) law in the importance proposal.
_PLAIN_WEIGHT = 0.5

#: Candidate tilts: real ``lam`` on a geometric grid, or integer ``lam`` (integer Renyi orders).
_REAL_LAMBDAS = np.geomspace(1e-2, 1e3, 301)
_INTEGER_LAMBDAS = np.arange(1.0, 513.0)

#: Default grid: ``eps`` at these many ``delta`` values, geometric from 0.1 down to the floor.
_DEFAULT_POINTS = 12


# --------------------------------------------------------------------------------------- model
def _loss_model(mechanism: Any, pair: NeighbouringPair) -> tuple[Any, NeighbouringPair]:
    """The mechanism and pair whose densities give the privacy loss.

    DP-SGD observing the canary updates (``observe="updates"``) with Poisson or fixed-size
    batches and the canary at every step releases exactly its accountant's outputs on the
    records' canary coefficients (its ``log_density`` delegates to it), so its privacy loss is
    sampled there rather than by training models.
    """
    accountant = getattr(mechanism, "accountant", None)
    if (
        accountant is not None
        and getattr(mechanism, "observe", None) == "updates"
        and getattr(mechanism, "sampling", None) in ("poisson", "fixed")
        and getattr(mechanism, "canary_every", 1) == 1
    ):
        from dpaudit.mechanisms.datasets import split_records

        dim = mechanism.dataset.dim
        return accountant, NeighbouringPair(
            split_records(pair.d, dim)[2],
            split_records(pair.d_prime, dim)[2],
            pair.relation,
            description=f"canary coefficients of: {pair.description}",
        )
    return mechanism, pair


# --------------------------------------------------------------------------------------- plans
@dataclass(frozen=True)
class _Plan:
    """Sampling plan of one order: mixture components (``lam = 0`` first) and weight bounds."""

    lambdas: np.ndarray
    log_pi: np.ndarray
    log_z: np.ndarray
    log_bound: np.ndarray  # per eps: log of the largest importance summand

    @property
    def tilted(self) -> bool:
        return self.lambdas.size > 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "lambdas": self.lambdas.tolist(),
            "weights": np.exp(self.log_pi).tolist(),
            "log_normalizers": self.log_z.tolist(),
            "log_summand_bound": self.log_bound.tolist(),
        }


def _plain_plan(k: int) -> _Plan:
    return _Plan(np.zeros(1), np.zeros(1), np.zeros(1), np.zeros(k))


def _plan(tilt: LossTilt | None, eps: np.ndarray) -> _Plan:
    """The tilts ``lam*(eps) = argmin_lam log Z(lam) - lam eps + log c(lam)`` (the Renyi-DP
    conversion bound, :mod:`dpaudit.audit.importance`) of the grid's ``eps``, deduplicated,
    mixed with the untilted law (weight :data:`_PLAIN_WEIGHT`)."""
    if tilt is None:
        return _plain_plan(eps.size)
    cand = _INTEGER_LAMBDAS if tilt.integer_orders else _REAL_LAMBDAS
    with np.errstate(over="ignore", invalid="ignore"):
        log_z_cand = np.asarray(tilt.log_normalizer(cand), dtype=float)
    ok = np.isfinite(log_z_cand)
    cand, log_z_cand = cand[ok], log_z_cand[ok]
    if cand.size == 0:
        return _plain_plan(eps.size)
    objective = log_z_cand[None, :] - cand[None, :] * eps[:, None] + log_conversion_factor(cand)
    best = np.argmin(objective, axis=1)
    # Tilting pays where the conversion bound is small; keep distinct choices only.
    useful = objective[np.arange(eps.size), best] < math.log(0.05)
    chosen = np.unique(best[useful])
    if chosen.size == 0:
        return _plain_plan(eps.size)
    lambdas = np.concatenate([[0.0], cand[chosen]])
    log_z = np.concatenate([[0.0], log_z_cand[chosen]])
    j = chosen.size
    log_pi = np.concatenate(
        [[math.log(_PLAIN_WEIGHT)], np.full(j, math.log((1 - _PLAIN_WEIGHT) / j))]
    )
    # Summand bound per eps: min over components of (Z_j / pi_j) e^{-lam_j eps} c(lam_j).
    per = (
        log_z[None, :]
        - log_pi[None, :]
        - lambdas[None, :] * eps[:, None]
        + log_conversion_factor(lambdas)[None, :]
    )
    return _Plan(lambdas, log_pi, log_z, per.min(axis=1))


# --------------------------------------------------------------------------------------- sampling
@dataclass(frozen=True)
class _Job:
    mechanism: Any
    datasets: tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
    tilts: tuple[LossTilt | None, LossTilt | None]
    plans: tuple[_Plan, _Plan]
    eps: np.ndarray
    thresholds: np.ndarray  # (K, len(STAIRCASE)) event thresholds t_{k,j}
    seed: int
    chunk_size: int


def _empty_tally(job: _Job, order: int) -> dict[str, np.ndarray]:
    k = job.eps.size
    out = {
        "n_plain": np.zeros(1),
        "plain_sum": np.zeros(k),
        "plain_sum_sq": np.zeros(k),
        "events_above": np.zeros(job.thresholds.shape, dtype=np.int64),
        "n": np.zeros(1),
    }
    if job.plans[order].tilted:
        out.update(
            is_sum=np.zeros(k),
            is_sum_sq=np.zeros(k),
            weight_sum=np.zeros(1),
            weight_sum_sq=np.zeros(1),
        )
    return out


def _loss(mechanism: Any, a: np.ndarray, b: np.ndarray, y: np.ndarray) -> np.ndarray:
    la = np.asarray(mechanism.log_density(a, y), dtype=float)
    lb = np.asarray(mechanism.log_density(b, y), dtype=float)
    with np.errstate(invalid="ignore"):
        loss = la - lb
    if np.isnan(loss).any():
        raise ValueError(
            f"{getattr(mechanism, 'name', mechanism)}: the privacy loss is undefined (NaN) on "
            "some sampled output: both densities are zero or log_density returned NaN"
        )
    return loss


def _hockey(eps: np.ndarray, loss: np.ndarray) -> np.ndarray:
    """``(1 - e^{eps_k - L_i})_+``, shape ``(K, n)``."""
    with np.errstate(over="ignore"):
        return np.maximum(-np.expm1(eps[:, None] - loss[None, :]), 0.0)


def _run_task(job: _Job, order: int, first: int, n_chunks: int, total: int) -> dict:
    """Chunks ``first .. first + n_chunks - 1`` of order ``order`` (``total`` samples)."""
    a, b = job.datasets[order]
    plan, tilt = job.plans[order], job.tilts[order]
    tally = _empty_tally(job, order)
    eps_min = float(job.eps.min())
    flat_thr = job.thresholds.ravel()
    sorter = np.argsort(flat_thr, kind="stable")
    sorted_thr = flat_thr[sorter]
    hist = np.zeros(flat_thr.size + 1, dtype=np.int64)
    for chunk in range(first, first + n_chunks):
        size = min(job.chunk_size, total - chunk * job.chunk_size)
        rng = chunk_generator(job.seed, _ORDER_STREAMS[order], chunk)
        counts = rng.multinomial(size, np.exp(plan.log_pi)) if plan.tilted else np.array([size])
        losses = [_loss(job.mechanism, a, b, job.mechanism.sample(a, int(counts[0]), rng))]
        for j in range(1, counts.size):
            if counts[j]:
                y = tilt.sample(float(plan.lambdas[j]), int(counts[j]), rng)
                losses.append(_loss(job.mechanism, a, b, y))
        plain = losses[0]
        tally["n_plain"] += plain.size
        tally["n"] += size
        top = plain[plain > eps_min]
        x = _hockey(job.eps, top)
        tally["plain_sum"] += x.sum(axis=1)
        tally["plain_sum_sq"] += np.square(x).sum(axis=1)
        # searchsorted 'left' counts the thresholds strictly below each loss.
        hist += np.bincount(
            np.searchsorted(sorted_thr, plain, side="left"), minlength=flat_thr.size + 1
        )
        if plan.tilted:
            loss = np.concatenate(losses)
            with np.errstate(over="ignore", invalid="ignore"):
                tilt_terms = plan.lambdas[None, :] * loss[:, None]
            tilt_terms[:, 0] = 0.0  # the untilted component, also where the loss is infinite
            log_w = -special.logsumexp(tilt_terms + plan.log_pi - plan.log_z, axis=1)
            scaled = np.exp(log_w + math.log(_PLAIN_WEIGHT))
            tally["weight_sum"] += scaled.sum()
            tally["weight_sum_sq"] += np.square(scaled).sum()
            keep = loss > eps_min
            # In logs: at an eps far above every loss the hockey term is 0 while the weight's
            # ratio to the summand bound overflows, and 0 * inf would be NaN.
            hockey = _hockey(job.eps, loss[keep])
            with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
                s = np.exp(np.log(hockey) + log_w[keep][None, :] - plan.log_bound[:, None])
            s = np.where(hockey > 0.0, np.minimum(s, 1.0), 0.0)
            tally["is_sum"] += s.sum(axis=1)
            tally["is_sum_sq"] += np.square(s).sum(axis=1)
    above = np.empty(flat_thr.size, dtype=np.int64)
    above[sorter] = np.cumsum(hist[::-1])[::-1][1:]  # losses strictly above each threshold
    tally["events_above"] += above.reshape(job.thresholds.shape)
    return tally


def _tasks(order: int, total: int, chunk_size: int) -> list[tuple[int, int, int, int]]:
    n_chunks = -(-total // chunk_size)
    per_task = max(1, min(n_chunks // _TASKS_PER_ORDER, _TASK_CHUNKS))
    return [
        (order, first, min(per_task, n_chunks - first), total)
        for first in range(0, n_chunks, per_task)
    ]


def _add(total: dict | None, part: dict) -> dict:
    if total is None:
        return {k: np.array(v, copy=True) for k, v in part.items()}
    for key, value in part.items():
        total[key] += value
    return total


# --------------------------------------------------------------------------------------- bounds
def _bernstein(
    s1: np.ndarray, s2: np.ndarray, n: float, gamma: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and one-sided empirical Bernstein bounds (each at ``gamma``) of ``[0, 1]`` values."""
    if n < 2:
        k = s1.size
        return np.full(k, np.nan), np.zeros(k), np.ones(k)
    mean = s1 / n
    var = np.maximum(s2 - s1 * s1 / n, 0.0) / (n - 1.0)
    radius = empirical_bernstein_radius(var, n, gamma)
    return mean, np.maximum(mean - radius, 0.0), np.minimum(mean + radius, 1.0)


def _staircase(above: np.ndarray, n: float, gamma: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds from the event counts ``above`` (``(K, J)``), each at ``gamma``."""
    k, m = above.shape
    if n < 1:
        return np.zeros(k), np.ones(k)
    c = STAIRCASE
    g_low = (gamma / (m - 1))[:, None]
    g_up = (gamma / m)[:, None]
    low = clopper_pearson_lower(above[:, 1:], n, g_low) @ np.diff(c)
    up = clopper_pearson_upper(above, n, g_up) @ np.diff(np.append(c, 1.0))
    return np.clip(low, 0.0, 1.0), np.clip(up, 0.0, 1.0)


def _order_bounds(
    tally: Mapping[str, np.ndarray], plan: _Plan, k: int, gamma_side: np.ndarray
) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per estimator: (estimate, lower, upper); ``gamma_side`` is this order's share per ``eps``
    and side, split equally over its estimators."""
    n_est = 3 if plan.tilted else 2
    g = gamma_side / n_est
    n0 = float(tally["n_plain"][0])
    out = {"plain_bernstein": _bernstein(tally["plain_sum"], tally["plain_sum_sq"], n0, g)}
    low, up = _staircase(tally["events_above"], n0, g)
    out["plain_events"] = (np.full(k, np.nan), low, up)
    if plan.tilted:
        mean, low_s, up_s = _bernstein(tally["is_sum"], tally["is_sum_sq"], float(tally["n"][0]), g)
        scale = np.exp(plan.log_bound)
        out["importance_bernstein"] = (
            mean * scale,
            np.minimum(low_s * scale, 1.0),
            np.minimum(up_s * scale, 1.0),
        )
    return out


@dataclass(frozen=True)
class DeltaBounds:
    """``delta`` at every ``eps`` of the grid: estimate and interval, and which estimator (and
    for the combined bounds, which order) produced each value."""

    estimate: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    estimate_source: tuple[str, ...]
    lower_source: tuple[str, ...]
    upper_source: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready lists (``None`` for a missing estimate)."""
        return {
            "estimate": _floats(self.estimate),
            "lower": _floats(self.lower),
            "upper": _floats(self.upper),
            "estimate_source": list(self.estimate_source),
            "lower_source": list(self.lower_source),
            "upper_source": list(self.upper_source),
        }

    def __repr__(self) -> str:
        lower = ", ".join(format_number(x, rounding="down") for x in self.lower)
        upper = ", ".join(format_number(x, rounding="up") for x in self.upper)
        return f"<DeltaBounds at {self.lower.size} eps: lower [{lower}], upper [{upper}]>"


def _combine_estimators(per: Mapping[str, tuple[np.ndarray, ...]]) -> DeltaBounds:
    names = list(per)
    est = np.stack([per[n][0] for n in names])
    low = np.stack([per[n][1] for n in names])
    up = np.stack([per[n][2] for n in names])
    i_low = np.argmax(low, axis=0)
    i_up = np.argmin(up, axis=0)
    cols = np.arange(low.shape[1])
    width = np.where(np.isnan(est), np.inf, up - low)
    i_est = np.argmin(width, axis=0)
    lower, upper = low[i_low, cols], up[i_up, cols]
    estimate = np.clip(est[i_est, cols], lower, upper)
    return DeltaBounds(
        estimate,
        lower,
        np.maximum(upper, lower),
        tuple(names[i] for i in i_est),
        tuple(names[i] for i in i_low),
        tuple(names[i] for i in i_up),
    )


def _combine_orders(orders: Mapping[str, DeltaBounds]) -> DeltaBounds:
    names = list(orders)
    est = np.stack([orders[o].estimate for o in names])
    low = np.stack([orders[o].lower for o in names])
    up = np.stack([orders[o].upper for o in names])
    cols = np.arange(low.shape[1])
    i_est, i_low, i_up = np.argmax(est, axis=0), np.argmax(low, axis=0), np.argmax(up, axis=0)

    def source(kind: str, idx: np.ndarray) -> tuple[str, ...]:
        return tuple(
            f"{getattr(orders[names[i]], kind + '_source')[c]} ({names[i]})"
            for c, i in enumerate(idx)
        )

    return DeltaBounds(
        est[i_est, cols],
        low[i_low, cols],
        up[i_up, cols],
        source("estimate", i_est),
        source("lower", i_low),
        source("upper", i_up),
    )


def _floats(x: np.ndarray) -> list[float | None]:
    """The values as JSON numbers, ``None`` where they are not finite."""
    return to_json_value(np.asarray(x, dtype=float), nonfinite="null")
