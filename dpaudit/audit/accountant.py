"""Auditing accountants: a claimed ``delta(eps)`` against the Monte Carlo privacy loss.

An accountant (a library, a closed form, a table in a paper) claims that a mechanism is
``(eps, delta(eps))``-DP. When the mechanism's densities are known, its privacy loss
``L = log a(y)/b(y)`` can be sampled exactly, and on a neighbouring pair ``(D, D_prime)`` the
tight ``delta`` is the larger of the two hockey-stick divergences (docs/theory.md#conventions;
Steinke 2022, Proposition 7)::

    delta(eps) = max( E_{y~P} (1 - e^{eps - L_{P||Q}(y)})_+ ,
                      E_{y~Q} (1 - e^{eps - L_{Q||P}(y)})_+ ).

:func:`audit_accountant` samples both orders, bounds both expectations with confidence intervals
that hold simultaneously over an ``eps`` grid (Bonferroni), and flags the claim wherever the lower
bound exceeds it. No attack and no threshold search is involved.

Estimators (every bound is exact, i.e. valid for any number of samples):

- ``plain_bernstein``: the sample mean of ``X = (1 - e^{eps - L})_+ in [0, 1]`` under the order's
  own law, with empirical Bernstein bounds (Maurer & Pontil 2009, Theorem 4). Vacuous below
  ``delta ~ 20 / n``.
- ``plain_events``: staircases of events. With ``c_0 = 0 < c_1 < ... < c_m < 1`` and
  ``t_j = eps + log(1 / (1 - c_j))`` (so ``X = c_j`` at ``L = t_j``), ``X`` is non-decreasing in
  ``L``, hence ``sum_{j>=1} (c_j - c_{j-1}) 1{L > t_j} <= X`` and
  ``X <= sum_{j>=0} (c_{j+1} - c_j) 1{L > t_j}`` (``c_{m+1} = 1``), and Clopper-Pearson bounds
  on the event probabilities ``P(L > t_j)`` (Bonferroni over ``j``) bound ``delta``.
  Informative down to ``delta ~ 10 / n``.
- ``importance_bernstein``: samples from a defensive mixture of exponentially tilted laws
  (:mod:`dpaudit.audit.importance`; half of the samples from the order's own law, which also
  feed the two plain estimators), weighted by the likelihood ratio. On every sample the weighted
  summand is at most ``B(eps)``, the Renyi-DP conversion bound of the best tilt divided by its
  mixture weight, so empirical Bernstein bounds on ``summand / B`` are exact. Its relative
  precision depends on ``B / delta``, not on ``delta``: values far below ``1 / n`` are checked.

The one-sided error probability ``1 - confidence`` is split equally over the ``eps`` grid, the
two orders, the two sides and the estimators of each order; each order's interval is the
intersection of its estimators' intervals. With probability at least ``confidence`` every
interval holds at once, so a claim is refuted only where it is wrong, simultaneously for every
claim checked against the same samples.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from joblib import Parallel, delayed
from scipy import special
from tqdm import tqdm

from dpaudit.audit.confidence import (
    clopper_pearson_lower,
    clopper_pearson_upper,
    empirical_bernstein_radius,
)
from dpaudit.audit.engine import default_chunk_size
from dpaudit.audit.importance import LossTilt, log_conversion_factor, loss_tilt
from dpaudit.bounds.validation import check_integer, check_probability
from dpaudit.mechanisms.base import NeighbouringPair

__all__ = [
    "ORDERS",
    "ESTIMATORS",
    "STAIRCASE",
    "Claim",
    "as_claim",
    "ClaimCheck",
    "DeltaBounds",
    "AccountantAudit",
    "AccountantAuditSpec",
    "audit_accountant",
    "run_accountant_spec",
]

#: The two orders of the pair: ``L_{P||Q}`` under ``P = M(D)`` and ``L_{Q||P}`` under ``Q``.
ORDERS = ("d_d_prime", "d_prime_d")

#: The estimators of one order (module docstring).
ESTIMATORS = ("plain_bernstein", "plain_events", "importance_bernstein")

#: Levels ``c_j`` of the event staircases (``c_0 = 0``).
STAIRCASE = np.array([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99])

#: Random streams: ``SeedSequence(seed, spawn_key=(_STREAM + order, chunk))`` (order 0 or 1);
#: ``_STREAM + 2`` draws the two-output probe of the output shape.
_STREAM = 16
_PROBE = 2

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


# --------------------------------------------------------------------------------------- claims
class Claim:
    """A claimed privacy profile ``eps -> delta(eps)`` (vectorised), with a name and a kind.

    ``kind`` is what the claimant states: ``"bound"`` (a guarantee), ``"exact"``,
    ``"approximation"`` (e.g. a central-limit estimate, not a guarantee) or ``"claim"``.
    """

    def __init__(
        self,
        delta_fn: Callable[[np.ndarray], np.ndarray],
        *,
        name: str,
        kind: str = "claim",
        epsilon_fn: Callable[[float], float] | None = None,
    ) -> None:
        self._delta_fn = delta_fn
        self._epsilon_fn = epsilon_fn
        self.name = str(name)
        self.kind = str(kind)

    def __repr__(self) -> str:
        return f"<Claim {self.name} ({self.kind})>"

    def delta(self, eps: float | np.ndarray) -> np.ndarray:
        """Claimed ``delta`` at each ``eps``; ``ValueError`` if it is not in ``[0, 1]``."""
        eps_arr = np.asarray(eps, dtype=float)
        out = np.asarray(self._delta_fn(eps_arr), dtype=float)
        if out.shape != eps_arr.shape:
            out = np.broadcast_to(out, eps_arr.shape).astype(float)
        if np.isnan(out).any() or (out < 0).any() or (out > 1).any():
            raise ValueError(f"claim {self.name} returned delta outside [0, 1] (or NaN)")
        return out

    def epsilon(self, delta: float) -> float:
        """Smallest ``eps >= 0`` with claimed ``delta(eps) <= delta`` (native when the claimant
        computes it, else bisection on :meth:`delta`; ``inf`` if none below ``1e4``)."""
        delta = check_probability("delta", delta)
        if self._epsilon_fn is not None:
            return float(self._epsilon_fn(delta))
        if self.delta(0.0) <= delta:
            return 0.0
        hi = 1.0
        while self.delta(hi) > delta:
            hi *= 2.0
            if hi > 1e4:
                return math.inf
        lo = 0.0
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            if self.delta(mid) <= delta:
                hi = mid
            else:
                lo = mid
        return hi


def _table_claim(table: np.ndarray, name: str) -> Claim:
    """``(eps_i, delta_i)`` pairs: each says ``(eps_i, delta_i)``-DP, which implies
    ``delta(eps) <= min{delta_i : eps_i <= eps}`` (``delta`` is non-increasing in ``eps``)."""
    eps_i, delta_i = table[:, 0], table[:, 1]
    order = np.argsort(eps_i, kind="stable")
    eps_i = eps_i[order]
    best = np.minimum.accumulate(delta_i[order])

    def delta(eps: np.ndarray) -> np.ndarray:
        idx = np.searchsorted(eps_i, eps, side="right") - 1
        return np.where(idx >= 0, best[np.clip(idx, 0, None)], 1.0)

    claim = Claim(delta, name=name, kind="claim")
    claim.table_epsilons = eps_i  # type: ignore[attr-defined]
    return claim


def _callable_claim(fn: Callable[..., Any], name: str, kind: str) -> Claim:
    def delta(eps: np.ndarray) -> np.ndarray:
        try:
            out = np.asarray(fn(eps), dtype=float)
            if out.shape == eps.shape:
                return out
        except (TypeError, ValueError):
            pass
        flat = [float(fn(float(e))) for e in eps.ravel()]
        return np.asarray(flat, dtype=float).reshape(eps.shape)

    return Claim(delta, name=name, kind=kind)


def as_claim(claimed: Any, mechanism: Any = None, *, name: str | None = None) -> Claim:
    """Turn what :func:`audit_accountant` accepts into a :class:`Claim`.

    Accepted: a :class:`Claim`; the name of an accountant of :mod:`dpaudit.accountants` (e.g.
    ``"dp_accounting:pld"``, needs ``mechanism``); anything with ``.delta(eps)`` (a
    :class:`~dpaudit.bounds.tradeoff.TradeoffCurve`, a PLD, an RDP curve, a mechanism's theory);
    a callable ``eps -> delta``; a table of ``(eps, delta)`` pairs (an ``(n, 2)`` array or a
    sequence of pairs), read as the statements ``(eps_i, delta_i)``-DP.
    """
    if isinstance(claimed, Claim):
        return claimed
    if isinstance(claimed, str):
        from dpaudit import accountants

        if mechanism is None:
            raise ValueError(f"the accountant {claimed!r} needs the mechanism it accounts for")
        return accountants.claim(claimed, mechanism)
    label = name or str(getattr(claimed, "name", "") or "claim")
    if hasattr(claimed, "delta") and callable(claimed.delta):
        kind = str(getattr(claimed, "kind", "claim"))
        epsilon = getattr(claimed, "epsilon", None)
        return Claim(
            lambda eps: np.asarray(claimed.delta(eps), dtype=float),
            name=label,
            kind=kind,
            epsilon_fn=epsilon if callable(epsilon) else None,
        )
    if callable(claimed):
        return _callable_claim(claimed, name or getattr(claimed, "__name__", "claim"), "claim")
    try:
        table = np.asarray(claimed, dtype=float)
    except (TypeError, ValueError):
        table = None
    if table is None or table.ndim != 2 or table.shape[1] != 2 or table.shape[0] < 1:
        raise ValueError(
            "claimed must be a callable eps -> delta, an object with .delta(eps), an accountant "
            f"name, or a table of (eps, delta) pairs; got {type(claimed).__name__}"
        )
    if (
        not np.isfinite(table).all()
        or (table[:, 0] < 0).any()
        or (table[:, 1] < 0).any()
        or (table[:, 1] > 1).any()
    ):
        raise ValueError("a table of (eps, delta) pairs needs eps >= 0 and delta in [0, 1]")
    return _table_claim(table, name or "claim")


def _claims(claimed: Any, mechanism: Any) -> dict[str, Claim | Exception]:
    """Name -> claim, or the exception that says why it is unavailable."""
    if isinstance(claimed, Mapping):
        items = list(claimed.items())
    elif isinstance(claimed, list | tuple) and all(isinstance(c, str) for c in claimed):
        items = [(c, c) for c in claimed]
    else:
        items = [(None, claimed)]
    from dpaudit.accountants import AccountantUnavailable

    out: dict[str, Claim | Exception] = {}
    for key, value in items:
        label = key if key is not None else (value if isinstance(value, str) else None)
        try:
            claim = as_claim(value, mechanism, name=label)
        except AccountantUnavailable as exc:
            out[str(label)] = exc
            continue
        out[label if label is not None else claim.name] = claim
    if not out:
        raise ValueError("claimed must hold at least one claim")
    return out


# --------------------------------------------------------------------------------------- model
def _loss_model(mechanism: Any, pair: NeighbouringPair) -> tuple[Any, NeighbouringPair]:
    """The mechanism and pair whose densities give the privacy loss.

    DP-SGD observing the canary updates (``observe="updates"``) releases exactly its
    accountant's outputs on the records' canary coefficients (its ``log_density`` delegates to
    it), so its privacy loss is sampled there rather than by training models.
    """
    accountant = getattr(mechanism, "accountant", None)
    if accountant is not None and getattr(mechanism, "observe", None) == "updates":
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


def _generator(seed: int, stream: int, chunk: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_STREAM + stream, chunk)))


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
        rng = _generator(job.seed, order, chunk)
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
            with np.errstate(over="ignore", under="ignore"):
                s = _hockey(job.eps, loss[keep]) * np.exp(
                    log_w[keep][None, :] - plan.log_bound[:, None]
                )
            s = np.minimum(s, 1.0)
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
    return [float(v) if math.isfinite(v) else None for v in np.asarray(x, dtype=float)]


# --------------------------------------------------------------------------------------- claims
@dataclass(frozen=True)
class ClaimCheck:
    """The verdict on one claim.

    ``status`` is ``"violated"`` (the lower confidence bound on the true ``delta`` exceeds the
    claim at some ``eps``), ``"consistent"`` (nowhere), or, when the claim could not be
    evaluated, ``"not installed"``, ``"unsupported"`` or ``"error"`` (``reason`` says why).

    Per ``eps``: ``claimed``; ``violated``; ``ratio`` = lower bound / claim (how many times the
    true ``delta`` at least exceeds the claim); ``p_value``, the smallest family-wise error
    probability at which the violation is still detected (the violation holds at confidence
    ``1 - p_value``); ``epsilon_understatement``: the claim reaches ``delta = lower`` at an
    ``eps`` this much smaller than ``eps`` itself, while the true ``eps`` there is at least ``eps``.
    """

    name: str
    status: str
    kind: str = "claim"
    claimed: np.ndarray | None = None
    violated: np.ndarray | None = None
    ratio: np.ndarray | None = None
    p_value: np.ndarray | None = None
    epsilon_understatement: np.ndarray | None = None
    reason: str = ""

    @property
    def is_violated(self) -> bool:
        """True when the claim is refuted at some ``eps`` of the grid."""
        return self.status == "violated"

    @property
    def worst(self) -> int | None:
        """Index of the ``eps`` with the smallest p-value among the violations (or ``None``)."""
        if self.violated is None or not self.violated.any():
            return None
        p = np.where(self.violated, self.p_value, np.inf)
        return int(np.argmin(p))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary and per-``eps`` values."""
        out: dict[str, Any] = {"name": self.name, "status": self.status, "kind": self.kind}
        if self.reason:
            out["reason"] = self.reason
        if self.claimed is not None:
            out["claimed"] = _floats(self.claimed)
            out["violated"] = [bool(v) for v in self.violated]
            out["ratio"] = _floats(self.ratio)
            out["p_value"] = _floats(self.p_value)
            out["epsilon_understatement"] = _floats(self.epsilon_understatement)
            w = self.worst
            out["min_p_value"] = None if w is None else float(self.p_value[w])
            out["max_ratio"] = (
                _floats([np.nanmax(np.where(self.violated, self.ratio, np.nan))])[0]
                if w is not None
                else None
            )
        return out


def _unavailable(name: str, exc: Exception) -> ClaimCheck:
    status = str(getattr(exc, "status", "unsupported"))
    return ClaimCheck(name=name, status=status, kind="", reason=" ".join(str(exc).split()))


# --------------------------------------------------------------------------------------- result
class AccountantAudit:
    """Result of :func:`audit_accountant`: ``delta(eps)`` bounds and the claims' verdicts.

    Attributes
    ----------
    epsilons:
        The ``eps`` grid.
    delta:
        :class:`DeltaBounds` of the mechanism's ``delta(eps)`` (the larger of the two orders),
        simultaneous over the grid at ``confidence``.
    orders:
        :class:`DeltaBounds` of each order (:data:`ORDERS`).
    estimators:
        Order -> estimator -> ``(estimate, lower, upper)`` arrays (:data:`ESTIMATORS`).
    claims:
        Claim name -> :class:`ClaimCheck`.
    weight_check:
        Order -> ``(mean, lower, upper)`` of the importance weights, whose true mean is 1: a
        check of the tilted samplers (``None`` for an order sampled plainly).
    """

    def __init__(
        self,
        *,
        mechanism: Any,
        pair: NeighbouringPair,
        epsilons: np.ndarray,
        trials: int,
        seed: int,
        confidence: float,
        chunk_size: int,
        plans: tuple[_Plan, _Plan],
        tallies: tuple[dict, dict],
        elapsed_seconds: float,
    ) -> None:
        self.mechanism_name = str(getattr(mechanism, "name", type(mechanism).__name__))
        params = getattr(mechanism, "params", None)
        self.mechanism_params = params() if callable(params) else {}
        self.pair = pair
        self.epsilons = np.asarray(epsilons, dtype=float)
        self.trials = trials
        self.seed = seed
        self.confidence = confidence
        self.chunk_size = chunk_size
        self.plans = plans
        self.tallies = tallies
        self.elapsed_seconds = elapsed_seconds
        self.estimators, self.orders, self.delta = self._bounds(1.0 - confidence)
        self.weight_check: dict[str, tuple[float, float, float] | None] = {}
        for name, plan, tally in zip(ORDERS, plans, tallies, strict=True):
            if not plan.tilted:
                self.weight_check[name] = None
                continue
            g = np.array([(1.0 - confidence) / 2.0])
            mean, low, up = _bernstein(
                tally["weight_sum"], tally["weight_sum_sq"], float(tally["n"][0]), g
            )
            self.weight_check[name] = (
                float(mean[0] / _PLAIN_WEIGHT),
                float(low[0] / _PLAIN_WEIGHT),
                float(up[0] / _PLAIN_WEIGHT),
            )
        self.claims: dict[str, ClaimCheck] = {}

    def _bounds(
        self, gamma: np.ndarray | float
    ) -> tuple[dict[str, dict[str, tuple]], dict[str, DeltaBounds], DeltaBounds]:
        k = self.epsilons.size
        gamma_side = np.broadcast_to(np.asarray(gamma, dtype=float), (k,)) / (4.0 * k)
        estimators = {
            name: _order_bounds(tally, plan, k, gamma_side)
            for name, plan, tally in zip(ORDERS, self.plans, self.tallies, strict=True)
        }
        orders = {name: _combine_estimators(per) for name, per in estimators.items()}
        return estimators, orders, _combine_orders(orders)

    def lower_bound(self, confidence: float | np.ndarray) -> np.ndarray:
        """Lower bounds on ``delta`` at every ``eps`` at another (family-wise) ``confidence``
        (a number, or one per ``eps``)."""
        level = np.asarray(confidence, dtype=float)
        if np.isnan(level).any() or (level <= 0).any() or (level >= 1).any():
            raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
        return self._bounds(1.0 - level)[2].lower

    def _p_values(self, claimed: np.ndarray) -> np.ndarray:
        """Per ``eps``: the smallest family-wise error probability at which lower > claimed
        (bisection on ``log gamma``; the lower bound decreases as ``gamma`` decreases)."""
        k = self.epsilons.size
        lo = np.full(k, math.log(1e-300))
        hi = np.full(k, math.log(1.0 - 1e-12))
        detected_hi = self._bounds(np.exp(hi))[2].lower > claimed
        if not detected_hi.any():
            return np.ones(k)
        detected_lo = self._bounds(np.exp(lo))[2].lower > claimed
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            hit = self._bounds(np.exp(mid))[2].lower > claimed
            hi = np.where(hit, mid, hi)
            lo = np.where(hit, lo, mid)
        p = np.exp(hi)
        p = np.where(detected_lo, 1e-300, p)
        return np.where(detected_hi, p, 1.0)

    def check(self, claimed: Any, name: str | None = None, mechanism: Any = None) -> ClaimCheck:
        """Check another claim against the same samples and store its verdict in
        :attr:`claims` (the intervals are simultaneous, so every verdict holds at once)."""
        from dpaudit.accountants import AccountantUnavailable

        try:
            claim = as_claim(claimed, mechanism, name=name)
        except AccountantUnavailable as exc:
            check = _unavailable(name or str(claimed), exc)
            self.claims[check.name] = check
            return check
        label = name or claim.name
        try:
            values = claim.delta(self.epsilons)
        except Exception as exc:  # noqa: BLE001 - a failing accountant is a finding, not a crash
            check = ClaimCheck(label, "error", claim.kind, reason=" ".join(str(exc).split()))
            self.claims[label] = check
            return check
        lower = self.delta.lower
        violated = lower > values
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(values > 0, lower / values, np.where(lower > 0, np.inf, 1.0))
        p_value = self._p_values(values)
        understated = np.full(values.size, np.nan)
        for i in np.flatnonzero(violated):
            try:
                eps_claim = claim.epsilon(float(lower[i]))
            except Exception:  # noqa: BLE001, S112 - cannot invert the claim: no gap reported
                continue
            understated[i] = max(float(self.epsilons[i]) - eps_claim, 0.0)
        check = ClaimCheck(
            name=label,
            status="violated" if violated.any() else "consistent",
            kind=claim.kind,
            claimed=values,
            violated=violated,
            ratio=ratio,
            p_value=p_value,
            epsilon_understatement=understated,
        )
        self.claims[label] = check
        return check

    @property
    def violated(self) -> bool:
        """True when some claim is refuted."""
        return any(c.is_violated for c in self.claims.values())

    def summary(self) -> str:
        """One line per claim, in plain words."""
        lines = []
        for check in self.claims.values():
            lines.append(f"{check.name}: {_verdict_sentence(check, self)}")
        return "\n".join(lines)

    def to_frame(self) -> Any:
        """A pandas DataFrame: one row per ``eps`` with the bounds and every claim."""
        import pandas as pd

        cols: dict[str, Any] = {
            "eps": self.epsilons,
            "delta": self.delta.estimate,
            "lower": self.delta.lower,
            "upper": self.delta.upper,
            "lower_source": self.delta.lower_source,
        }
        for name, check in self.claims.items():
            if check.claimed is not None:
                cols[f"claim[{name}]"] = check.claimed
                cols[f"violated[{name}]"] = check.violated
        return pd.DataFrame(cols)

    def to_dict(self) -> dict[str, Any]:
        """Every number of the audit, JSON-ready."""
        estimators = {
            order: {
                est: {"estimate": _floats(v[0]), "lower": _floats(v[1]), "upper": _floats(v[2])}
                for est, v in per.items()
            }
            for order, per in self.estimators.items()
        }
        return {
            "kind": "accountant_audit",
            "mechanism": {"name": self.mechanism_name, "params": _jsonable(self.mechanism_params)},
            "pair": self.pair.to_dict(),
            "trials": self.trials,
            "seed": self.seed,
            "confidence": self.confidence,
            "chunk_size": self.chunk_size,
            "elapsed_seconds": self.elapsed_seconds,
            "epsilons": self.epsilons.tolist(),
            "delta": self.delta.to_dict(),
            "orders": {name: b.to_dict() for name, b in self.orders.items()},
            "estimators": estimators,
            "importance": {
                name: (plan.to_dict() if plan.tilted else None)
                for name, plan in zip(ORDERS, self.plans, strict=True)
            },
            "weight_check": {
                k: (None if v is None else list(v)) for k, v in self.weight_check.items()
            },
            "method": (
                "privacy-loss Monte Carlo; intervals simultaneous over the eps grid, both "
                "orders and both sides (Bonferroni); estimators: empirical Bernstein "
                "(Maurer-Pontil 2009) on plain and on importance-weighted samples, "
                "Clopper-Pearson on event staircases"
            ),
            "claims": {name: c.to_dict() for name, c in self.claims.items()},
        }


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def _verdict_sentence(check: ClaimCheck, result: AccountantAudit) -> str:
    if check.status in ("not installed", "unsupported", "error"):
        return f"{check.status} ({check.reason})" if check.reason else check.status
    if not check.is_violated:
        return (
            f"consistent: the claim is at or above the {result.confidence:.0%} lower bound on "
            f"the true delta at every eps of the grid"
        )
    i = check.worst
    eps = result.epsilons[i]
    ratio = check.ratio[i]
    times = f"{ratio:.3g} times the claim" if math.isfinite(ratio) else "the claim is 0"
    p = float(check.p_value[i])
    p_text = "p-value < 1e-300" if p <= 1e-300 else f"p-value {p:.2g}"
    text = (
        f"VIOLATED at eps = {eps:.4g}: claims delta = {check.claimed[i]:.3g}, but the true "
        f"delta is at least {result.delta.lower[i]:.3g} ({times}; family-wise {p_text})"
    )
    if check.kind == "approximation":
        text += " [the claimant calls this an approximation, not a guarantee]"
    gap = check.epsilon_understatement[i]
    if math.isfinite(gap) and gap > 0:
        text += f"; eps understated by at least {gap:.3g}"
    n = int(check.violated.sum())
    if n > 1:
        text += f"; violated at {n} of {check.violated.size} eps values"
    return text


# --------------------------------------------------------------------------------------- grid
def _check_epsilons(epsilons: Any) -> np.ndarray:
    eps = np.atleast_1d(np.asarray(epsilons, dtype=float))
    if eps.ndim != 1 or eps.size == 0 or not np.isfinite(eps).all() or (eps < 0).any():
        raise ValueError(
            f"epsilons must be a non-empty 1-d sequence of finite numbers >= 0, got {epsilons!r}"
        )
    return np.unique(eps)


def _default_epsilons(
    mechanism: Any, claims: Mapping[str, Claim | Exception], floor: float
) -> np.ndarray:
    """``eps`` at :data:`_DEFAULT_POINTS` values of ``delta`` from 0.1 down to ``floor``: from the
    mechanism's own tightest valid theory when it has one, else from the first claim (a table
    claim's own ``eps`` values are used as they are)."""
    deltas = np.geomspace(0.1, floor, _DEFAULT_POINTS)
    available = [c for c in claims.values() if isinstance(c, Claim)]
    for claim in available:
        table = getattr(claim, "table_epsilons", None)
        if table is not None:
            return np.unique(table)
    sources: list[Callable[[float], float]] = []
    methods = getattr(mechanism, "theory_methods", ())
    from dpaudit.mechanisms.base import METHOD_KINDS

    for method in methods:
        if METHOD_KINDS.get(method) in ("exact", "bound"):
            sources.append(lambda d, m=method: mechanism.epsilon(d, method=m))
            break
    sources += [c.epsilon for c in available]
    for source in sources:
        found = []
        for d in deltas:
            try:
                found.append(float(source(float(d))))
            except (ValueError, ArithmeticError, NotImplementedError):
                continue
        eps = np.array(found)
        eps = eps[np.isfinite(eps)]
        if eps.size >= 2:
            return np.unique(np.round(eps, 4))
    raise ValueError("cannot choose an eps grid for this mechanism and claim: pass epsilons=")


# --------------------------------------------------------------------------------------- main
def audit_accountant(
    mechanism: Any,
    claimed: Any,
    *,
    trials: int,
    seed: int = 0,
    confidence: float = 0.95,
    epsilons: Sequence[float] | np.ndarray | None = None,
    pair: NeighbouringPair | None = None,
    n_jobs: int = 1,
    importance: bool | str = "auto",
    chunk_size: int | None = None,
    progress: bool | None = None,
) -> AccountantAudit:
    """Check claimed ``delta(eps)`` curves against the sampled privacy loss of ``mechanism``.

    Parameters
    ----------
    mechanism:
        A mechanism with ``sample`` and ``log_density`` (every reference mechanism, subsampled
        and composed ones; DP-SGD observing its canary updates).
    claimed:
        One claim or several: a callable ``eps -> delta``, a table of ``(eps, delta)`` pairs, a
        :class:`~dpaudit.bounds.tradeoff.TradeoffCurve`, anything with ``.delta(eps)``, the name
        of an accountant of :mod:`dpaudit.accountants` (``"dp_accounting:pld"``, ...), a list of
        such names, or a mapping name -> claim. Accountants whose package is missing or that do
        not cover the mechanism are reported as such (:class:`ClaimCheck`), not as errors.
    trials:
        Privacy-loss samples per order (``D || D_prime`` and ``D_prime || D``).
    seed:
        Root seed; chunk ``i`` of order ``o`` uses ``SeedSequence(seed, spawn_key=(16 + o, i))``.
    confidence:
        Family-wise level of the intervals, simultaneous over the grid, orders and sides.
    epsilons:
        The ``eps`` grid; default: ``eps`` at 12 values of ``delta`` from ``0.1`` down to
        ``10 / trials`` (``1e-10`` when importance sampling is available), read off the
        mechanism's own tightest theory, else off the first claim.
    pair:
        The neighbouring pair; default ``mechanism.worst_case_pair()``.
    n_jobs:
        Workers for ``joblib.Parallel``; the result is bit-identical for any value.
    importance:
        ``"auto"`` (tilt every order that has an exact tilted sampler), ``True`` (require one) or
        ``False`` (plain sampling only).
    chunk_size:
        Samples per random-stream chunk (default as in :func:`dpaudit.audit`); results depend on
        it, so it is recorded.
    progress:
        Progress bar on stderr; ``None`` shows it for ``10^7`` samples or more on a terminal.
    """
    started = time.perf_counter()
    trials = check_integer("trials", trials, minimum=2)
    seed = check_integer("seed", seed, minimum=0)
    confidence = check_probability("confidence", confidence, low_open=True, high_open=True)
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int | np.integer) or n_jobs == 0:
        raise ValueError(f"n_jobs must be a non-zero integer (-1 = all cores), got {n_jobs!r}")
    if importance not in ("auto", True, False):
        raise ValueError(f"importance must be 'auto', True or False, got {importance!r}")
    if progress is not None and not isinstance(progress, bool):
        raise ValueError(f"progress must be None, True or False, got {progress!r}")
    pair = mechanism.worst_case_pair() if pair is None else pair
    if not isinstance(pair, NeighbouringPair):
        raise ValueError(f"pair must be a NeighbouringPair, got {type(pair).__name__}")
    model, model_pair = _loss_model(mechanism, pair)
    datasets = ((model_pair.d, model_pair.d_prime), (model_pair.d_prime, model_pair.d))
    tilts: tuple[LossTilt | None, LossTilt | None] = (None, None)
    if importance is not False:
        tilts = tuple(loss_tilt(model, a, b) for a, b in datasets)  # type: ignore[assignment]
        if importance is True and all(t is None for t in tilts):
            raise ValueError(
                f"importance=True, but no exact tilted sampler is known for {model.name}; "
                "use importance='auto' or False"
            )
    claims = _claims(claimed, mechanism)
    if epsilons is None:
        floor = min(10.0 / trials, 1e-10) if any(t is not None for t in tilts) else 10.0 / trials
        eps = _default_epsilons(mechanism, claims, min(floor, 0.01))
    else:
        eps = _check_epsilons(epsilons)
    plans = (_plan(tilts[0], eps), _plan(tilts[1], eps))
    thresholds = eps[:, None] - np.log1p(-STAIRCASE)[None, :]

    probe = np.asarray(model.sample(model_pair.d, 2, _generator(seed, _PROBE, 0)))
    try:
        model.log_density(model_pair.d, probe)
    except (NotImplementedError, AttributeError):
        raise ValueError(
            f"{getattr(model, 'name', type(model).__name__)} has no log_density: its privacy "
            "loss cannot be sampled (DP-SGD: use observe='updates')"
        ) from None
    values = max(1, int(np.prod(probe.shape[1:], dtype=np.int64)))
    chunk_size = default_chunk_size(values) if chunk_size is None else chunk_size
    chunk_size = check_integer("chunk_size", chunk_size, minimum=1)
    job = _Job(model, datasets, tilts, plans, eps, thresholds, seed, chunk_size)
    tasks = _tasks(0, trials, chunk_size) + _tasks(1, trials, chunk_size)
    disable = (2 * trials < 10**7) if progress is None else not progress
    bar = tqdm(
        total=2 * trials,
        unit="sample",
        unit_scale=True,
        file=sys.stderr,
        disable=True if disable else None,
        desc=f"{getattr(model, 'name', 'mechanism')} (privacy loss)",
    )
    totals: list[dict | None] = [None, None]
    with bar, Parallel(n_jobs=int(n_jobs), return_as="generator") as parallel:
        results = parallel(delayed(_run_task)(job, *task) for task in tasks)
        for (order, first, n_chunks, total), tally in zip(tasks, results, strict=True):
            totals[order] = _add(totals[order], tally)
            bar.update(min(total, (first + n_chunks) * chunk_size) - first * chunk_size)
    result = AccountantAudit(
        mechanism=mechanism,
        pair=pair,
        epsilons=eps,
        trials=trials,
        seed=seed,
        confidence=confidence,
        chunk_size=chunk_size,
        plans=plans,
        tallies=(totals[0], totals[1]),
        elapsed_seconds=0.0,
    )
    for name, claim in claims.items():
        if isinstance(claim, Exception):
            result.claims[name] = _unavailable(name, claim)
        else:
            result.check(claim, name=name)
    result.elapsed_seconds = time.perf_counter() - started
    return result


# --------------------------------------------------------------------------------------- specs
@dataclass(frozen=True)
class AccountantAuditSpec:
    """One ``[[accountant_audit]]`` of a spec file: a mechanism and the accountants to audit.

    ``accountants`` are names of :mod:`dpaudit.accountants` (``dpaudit.accountants.NAMES``).
    """

    name: str
    mechanism: Any
    accountants: tuple[str, ...]
    trials: int
    epsilons: tuple[float, ...] | None = None
    pair: NeighbouringPair | None = None
    seed: int = 0
    confidence: float = 0.95
    importance: bool | str = "auto"
    n_jobs: int = 1
    description: str = ""
    table: dict[str, Any] = field(default_factory=dict, compare=False)

    def run(self, *, progress: bool | None = None) -> AccountantAudit:
        """Run :func:`audit_accountant` with this spec's settings."""
        return audit_accountant(
            self.mechanism,
            list(self.accountants),
            trials=self.trials,
            seed=self.seed,
            confidence=self.confidence,
            epsilons=self.epsilons,
            pair=self.pair,
            n_jobs=self.n_jobs,
            importance=self.importance,
            progress=progress,
        )


def run_accountant_spec(spec: AccountantAuditSpec, *, progress: bool | None = None) -> dict:
    """Run one accountant audit and return its JSON-ready record: the result's
    :meth:`AccountantAudit.to_dict` plus ``name``, ``description``, ``spec`` (the table as
    written) and ``summary`` (one sentence per accountant)."""
    result = spec.run(progress=progress)
    record = result.to_dict()
    record.update(
        name=spec.name,
        description=spec.description,
        spec=_jsonable(spec.table),
        summary={name: _verdict_sentence(c, result) for name, c in result.claims.items()},
    )
    return record
