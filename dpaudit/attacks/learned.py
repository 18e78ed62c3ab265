"""Learned attacks: a likelihood-ratio score estimated from samples when the density is unknown.

The Neyman-Pearson test thresholds ``log q(y)/p(y)`` (docs/theory.md#conventions). When the
mechanism
is foreign code nothing tells us ``p`` and ``q``, so :class:`Learned` estimates the log ratio from
outputs under ``D`` and ``D_prime`` that are independent of the trials the bounds are read from:
the **fit sample** the engine draws for it from its own random stream (:func:`dpaudit.audit`),
plus, when the attack knows the mechanism and the pair, ``train_trials`` more outputs per dataset
from a generator of its own. The engine then thresholds the learned score on fresh trials, so
every bound stays valid however good or bad the estimate is: a poor estimate only makes the test
weaker (the same split as Bichsel et al. 2021, "DP-Sniper", Section IV).

Estimators, by kind of output space:

- **discrete** (few distinct outputs): exact per-value counts with additive smoothing ``k``,
  ``log((n1(y) + k) / (N1 + kK)) - log((n0(y) + k) / (N0 + kK))`` over the ``K`` values seen.
  An output that is rare under ``D`` and common under ``D_prime`` gets a large score however
  small its probability; the engine's thresholds reach it, so rare-event leaks are certified
  (tools that only build events of probability at least 1%, such as DP-Sniper with its default
  ``c = 0.01``, cannot certify more than ``log(0.99/0.01) = 4.6``).
- **histogram** (scalar outputs): repeated values are atoms with their own smoothed counts; the
  other values are scored either by a logistic model linear in ``y`` or by a smoothed histogram
  of the log ratio on pooled-quantile bins (interpolated between bin centres), whichever
  cross-validation prefers. The linear score is monotone in ``y`` and extends into the tails
  where the training sample has no data, so thresholds far in the tails (false-positive rates
  near ``1e-6``) still order outputs correctly; for families with a monotone likelihood ratio
  (Gaussian and Laplace shifts, maxima of them, ...) it induces exactly the Neyman-Pearson
  tests. The histogram catches non-monotone ratios.
- **classifier** (several coordinates): L2-regularised logistic regression (Newton's method) on
  standardised coordinates and indicator features for values that repeat (flags such as "query
  aborted").
- **mixed** (discrete and continuous coordinates, e.g. answer codes and released values): the
  count ratio of the discrete part plus, within every frequent category, a scalar or vector model
  of the continuous part's conditional ratio.

Choices between candidates use two-fold cross-validated log loss (the log loss of the posterior
``P(D_prime | y)`` implied by the estimated ratio) with the one-standard-error rule: the simplest
candidate whose loss is within one standard error of the best one's. ``model="auto"`` uses the
discrete estimator for scalar outputs with few distinct values (at most ``max_categories``, each
seen twice on average: a small sample of a continuous output, whose values never recur, is not
few values), lets cross-validation choose between discrete and classifier for vector outputs
with few distinct values, lets it choose between mixed and classifier when some coordinates are
discrete, and otherwise uses histogram (scalar) or classifier (vector).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit._core.streams import TAGS
from dpaudit._core.validation import check_choice, check_integer, check_positive, check_seed
from dpaudit.attacks.base import Attack

__all__ = ["Learned", "LEARNED_MODELS", "fit_logistic", "few_values"]

#: Values of ``Learned(model=...)``.
LEARNED_MODELS = ("auto", "discrete", "histogram", "classifier", "mixed")

#: Outputs are a few values (:func:`few_values`) when each distinct one is seen this often on
#: average in the training sample.
_FEW_MEAN_COUNT = 2

#: A value seen at least this often in the pooled training sample is an atom (scalar outputs).
_ATOM_MIN_COUNT = 16

#: A repeated value of one coordinate becomes an indicator feature of the classifier when it
#: holds at least this fraction of the pooled training sample; at most ``_FLAGS_PER_COLUMN``.
_FLAG_MIN_FRACTION = 0.01
_FLAGS_PER_COLUMN = 4

#: Cross-validation uses at most this many distinct training rows (a random subset), and the
#: classifier's final fit at most ``_CLASSIFIER_MAX_ROWS``.
_CV_MAX_ROWS = 2**17
_CLASSIFIER_MAX_ROWS = 2**18

#: ``mixed``: a coordinate with at most this many distinct values is discrete; a category needs
#: at least ``_MIXED_MIN_COUNT`` training outputs for a model of its continuous coordinates.
_MIXED_MAX_LEVELS = 16
_MIXED_MIN_COUNT = 256

#: Entropy mixed into the seed of the extra training outputs, so they never coincide with any
#: stream of the audit engine (those use ``SeedSequence(seed, spawn_key=...)``).
_TRAIN_TAG = TAGS["learned_training"]

#: The extra training outputs hold at most this many values per dataset (128 MB of float64).
_TRAIN_MAX_VALUES = 2**24


def _as_matrix(outputs: object, name: str = "outputs") -> np.ndarray:
    """Outputs as a finite float matrix ``(size, values per output)``; ``-0.0`` becomes ``0.0``."""
    y = np.asarray(outputs, dtype=float)
    if y.ndim == 0:
        raise ValueError(f"{name} must have a trial axis (axis 0), got a scalar")
    y = y.reshape(y.shape[0], -1)
    if not np.isfinite(y).all():
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return y + 0.0


def few_values(y: np.ndarray, max_categories: int) -> bool:
    """Whether the rows of ``y`` are a few values: at most ``max_categories`` distinct rows that
    recur, each seen :data:`_FEW_MEAN_COUNT` times on average. A sample of a continuous output
    has as many distinct rows as rows, however small it is, and is never a few values."""
    distinct = np.unique(_row_keys(y)).size
    return distinct <= max_categories and y.shape[0] >= _FEW_MEAN_COUNT * distinct


def _row_keys(y: np.ndarray) -> np.ndarray:
    """One opaque, sortable key per row (the row's bytes), so rows can be counted and looked up."""
    y = np.ascontiguousarray(y, dtype=float)
    return y.view(np.dtype((np.void, y.dtype.itemsize * y.shape[1]))).ravel()


def _log_loss(z: np.ndarray, label: np.ndarray) -> np.ndarray:
    """Per-sample logistic loss ``log(1 + exp(-s z))`` with ``s = +1`` (label 1) or ``-1``."""
    return np.logaddexp(0.0, -np.where(label > 0, z, -z))


def fit_logistic(
    x: np.ndarray,
    label: np.ndarray,
    weight: np.ndarray | None = None,
    l2: float = 1e-4,
    max_iter: int = 50,
) -> np.ndarray:
    """Weighted, L2-regularised logistic regression by Newton's method with backtracking.

    Minimises ``sum_i w_i log(1 + exp(-s_i (b + x_i . w))) / sum_i w_i + l2/2 |w|^2`` (labels
    ``s_i = +-1``, the intercept ``b`` not penalised) and returns ``[b, w...]``. ``x`` should be
    standardised; the objective is strictly convex in ``w`` for ``l2 > 0``.
    """
    n, p = x.shape
    weight = np.ones(n) if weight is None else np.asarray(weight, dtype=float)
    total = float(weight.sum())
    design = np.hstack([np.ones((n, 1)), x])
    penalty = np.full(p + 1, l2)
    penalty[0] = 0.0
    theta = np.zeros(p + 1)
    target = (label > 0).astype(float)

    def objective(t: np.ndarray) -> float:
        loss = float(weight @ _log_loss(design @ t, label)) / total
        return loss + 0.5 * float(np.sum(penalty * t * t))

    current = objective(theta)
    for _ in range(max_iter):
        prob = 0.5 * (1.0 + np.tanh(0.5 * (design @ theta)))
        grad = design.T @ (weight * (prob - target)) / total + penalty * theta
        curvature = weight * prob * (1.0 - prob) / total
        hessian = (design * curvature[:, None]).T @ design + np.diag(penalty + 1e-12)
        step = np.linalg.solve(hessian, grad)
        decrease = float(grad @ step)
        if decrease < 1e-10:
            break
        scale = 1.0
        while scale > 1e-10:
            candidate = theta - scale * step
            value = objective(candidate)
            if value <= current - 0.25 * scale * decrease:
                break
            scale *= 0.5
        else:
            break
        theta, current = candidate, value
    return theta


def _smoothed_log_ratio(
    n0: np.ndarray, n1: np.ndarray, total0: float, total1: float, k: float
) -> np.ndarray:
    """``log((n1 + k)/(N1 + kK)) - log((n0 + k)/(N0 + kK))`` for ``K = len(n0)`` categories."""
    cats = n0.size
    return (
        np.log(n1 + k) - math.log(total1 + k * cats) - np.log(n0 + k) + math.log(total0 + k * cats)
    )


@dataclass
class _Sample:
    """A pooled training sample: rows ``x``, labels (1 = ``D_prime``) and weights (counts)."""

    x: np.ndarray
    label: np.ndarray
    weight: np.ndarray

    @classmethod
    def pool(cls, y0: np.ndarray, y1: np.ndarray) -> _Sample:
        """Both samples with unit weights, aggregated into counts when rows repeat a lot."""
        x = np.vstack([y0, y1])
        label = np.concatenate([np.zeros(len(y0), np.int8), np.ones(len(y1), np.int8)])
        keys = _row_keys(np.hstack([x, label[:, None]]))
        unique, first, counts = np.unique(keys, return_index=True, return_counts=True)
        if unique.size * 4 <= x.shape[0]:
            return cls(x[first], label[first], counts.astype(float))
        return cls(x, label, np.ones(x.shape[0]))

    @property
    def totals(self) -> tuple[float, float]:
        """Total weight under ``D`` and under ``D_prime``."""
        w1 = float(self.weight[self.label == 1].sum())
        return float(self.weight.sum()) - w1, w1

    def subset(self, rows: np.ndarray) -> _Sample:
        """The sample restricted to ``rows`` (indices or a mask)."""
        return _Sample(self.x[rows], self.label[rows], self.weight[rows])

    def at_most(self, max_rows: int, rng: np.random.Generator) -> _Sample:
        """A random subset of at most ``max_rows`` rows (the whole sample if it is smaller)."""
        if self.x.shape[0] <= max_rows:
            return self
        return self.subset(np.sort(rng.choice(self.x.shape[0], max_rows, replace=False)))

    def split(self, rng: np.random.Generator) -> tuple[_Sample, _Sample]:
        """Two folds by binomial thinning of every weight (a random half of every count)."""
        counts = np.round(self.weight).astype(np.int64)
        first = rng.binomial(counts, 0.5).astype(float)
        return (
            _Sample(self.x, self.label, first),
            _Sample(self.x, self.label, counts - first),
        )


class _Model(ABC):
    """A fitted log-ratio estimate on feature matrices."""

    kind: str = ""

    @abstractmethod
    def score(self, y: np.ndarray) -> np.ndarray:
        """Estimated ``log q(y)/p(y)`` per row."""

    def describe(self) -> dict[str, Any]:
        return {"model": self.kind}


def _cv_losses(
    sample: _Sample, builders: list[Callable[[_Sample], _Model]], rng: np.random.Generator
) -> tuple[list[np.ndarray], np.ndarray]:
    """Held-out log loss of every candidate on both folds: per-row losses and their weights."""
    folds = sample.split(rng)
    losses: list[list[np.ndarray]] = [[] for _ in builders]
    weights = []
    for train, test in (folds, folds[::-1]):
        keep = test.weight > 0
        weights.append(test.weight[keep])
        t0, t1 = train.totals
        prior = math.log(t1 / t0) if t0 > 0 and t1 > 0 else 0.0
        for i, build in enumerate(builders):
            if t0 == 0 or t1 == 0:
                losses[i].append(np.full(int(keep.sum()), math.log(2.0)))
                continue
            z = build(train).score(test.x[keep]) + prior
            losses[i].append(_log_loss(z, test.label[keep]))
    return [np.concatenate(v) for v in losses], np.concatenate(weights)


def _one_se_choice(losses: list[np.ndarray], weight: np.ndarray) -> int:
    """Index of the simplest candidate (candidates are ordered simplest first) whose weighted mean
    loss exceeds the best one's by at most one standard error of their paired difference."""
    total = float(weight.sum())
    means = [float(weight @ v) / total for v in losses]
    best = int(np.argmin(means))
    for i in range(best):
        diff = losses[i] - losses[best]
        mean = float(weight @ diff) / total
        var = float(weight @ (diff - mean) ** 2) / total
        if mean <= math.sqrt(var / total):
            return i
    return best


class _Discrete(_Model):
    """Exact per-value counts with additive smoothing (unseen values: the zero-count score)."""

    kind = "discrete"

    def __init__(self, sample: _Sample, smoothing: float) -> None:
        keys, inverse = np.unique(_row_keys(sample.x), return_inverse=True)
        inverse = inverse.ravel()
        n0 = np.bincount(inverse, weights=sample.weight * (sample.label == 0), minlength=keys.size)
        n1 = np.bincount(inverse, weights=sample.weight * (sample.label == 1), minlength=keys.size)
        total0, total1 = sample.totals
        self.keys = keys
        self.values = _smoothed_log_ratio(n0, n1, total0, total1, smoothing)
        self.unseen = math.log(total0 + smoothing * keys.size) - math.log(
            total1 + smoothing * keys.size
        )

    def score(self, y: np.ndarray) -> np.ndarray:
        keys = _row_keys(y)
        pos = np.minimum(np.searchsorted(self.keys, keys), self.keys.size - 1)
        found = self.keys[pos] == keys
        return np.where(found, self.values[pos], self.unseen)

    def describe(self) -> dict[str, Any]:
        return {"model": self.kind, "categories": int(self.keys.size)}


def _weighted_quantiles(x: np.ndarray, weight: np.ndarray, q: np.ndarray) -> np.ndarray:
    order = np.argsort(x, kind="stable")
    cum = np.cumsum(weight[order])
    idx = np.searchsorted(cum, q * cum[-1], side="left")
    return x[order][np.minimum(idx, x.size - 1)]


class _Histogram1D(_Model):
    """Smoothed histogram of the log ratio on pooled-quantile bins, interpolated linearly between
    bin centres and constant beyond the outermost centres."""

    kind = "histogram"

    def __init__(self, sample: _Sample, smoothing: float) -> None:
        y = sample.x[:, 0]
        n = float(sample.weight.sum())
        bins = int(np.clip(n // 256, 8, 256))
        inner = np.linspace(0.0, 1.0, bins + 1)[1:-1]
        edges = np.unique(_weighted_quantiles(y, sample.weight, inner))
        index = np.searchsorted(edges, y, side="right")
        nb = edges.size + 1
        w0 = sample.weight * (sample.label == 0)
        w1 = sample.weight * (sample.label == 1)
        n0 = np.bincount(index, weights=w0, minlength=nb)
        n1 = np.bincount(index, weights=w1, minlength=nb)
        total0, total1 = sample.totals
        ratio = _smoothed_log_ratio(n0, n1, total0, total1, smoothing)
        mass = np.bincount(index, weights=sample.weight, minlength=nb)
        sums = np.bincount(index, weights=sample.weight * y, minlength=nb)
        keep = mass > 0
        self.centres = sums[keep] / mass[keep]
        self.values = ratio[keep]

    def score(self, y: np.ndarray) -> np.ndarray:
        return np.interp(y[:, 0], self.centres, self.values)


class _Logistic1D(_Model):
    """Logistic model of ``log q/p`` linear in the standardised value."""

    kind = "logistic"

    def __init__(self, sample: _Sample, l2: float) -> None:
        y = sample.x[:, 0]
        w = sample.weight
        self.mean = float(w @ y / w.sum())
        self.scale = math.sqrt(float(w @ (y - self.mean) ** 2 / w.sum())) or 1.0
        self.theta = fit_logistic(self._design(sample.x), sample.label, w, l2=l2)
        total0, total1 = sample.totals
        self.prior = math.log(total1 / total0)

    def _design(self, x: np.ndarray) -> np.ndarray:
        return ((x[:, 0] - self.mean) / self.scale)[:, None]

    def score(self, y: np.ndarray) -> np.ndarray:
        return self.theta[0] + self._design(y) @ self.theta[1:] - self.prior


class _OneDimensional(_Model):
    """Atoms (repeated values) with smoothed counts; the rest scored by the candidate chosen by
    cross-validation (linear logistic or histogram)."""

    kind = "histogram"
    candidates = ("linear", "histogram")

    def __init__(self, sample: _Sample, smoothing: float, l2: float, seed: int) -> None:
        y = sample.x[:, 0]
        values, inverse = np.unique(y, return_inverse=True)
        inverse = inverse.ravel()
        counts = np.bincount(inverse, weights=sample.weight, minlength=values.size)
        atom = counts >= _ATOM_MIN_COUNT
        n0 = np.bincount(
            inverse, weights=sample.weight * (sample.label == 0), minlength=values.size
        )
        n1 = np.bincount(
            inverse, weights=sample.weight * (sample.label == 1), minlength=values.size
        )
        total0, total1 = sample.totals
        self.atoms = values[atom]
        self.atom_values = _smoothed_log_ratio(n0[atom], n1[atom], total0, total1, smoothing)
        rest = ~atom[inverse]
        self.selected = "none"
        self.continuous: _Model | None = None
        part = _Sample(sample.x[rest], sample.label[rest], sample.weight[rest])
        p0, p1 = part.totals
        if part.weight.sum() >= 32 and p0 > 0 and p1 > 0:
            builders = [lambda s: _Logistic1D(s, l2), lambda s: _Histogram1D(s, smoothing)]
            rng = np.random.default_rng(seed)
            losses, weight = _cv_losses(part.at_most(_CV_MAX_ROWS, rng), builders, rng)
            choice = _one_se_choice(losses, weight)
            self.selected = self.candidates[choice]
            self.continuous = builders[choice](part)

    def score(self, y: np.ndarray) -> np.ndarray:
        out = np.zeros(y.shape[0]) if self.continuous is None else self.continuous.score(y)
        if self.atoms.size:
            v = y[:, 0]
            pos = np.minimum(np.searchsorted(self.atoms, v), self.atoms.size - 1)
            hit = self.atoms[pos] == v
            out = np.where(hit, self.atom_values[pos], out)
        return out

    def describe(self) -> dict[str, Any]:
        return {"model": self.kind, "atoms": int(self.atoms.size), "continuous": self.selected}


class _Classifier(_Model):
    """Logistic regression on standardised coordinates and flag indicators."""

    kind = "classifier"

    def __init__(self, sample: _Sample, l2: float, seed: int) -> None:
        sample = sample.at_most(_CLASSIFIER_MAX_ROWS, np.random.default_rng(seed))
        x, w = sample.x, sample.weight
        total = float(w.sum())
        self.flags: list[tuple[int, float]] = []
        for j in range(x.shape[1]):
            values, inverse = np.unique(x[:, j], return_inverse=True)
            mass = np.bincount(inverse.ravel(), weights=w, minlength=values.size)
            for i in np.argsort(-mass, kind="stable")[:_FLAGS_PER_COLUMN]:
                if _FLAG_MIN_FRACTION * total <= mass[i] < total:
                    self.flags.append((j, float(values[i])))
        cont = self._continuous(x)
        self.mean = w @ cont / total
        self.scale = np.sqrt(w @ (cont - self.mean) ** 2 / total)
        self.scale[self.scale == 0] = 1.0
        total0, total1 = sample.totals
        self.prior = math.log(total1 / total0)
        self.theta = fit_logistic(self.design(x), sample.label, w, l2=l2)

    def _flag_matrix(self, x: np.ndarray) -> np.ndarray:
        if not self.flags:
            return np.zeros((x.shape[0], 0), dtype=bool)
        return np.stack([x[:, j] == v for j, v in self.flags], axis=1)

    def _continuous(self, x: np.ndarray) -> np.ndarray:
        """Coordinates with flag values replaced by 0 (their effect lives in the indicators)."""
        cont = x.copy()
        for (j, _), hit in zip(self.flags, self._flag_matrix(x).T, strict=True):
            cont[hit, j] = 0.0
        return cont

    def design(self, x: np.ndarray) -> np.ndarray:
        """Features: standardised coordinates and flag indicators."""
        z = (self._continuous(x) - self.mean) / self.scale
        return np.hstack([z, self._flag_matrix(x).astype(float)])

    def score(self, y: np.ndarray) -> np.ndarray:
        return self.theta[0] + self.design(y) @ self.theta[1:] - self.prior

    def describe(self) -> dict[str, Any]:
        return {"model": self.kind, "flags": len(self.flags)}


def _discrete_columns(x: np.ndarray) -> list[int]:
    """Coordinates with at most ``_MIXED_MAX_LEVELS`` distinct values."""
    return [j for j in range(x.shape[1]) if np.unique(x[:, j]).size <= _MIXED_MAX_LEVELS]


class _Mixed(_Model):
    """Outputs with discrete and continuous coordinates (e.g. answer codes and released values).

    ``log q(y)/p(y) = log q(c)/p(c) + log q(z | c)/p(z | c)`` with ``c`` the discrete
    coordinates (smoothed counts per category) and ``z`` the continuous ones: within every
    category seen at least ``_MIXED_MIN_COUNT`` times, the coordinates that vary get a scalar
    (histogram) or vector (classifier) model of the conditional ratio; other categories get the
    count ratio alone.
    """

    kind = "mixed"

    def __init__(self, sample: _Sample, smoothing: float, l2: float, seed: int) -> None:
        self.discrete = _discrete_columns(sample.x)
        self.continuous = [j for j in range(sample.x.shape[1]) if j not in self.discrete]
        cats = sample.x[:, self.discrete]
        self.categories = _Discrete(_Sample(cats, sample.label, sample.weight), smoothing)
        keys = _row_keys(cats)
        index = np.searchsorted(self.categories.keys, keys)
        self.models: dict[int, tuple[list[int], _Model]] = {}
        mass = np.bincount(index, weights=sample.weight, minlength=self.categories.keys.size)
        for c in np.flatnonzero(mass >= _MIXED_MIN_COUNT):
            part = sample.subset(index == c)
            p0, p1 = part.totals
            z = part.x[:, self.continuous]
            varying = [self.continuous[i] for i in range(z.shape[1]) if np.ptp(z[:, i]) > 0]
            if not varying or p0 == 0 or p1 == 0:
                continue
            sub = _Sample(part.x[:, varying], part.label, part.weight)
            if len(varying) == 1:
                model: _Model = _OneDimensional(sub, smoothing, l2, seed)
            else:
                model = _Classifier(sub, l2, seed)
            self.models[int(c)] = (varying, model)

    def score(self, y: np.ndarray) -> np.ndarray:
        cats = y[:, self.discrete]
        out = self.categories.score(cats)
        if self.models:
            keys = _row_keys(cats)
            pos = np.minimum(
                np.searchsorted(self.categories.keys, keys), self.categories.keys.size - 1
            )
            found = self.categories.keys[pos] == keys
            for c, (columns, model) in self.models.items():
                rows = np.flatnonzero(found & (pos == c))
                if rows.size:
                    out[rows] += model.score(y[np.ix_(rows, columns)])
        return out

    def describe(self) -> dict[str, Any]:
        return {
            "model": self.kind,
            "categories": int(self.categories.keys.size),
            "conditional_models": len(self.models),
        }


class _DrawsTraining:
    """What attacks share that draw extra training outputs from their own mechanism and pair
    in ``fit`` (:class:`Learned`, :class:`~dpaudit.attacks.DeltaLeak`): the engine's limit on
    those draws and their count. Needs ``mechanism``, ``pair``, ``train_trials``, ``seed``,
    ``training_limit`` and ``training`` on the instance."""

    mechanism: Any
    pair: Any
    train_trials: int
    seed: int
    training_limit: int | None
    training: dict[str, Any]

    def limit_training(self, outputs: int) -> None:
        """Draw at most ``outputs`` extra training outputs per dataset (the engine's budget)."""
        self.training_limit = check_integer("outputs", outputs, minimum=0)

    @property
    def extra_outputs(self) -> int:
        """Extra training outputs per dataset drawn in the last ``fit``."""
        return int(self.training.get("extra", 0))

    def _draw_training(self, width: int) -> tuple[Any, Any, int]:
        """``(outputs under D, outputs under D_prime, count)`` of the extra training draws, from
        the attack's own stream; ``(None, None, 0)`` when it draws none. At most
        ``_TRAIN_MAX_VALUES`` values of ``width`` per dataset (memory), never fewer than 1024
        outputs, and never more than the engine's limit."""
        if self.mechanism is None or self.train_trials <= 0 or self.training_limit == 0:
            return None, None, 0
        extra = min(self.train_trials, max(1024, _TRAIN_MAX_VALUES // max(width, 1)))
        if self.training_limit is not None:
            extra = min(extra, self.training_limit)
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, _TRAIN_TAG]))
        more0 = self.mechanism.sample(self.pair.d, extra, rng)
        more1 = self.mechanism.sample(self.pair.d_prime, extra, rng)
        return more0, more1, extra


class Learned(_DrawsTraining, Attack):
    """Score = a log-likelihood-ratio estimate learned from independent training outputs.

    Parameters
    ----------
    model:
        ``"auto"`` (default), ``"discrete"``, ``"histogram"`` (scalar outputs) or
        ``"classifier"``; see the module docstring.
    features:
        Optional vectorised map ``outputs -> (size, f)`` array applied before learning and
        scoring (domain knowledge, e.g. a flawed mechanism's own distinguishing statistic).
    max_categories:
        Outputs with at most this many distinct values in the training sample count as discrete
        when their values recur (:func:`few_values`).
    smoothing:
        Additive smoothing ``k`` of the count estimators (``0.5``: Jeffreys).
    l2:
        L2 penalty of the logistic models (on standardised features).
    seed:
        Seed of the cross-validation splits and of the extra training outputs.
    mechanism, pair, train_trials:
        With a mechanism and a pair, :meth:`fit` adds ``train_trials`` outputs per dataset of
        ``pair`` (fewer for wide outputs: at most ``2^24`` values per dataset), drawn from
        ``SeedSequence([seed, tag])``, a generator independent of every stream of the audit
        engine (which uses ``SeedSequence(seed, spawn_key=...)``), to the fit sample it is given
        (the engine's is at most ``2^15`` outputs per dataset). They are drawn before any
        selection or evaluation trial, so the bounds stay valid exactly as with the engine's fit
        sample alone.

    Notes
    -----
    :meth:`score` before :meth:`fit` raises ``ValueError``.
    """

    learns = True

    def __init__(
        self,
        model: str = "auto",
        *,
        features: Callable[[np.ndarray], np.ndarray] | None = None,
        max_categories: int = 1024,
        smoothing: float = 0.5,
        l2: float = 1e-4,
        seed: int = 0,
        mechanism: Any = None,
        pair: Any = None,
        train_trials: int = 2**17,
    ) -> None:
        self.model = check_choice("model", model, LEARNED_MODELS)
        if (mechanism is None) != (pair is None):
            raise ValueError("mechanism and pair must be given together (or neither)")
        if mechanism is not None and not callable(getattr(mechanism, "sample", None)):
            raise ValueError(f"mechanism must offer sample(), got {type(mechanism).__name__}")
        self.mechanism = mechanism
        self.pair = pair
        self.train_trials = check_integer("train_trials", train_trials, minimum=0)
        self.training_limit: int | None = None
        if features is not None and not callable(features):
            raise ValueError(f"features must be None or a callable, got {type(features).__name__}")
        self.features = features
        self.max_categories = check_integer("max_categories", max_categories, minimum=1)
        self.smoothing = check_positive("smoothing", smoothing)
        self.l2 = check_positive("l2", l2)
        self.seed = check_seed("seed", seed)
        self.fitted: _Model | None = None
        self.training: dict[str, Any] = {}
        self.width = 0

    @classmethod
    def for_mechanism(
        cls,
        mechanism: Any,
        pair: Any,
        *,
        model: str = "auto",
        features: str = "mechanism",
        train_trials: int = 2**17,
        seed: int = 0,
    ) -> Learned:
        """The attack bound to ``mechanism`` and ``pair`` (so it adds ``train_trials`` outputs of
        its own); ``features="mechanism"`` uses the mechanism's distinguishing statistic
        ``mechanism.features(pair)`` when it offers one, ``"none"`` the raw outputs."""
        check_choice("features", features, ("mechanism", "none"))
        feature_map = None
        if features == "mechanism" and callable(getattr(mechanism, "features", None)):
            feature_map = mechanism.features(pair)
        return cls(
            model,
            features=feature_map,
            seed=seed,
            mechanism=mechanism,
            pair=pair,
            train_trials=train_trials,
        )

    def _transform(self, outputs: object, name: str) -> np.ndarray:
        if self.features is None:
            return _as_matrix(outputs, name)
        raw = np.asarray(outputs)
        mapped = np.asarray(self.features(raw), dtype=float)
        n = raw.shape[0] if raw.ndim else 1
        if mapped.ndim == 1:
            mapped = mapped[:, None]
        if mapped.ndim != 2 or mapped.shape[0] != n:
            raise ValueError(
                f"features must map {n} outputs to an array of shape ({n}, f), got {mapped.shape}"
            )
        return _as_matrix(mapped, f"features({name})")

    def fit(self, outputs_d: np.ndarray, outputs_d_prime: np.ndarray) -> Learned:
        """Estimate ``log q/p`` from outputs under ``D`` and ``D_prime`` (plus ``train_trials``
        fresh outputs per dataset when the attack knows its mechanism and pair)."""
        y0 = self._transform(outputs_d, "outputs_d")
        y1 = self._transform(outputs_d_prime, "outputs_d_prime")
        more0, more1, extra = self._draw_training(y0.shape[1])
        if extra:
            y0 = np.vstack([y0, self._transform(more0, "outputs_d")])
            y1 = np.vstack([y1, self._transform(more1, "outputs_d_prime")])
        if y0.shape[0] < 2 or y1.shape[0] < 2:
            raise ValueError(
                f"fit needs at least 2 outputs per dataset, got {y0.shape[0]} and {y1.shape[0]}"
            )
        if y0.shape[1] != y1.shape[1]:
            raise ValueError(
                "outputs under D and D_prime must have the same number of values, "
                f"got {y0.shape[1]} and {y1.shape[1]}"
            )
        sample = _Sample.pool(y0, y1)
        width = y0.shape[1]
        model = self.model
        if model == "histogram" and width != 1:
            raise ValueError(
                f"model 'histogram' needs scalar outputs, got {width} values per output"
            )
        if model == "auto":
            if few_values(sample.x, self.max_categories):
                model = "discrete" if width == 1 else "discrete or classifier"
            elif width == 1:
                model = "histogram"
            else:
                discrete = _discrete_columns(sample.x)
                categories = np.unique(_row_keys(sample.x[:, discrete])).size if discrete else 0
                mixed = 0 < len(discrete) < width and categories <= self.max_categories
                model = "mixed or classifier" if mixed else "classifier"
        classifier = lambda s: _Classifier(s, self.l2, self.seed)  # noqa: E731
        if model in ("discrete or classifier", "mixed or classifier"):
            if model == "mixed or classifier":
                other = lambda s: _Mixed(s, self.smoothing, self.l2, self.seed)  # noqa: E731
            else:
                other = lambda s: _Discrete(s, self.smoothing)  # noqa: E731
            rng = np.random.default_rng(self.seed)
            builders = [classifier, other]
            losses, weight = _cv_losses(sample.at_most(_CV_MAX_ROWS, rng), builders, rng)
            self.fitted = builders[_one_se_choice(losses, weight)](sample)
        elif model == "mixed":
            self.fitted = _Mixed(sample, self.smoothing, self.l2, self.seed)
        elif model == "discrete":
            self.fitted = _Discrete(sample, self.smoothing)
        elif model == "histogram":
            self.fitted = _OneDimensional(sample, self.smoothing, self.l2, self.seed)
        else:
            self.fitted = _Classifier(sample, self.l2, self.seed)
        self.training = {
            "outputs_per_dataset": [int(y0.shape[0]), int(y1.shape[0])],
            "extra": extra,
        }
        self.width = width
        return self

    def score(self, outputs: np.ndarray) -> np.ndarray:
        """The learned ``log q(y)/p(y)`` of every output (axis 0 = trials), shape ``(size,)``."""
        if self.fitted is None:
            raise ValueError("Learned attack must be fitted first: fit(outputs_d, outputs_d_prime)")
        y = self._transform(outputs, "outputs")
        if y.shape[1] != self.width:
            raise ValueError(
                f"outputs must have {self.width} values each (as in training), got {y.shape[1]}"
            )
        return self.fitted.score(y)

    def params(self) -> dict[str, Any]:
        """Settings and, once trained, the estimator used and the training sample sizes."""
        features = None
        if self.features is not None:
            features = getattr(self.features, "__name__", type(self.features).__name__)
        out: dict[str, Any] = {
            "model": self.model,
            "features": features,
            "max_categories": self.max_categories,
            "smoothing": self.smoothing,
            "l2": self.l2,
            "seed": self.seed,
            "train_trials": self.train_trials if self.mechanism is not None else 0,
        }
        if self.fitted is not None:
            out["fitted"] = self.fitted.describe()
            out["training"] = dict(self.training)
        return out

    @property
    def name(self) -> str:
        """``Learned(<estimator>)``."""
        inner = self.fitted.kind if self.fitted is not None else self.model
        return f"Learned({inner})"
