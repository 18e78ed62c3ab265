"""Training data for the DP-SGD mechanism: two small binary classification sets and canaries.

Both data sets are built in memory, without downloads:

- :func:`synthetic`: Gaussian features and labels drawn from a logistic model, from a seed.
- :func:`goog`: a real one, daily Google stock prices (Aug 2004 - Oct 2008, 1047 trading days)
  that ship with matplotlib as sample data (``mpl-data/sample_data/goog.npz``); the task is to
  predict whether the next day closes higher from the last five days' returns, ranges, candle
  bodies and volume changes.

**Record layout.** A dataset handed to :meth:`dpaudit.mechanisms.dpsgd.DPSGD.sample` is an array
of shape ``(n, k + 2)``: ``k`` features, the label (0 or 1) and a *canary coefficient* ``c`` in
``[-1, 1]``. Records with ``c = 0`` are ordinary examples. A record with ``c != 0`` is a *Dirac
canary* (Nasr et al. 2023, "Tight auditing of differentially private machine learning"): its
loss is linear in one extra model parameter ``theta_c`` that no ordinary example touches,
``loss = c * C * theta_c`` with ``C`` the clipping norm, so its gradient is ``c * C`` along that
coordinate and zero elsewhere (norm ``|c| C <= C``: clipping never alters it). Its features and
label are ignored.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dpaudit._core.validation import check_integer, check_positive, check_real, check_seed

__all__ = [
    "Dataset",
    "DATASETS",
    "synthetic",
    "goog",
    "load",
    "make_records",
    "dirac_canary",
    "input_canary",
    "split_records",
]


@dataclass(frozen=True, eq=False)
class Dataset:
    """A binary classification set: ``features`` of shape ``(n, k)``, ``labels`` in ``{0, 1}``."""

    name: str
    features: np.ndarray
    labels: np.ndarray
    description: str = ""

    def __post_init__(self) -> None:
        x = np.asarray(self.features, dtype=float)
        y = np.asarray(self.labels, dtype=float)
        if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
            raise ValueError(
                f"features must have shape (n, k) with n >= 1 and k >= 1, got {x.shape}"
            )
        if y.shape != (x.shape[0],):
            raise ValueError(f"labels must have shape ({x.shape[0]},), got {y.shape}")
        if not np.isfinite(x).all():
            raise ValueError("features must be finite, got NaN or inf")
        if not np.isin(y, (0.0, 1.0)).all():
            raise ValueError("labels must be 0 or 1")
        x.setflags(write=False)
        y.setflags(write=False)
        object.__setattr__(self, "features", x)
        object.__setattr__(self, "labels", y)

    @property
    def n(self) -> int:
        """Number of examples."""
        return int(self.features.shape[0])

    @property
    def dim(self) -> int:
        """Number of features ``k``."""
        return int(self.features.shape[1])

    def records(self) -> np.ndarray:
        """The examples in the record layout of the module docstring (canary coefficient 0)."""
        return make_records(self.features, self.labels)

    def __repr__(self) -> str:
        return f"<Dataset {self.name}: n={self.n}, k={self.dim}>"


def synthetic(n: int = 1000, dim: int = 20, seed: int = 0) -> Dataset:
    """``n`` examples with features ``x ~ N(0, I_dim)`` and labels ``y ~ Bernoulli(s(x . w))``,
    ``s`` the logistic function and ``w`` a uniformly random direction of length 2; all drawn
    from ``numpy.random.default_rng(seed)``."""
    n = check_integer("n", n, minimum=1)
    dim = check_integer("dim", dim, minimum=1)
    seed = check_seed("seed", seed)
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(dim)
    w *= 2.0 / np.linalg.norm(w)
    x = rng.standard_normal((n, dim))
    p = 1.0 / (1.0 + np.exp(-(x @ w)))
    y = (rng.random(n) < p).astype(float)
    return Dataset(
        f"synthetic(n={n}, dim={dim}, seed={seed})",
        x,
        y,
        "Gaussian features, labels from a logistic model with a random weight vector of norm 2",
    )


def goog(lags: int = 5) -> Dataset:
    """Daily Google prices shipped with matplotlib: will tomorrow's close be higher than today's?

    Example ``t`` has ``4 * lags`` standardised features, for each of the last ``lags`` days
    ``u``: the log return ``log(close_u / close_{u-1})``, the log range ``log(high_u / low_u)``,
    the candle body ``log(close_u / open_u)`` and the log volume change ``log(vol_u / vol_{u-1})``;
    its label is 1 if ``close_{t+1} > close_t``. With ``lags = 5``: 1041 examples, 20 features.
    """
    from matplotlib import cbook

    lags = check_integer("lags", lags, minimum=1, maximum=100)
    with cbook.get_sample_data("goog.npz") as data:
        prices = data["price_data"]
    close = prices["close"].astype(float)
    ret = np.diff(np.log(close), prepend=np.nan)
    log_range = np.log(prices["high"] / prices["low"])
    body = np.log(close / prices["open"])
    volume = np.diff(np.log(prices["volume"].astype(float)), prepend=np.nan)
    days = np.arange(lags, close.size - 1)
    columns = [series[days - j] for j in range(lags) for series in (ret, log_range, body, volume)]
    x = np.stack(columns, axis=1)
    x = (x - x.mean(axis=0)) / x.std(axis=0)
    y = (close[days + 1] > close[days]).astype(float)
    return Dataset(
        f"goog(lags={lags})",
        x,
        y,
        "Google daily prices 2004-2008 (matplotlib sample data): next-day up move from the "
        f"last {lags} days' returns, ranges, bodies and volume changes",
    )


#: Dataset names accepted by :func:`load` and by ``DPSGD(dataset=...)``.
DATASETS: dict[str, Callable[..., Dataset]] = {"synthetic": synthetic, "goog": goog}


def load(name: str, **kwargs: object) -> Dataset:
    """The dataset called ``name`` (one of :data:`DATASETS`), built with ``kwargs``."""
    if not isinstance(name, str) or name not in DATASETS:
        raise ValueError(f"dataset must be one of {', '.join(map(repr, DATASETS))}; got {name!r}")
    return DATASETS[name](**kwargs)


def make_records(
    features: np.ndarray, labels: np.ndarray, canary: np.ndarray | float = 0.0
) -> np.ndarray:
    """Stack features ``(n, k)``, labels ``(n,)`` and canary coefficients into ``(n, k + 2)``."""
    x = np.asarray(features, dtype=float)
    if x.ndim != 2:
        raise ValueError(f"features must have shape (n, k), got {x.shape}")
    n = x.shape[0]
    y = np.broadcast_to(np.asarray(labels, dtype=float), (n,))
    c = np.broadcast_to(np.asarray(canary, dtype=float), (n,))
    return np.column_stack([x, y, c])


def dirac_canary(dim: int, sign: float = 1.0) -> np.ndarray:
    """One Dirac canary record (layout of the module docstring) with coefficient ``sign`` in
    ``[-1, 1] \\ {0}``: its gradient is ``sign * C`` along the canary coordinate only."""
    dim = check_integer("dim", dim, minimum=1)
    sign = check_real("sign", sign)
    if sign == 0.0 or abs(sign) > 1.0:
        raise ValueError(f"sign must be in [-1, 0) or (0, 1], got {sign!r}")
    return make_records(np.zeros((1, dim)), 0.0, sign)[0]


def input_canary(dataset: Dataset, scale: float = 3.0) -> np.ndarray:
    """An outlier, mislabelled record for ``dataset`` (layout of the module docstring).

    Its features lie ``scale`` times the largest distance of any example from the mean, away
    from the mean along the direction of least variance of the features (the direction ordinary
    examples use least; the eigenvector's sign is fixed so that its largest entry is positive).
    Its label is the opposite of what the least-squares linear fit of the labels predicts there.
    """
    if not isinstance(dataset, Dataset):
        raise ValueError(f"dataset must be a Dataset, got {type(dataset).__name__}")
    scale = check_positive("scale", scale)
    x, y = dataset.features, dataset.labels
    mean = x.mean(axis=0)
    centred = x - mean
    _, vectors = np.linalg.eigh(centred.T @ centred)
    u = vectors[:, 0]
    u = u * math.copysign(1.0, u[np.argmax(np.abs(u))])
    radius = float(np.linalg.norm(centred, axis=1).max()) if dataset.n > 1 else 1.0
    point = mean + scale * max(radius, 1.0) * u
    design = np.column_stack([x, np.ones(dataset.n)])
    beta = np.linalg.lstsq(design, y, rcond=None)[0]
    predicted = float(np.append(point, 1.0) @ beta) >= 0.5
    return make_records(point[None, :], 0.0 if predicted else 1.0)[0]


def split_records(records: object, dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate a record array of shape ``(n, dim + 2)``; return features, labels, coefficients."""
    r = np.asarray(records, dtype=float)
    if r.ndim != 2 or r.shape[1] != dim + 2:
        raise ValueError(
            f"dataset must have shape (n, {dim + 2}) (features, label, canary coefficient), "
            f"got {r.shape}"
        )
    if not np.isfinite(r).all():
        raise ValueError("dataset must contain only finite numbers, got NaN or inf")
    labels, coef = r[:, dim], r[:, dim + 1]
    if not np.isin(labels, (0.0, 1.0)).all():
        raise ValueError("dataset labels (column k) must be 0 or 1")
    if (np.abs(coef) > 1.0).any():
        raise ValueError("dataset canary coefficients (last column) must lie in [-1, 1]")
    return r[:, :dim], labels, coef
