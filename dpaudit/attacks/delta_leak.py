"""The delta-leak attack: a learned score plus tests on exact output events.

Real DP bugs often live in events a smooth score cannot see: an exact value that recurs (a code
path that skips the noise, Mironov 2012's floating-point artefacts, the exact true answer
released by an error handler), or values that only one of the two datasets ever produces
(Lokna et al. 2023, "Group and Attack: Auditing Differential Privacy"; Ding et al. 2018).
A release that, with probability ``1e-4``, publishes the exact answer ``f(D_prime)`` that the
continuous noise under ``D`` never produces has ``P_D(E) = 0`` and ``P_D_prime(E) = 1e-4`` on
``E = {y = f(D_prime)}``: it is not ``(eps, 1e-6)``-DP for any ``eps``, yet a learned ratio of
the smooth part scores that value like any other.

:class:`DeltaLeak` learns on the fit sample only (never on selection or evaluation trials):

1. the smooth score, :class:`~dpaudit.attacks.learned.Learned` by default;
2. **event sets** from exact counts. Every output row is hashed (its bytes) and, for vector
   outputs, every coordinate value too (key ``(coordinate, value)``). A key seen at least
   ``min_count`` times under ``D_prime`` and never under ``D`` joins ``S_plus``; one seen at
   least ``min_count`` times under ``D`` and never under ``D_prime`` joins ``S_minus``. A single
   occurrence of a continuous value is not an event (it never recurs).

The score of an output is ``+inf`` when it falls in ``S_plus`` (and not in ``S_minus``),
``-inf`` in the opposite case, and the smooth score otherwise.

Why no multiple-testing cost is due. The events are folded into the one score the engine
thresholds: ``score >= t`` for ``t`` above every finite score is the test "output in
``S_plus``", ``score >= t`` for ``t`` below every finite score the test "output not in
``S_minus``", and every other threshold is a smooth-score test (with the events on their
sides). The score function is fixed by the fit sample, which is independent of the selection
and evaluation trials, so the engine's threshold selection (holdout, Bonferroni or fixed; one
selection among all thresholds of this single score) covers the event tests exactly as it covers
the smooth thresholds; no test is added, so nothing is to be corrected. A poor event set only
weakens the test, it never invalidates a bound. (The score grid puts infinite scores into its
two overflow bins, whose edges are thresholds the engine tests.)

When every output is one of a few values (at most ``max_categories`` distinct rows in the fit
sample, which recur: :func:`~dpaudit.attacks.learned.few_values`) the smooth score is already the
smoothed count ratio of each exact output, which ranks one-sided repeated values at the
extremes; events are then not added, so their order (by count) is kept.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpaudit.attacks.base import Attack
from dpaudit.attacks.learned import Learned, _as_matrix, _DrawsTraining, _row_keys, few_values
from dpaudit.bounds.validation import check_integer, check_seed

__all__ = ["DeltaLeak"]


def _counts(keys: np.ndarray, n0: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sorted distinct keys and their counts among ``keys[:n0]`` (``D``) and ``keys[n0:]``."""
    unique, inverse = np.unique(keys, return_inverse=True)
    inverse = inverse.ravel()
    c0 = np.bincount(inverse[:n0], minlength=unique.size)
    c1 = np.bincount(inverse[n0:], minlength=unique.size)
    return unique, c0, c1


def _member(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Whether each key is in ``sorted_keys`` (binary search)."""
    if sorted_keys.size == 0:
        return np.zeros(keys.size, dtype=bool)
    pos = np.minimum(np.searchsorted(sorted_keys, keys), sorted_keys.size - 1)
    return sorted_keys[pos] == keys


class DeltaLeak(_DrawsTraining, Attack):
    """Smooth learned score plus exact-output events; the default attack for black boxes.

    Parameters
    ----------
    base:
        The smooth score, fitted on the same sample; default ``Learned()``.
    min_count:
        A key is an event when it occurs at least this often under one dataset and never under
        the other (``>= 2``: a value that recurs).
    max_categories:
        With at most this many distinct output rows in the fit sample, which recur, no events
        are built (the smooth score is then an exact count ratio per output).
    mechanism, pair, train_trials, seed:
        With a mechanism and a pair, :meth:`fit` adds ``train_trials`` outputs per dataset of
        ``pair`` (at most ``2^24`` values per dataset) drawn from ``SeedSequence([seed, tag])``,
        a generator independent of every stream of the audit engine, to the fit sample (more
        rare events are seen; validity is unchanged). They are the very outputs
        :class:`~dpaudit.attacks.learned.Learned` bound to the same mechanism, pair and seed
        would draw, so without events the score is that attack's score.
    """

    learns = True

    def __init__(
        self,
        base: Attack | None = None,
        *,
        min_count: int = 2,
        max_categories: int = 1024,
        mechanism: Any = None,
        pair: Any = None,
        train_trials: int = 0,
        seed: int = 0,
    ) -> None:
        if base is not None and not isinstance(base, Attack):
            raise ValueError(f"base must be a dpaudit Attack, got {type(base).__name__}")
        if (mechanism is None) != (pair is None):
            raise ValueError("mechanism and pair must be given together (or neither)")
        if mechanism is not None and not callable(getattr(mechanism, "sample", None)):
            raise ValueError(f"mechanism must offer sample(), got {type(mechanism).__name__}")
        self.base = Learned(seed=seed) if base is None else base
        self.min_count = check_integer("min_count", min_count, minimum=2)
        self.max_categories = check_integer("max_categories", max_categories, minimum=1)
        self.mechanism = mechanism
        self.pair = pair
        self.train_trials = check_integer("train_trials", train_trials, minimum=0)
        self.training_limit: int | None = None
        self.seed = check_seed("seed", seed)
        self.fitted = False
        self.width = 0
        self.plus: list[np.ndarray] = []
        self.minus: list[np.ndarray] = []
        self.training: dict[str, Any] = {}

    def _families(self, y: np.ndarray) -> list[np.ndarray]:
        """Keys per family: whole rows, then (for vector outputs) each coordinate's values."""
        families = [_row_keys(y)]
        if y.shape[1] > 1:
            families += [_row_keys(y[:, j : j + 1]) for j in range(y.shape[1])]
        return families

    def fit(self, outputs_d: np.ndarray, outputs_d_prime: np.ndarray) -> DeltaLeak:
        """Fit the smooth score and build the event sets from the fit sample (plus the extra
        training outputs when the attack knows its mechanism and pair)."""
        y0 = _as_matrix(outputs_d, "outputs_d")
        y1 = _as_matrix(outputs_d_prime, "outputs_d_prime")
        more0, more1, extra = self._draw_training(y0.shape[1])
        if extra:
            y0 = np.vstack([y0, _as_matrix(more0, "outputs_d")])
            y1 = np.vstack([y1, _as_matrix(more1, "outputs_d_prime")])
        if y0.shape[1] != y1.shape[1]:
            raise ValueError(
                "outputs under D and D_prime must have the same number of values, "
                f"got {y0.shape[1]} and {y1.shape[1]}"
            )
        fitted = self.base.fit(y0, y1) if self.base.learns else self.base
        self.base = self.base if fitted is None else fitted
        pooled = np.vstack([y0, y1])
        n0 = y0.shape[0]
        self.plus, self.minus = [], []
        few = few_values(pooled, self.max_categories)
        for keys in [] if few else self._families(pooled):
            unique, c0, c1 = _counts(keys, n0)
            self.plus.append(unique[(c1 >= self.min_count) & (c0 == 0)])
            self.minus.append(unique[(c0 >= self.min_count) & (c1 == 0)])
        self.width = y0.shape[1]
        self.fitted = True
        self.training = {
            "outputs_per_dataset": [int(y0.shape[0]), int(y1.shape[0])],
            "extra": extra,
            "events_d_prime": int(sum(s.size for s in self.plus)),
            "events_d": int(sum(s.size for s in self.minus)),
        }
        return self

    def score(self, outputs: np.ndarray) -> np.ndarray:
        """The smooth score, replaced by ``+inf`` on ``S_plus`` and ``-inf`` on ``S_minus``."""
        if not self.fitted:
            raise ValueError(
                "DeltaLeak attack must be fitted first: fit(outputs_d, outputs_d_prime)"
            )
        y = _as_matrix(outputs, "outputs")
        if y.shape[1] != self.width:
            raise ValueError(
                f"outputs must have {self.width} values each (as in training), got {y.shape[1]}"
            )
        s = np.asarray(self.base.score(y), dtype=float).copy()
        if not self.plus:
            return s
        up = np.zeros(y.shape[0], dtype=bool)
        down = np.zeros(y.shape[0], dtype=bool)
        for keys, plus, minus in zip(self._families(y), self.plus, self.minus, strict=True):
            up |= _member(plus, keys)
            down |= _member(minus, keys)
        s[up & ~down] = np.inf
        s[down & ~up] = -np.inf
        return s

    def params(self) -> dict[str, Any]:
        """Settings, the smooth score's parameters and, once fitted, the event counts."""
        out: dict[str, Any] = {
            "base": self.base.name,
            "base_params": self.base.params(),
            "min_count": self.min_count,
            "max_categories": self.max_categories,
            "train_trials": self.train_trials if self.mechanism is not None else 0,
            "seed": self.seed,
        }
        if self.fitted:
            out["training"] = dict(self.training)
        return out

    @property
    def name(self) -> str:
        """``DeltaLeak(<smooth score>)``."""
        return f"DeltaLeak({self.base.name})"
