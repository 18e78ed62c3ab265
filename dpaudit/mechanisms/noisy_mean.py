"""The noisy mean of records in ``{-1, +1}^d`` drawn from a population: the release that tracing
attacks target.

Model (Steinke 2022, "Composition of differential privacy & privacy amplification by
subsampling", Section 5, proof of Theorem 25; Dwork, Smith, Steinke, Ullman & Vadhan 2015,
"Robust traceability from trace amounts"): a population mean ``p`` in ``[-1, 1]^d``; records
``x_i`` in ``{-1, +1}^d`` drawn independently with ``E x_i = p``, i.e. coordinate ``j`` is ``+1``
with probability ``(1 + p_j) / 2``, independently across coordinates; the release is the mean of
``n`` records plus independent noise on every coordinate::

    y = (1/n) sum_i x_i + xi,    xi_j ~ N(0, sigma^2)  or  Lap(0, b).

**Neighbouring relation and sensitivity.** dpaudit uses ``replace_one``: the number of records
``n`` is public (the release divides by it), so neighbours are two datasets of ``n`` records that
differ in one record. Replacing ``x`` by ``x'`` moves the mean by ``(x - x') / n``, which is at
most ``2/n`` in every coordinate, ``2 sqrt(d) / n`` in l2 and ``2d / n`` in l1, with equality
exactly when ``x' = -x``. (Under ``add_remove`` the denominator would change with the data and the
sensitivity would depend on ``n`` and on the other records; the tracing game, where the target is
replaced by a fresh draw, is a replacement too.)

**Theory.** Coordinate ``j`` of the release is a one-dimensional Gaussian (Laplace) mechanism
whose input moves by at most ``2/n``, and the coordinates' noises are independent, so the release
is the ``d``-fold composition of that mechanism and its theory is the composition's
(:class:`~dpaudit.mechanisms.Composed` of :class:`~dpaudit.mechanisms.Gaussian` or
:class:`~dpaudit.mechanisms.Laplace` with sensitivity ``2/n``; Dong, Roth & Su 2022, Theorem 4).
For Gaussian noise it is exactly ``mu``-GDP with ``mu = 2 sqrt(d) / (n sigma)`` (DRS Corollary 2),
attained by :meth:`NoisyMean.worst_case_pair`; any other pair differs by a shift of smaller l2
norm. For Laplace noise it is ``(2d / (n b), 0)``-DP, and the worst case shifts every coordinate by
``2/n``; smaller shifts only make each factor of the product easier to hide (DRS Section 2.2).

**Datasets.** A dataset is an array of ``k <= n`` records (rows) with entries in ``{-1, 0, +1}``.
An entry ``0`` and every one of the ``n - k`` records not given are drawn afresh from the
population at every release. A dataset of ``n`` records without zeros is a fixed dataset;
``[[z]]`` means "the record ``z`` and ``n - 1`` fresh records"; ``[[0, ..., 0]]`` means "``n``
fresh records". This is how the tracing game with a fresh dataset in every trial is expressed
(:meth:`NoisyMean.tracing_pair`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from dpaudit._core.streams import object_generator
from dpaudit._core.validation import (
    as_float_array,
    check_choice,
    check_integer,
    check_positive,
    check_probability,
    check_seed,
)
from dpaudit.bounds import pld as pld_lib
from dpaudit.bounds.gaussian_dp import gdp_mu
from dpaudit.bounds.rdp import RDPCurve
from dpaudit.mechanisms.base import (
    Mechanism,
    NeighbouringPair,
    PrivacyProfile,
    check_outputs,
    check_rng,
    check_size,
)
from dpaudit.mechanisms.composed import Composed
from dpaudit.mechanisms.gaussian import Gaussian
from dpaudit.mechanisms.laplace import Laplace

__all__ = ["NoisyMean", "NOISES", "CALIBRATIONS", "GAMES", "MAX_RECORD_VALUES"]

#: Noise laws added to every coordinate.
NOISES = ("gaussian", "laplace")

#: ``release``: ``mu``/``eps`` hold for the whole d-dimensional release (composition accounted);
#: ``coordinate``: they hold for one coordinate only (a deliberately flawed calibration that
#: forgets composition, so the release is ``sqrt(d)`` times less private than claimed).
CALIBRATIONS = ("release", "coordinate")

#: Tracing games: one fixed dataset for all trials, or a fresh dataset in every trial.
GAMES = ("fixed", "fresh")

#: Most values ``(n + 1) * d`` of the population sample a NoisyMean draws (its dataset and the
#: target's replacement): drawing them takes 9 bytes each, about 1.2 GB at this bound.
MAX_RECORD_VALUES = 2**27


class NoisyMean(Mechanism):
    """Mean of ``n`` records in ``{-1, +1}^d`` plus Gaussian or Laplace noise per coordinate.

    Give exactly one noise level: ``sigma`` (Gaussian standard deviation) or ``scale`` (Laplace
    scale ``b``), absolute and per coordinate; or calibrate it: ``mu`` (Gaussian, ``mu``-GDP),
    ``eps`` with ``delta`` (Gaussian, the exact ``(eps, delta)`` of ``G_mu``, Balle & Wang 2018)
    or ``eps`` alone (Laplace, pure ``eps``-DP). With ``calibration="release"`` the guarantee is
    for the whole release on the worst-case pair: ``sigma = 2 sqrt(d) / (n mu)``,
    ``b = 2d / (n eps)``. With ``calibration="coordinate"`` it is for one coordinate only
    (``sigma = 2 / (n mu)``, ``b = 2 / (n eps)``): the deliberately under-noised release.

    Parameters
    ----------
    d:
        Dimension of the records (number of coordinates released).
    n:
        Number of records averaged; ``(n + 1) * d`` must not exceed :data:`MAX_RECORD_VALUES`.
    noise:
        ``"gaussian"`` or ``"laplace"``.
    sigma, scale, mu, eps, delta:
        The noise level or the guarantee it is calibrated to (see above).
    calibration:
        ``"release"`` (default) or ``"coordinate"`` (only with ``mu`` or ``eps``).
    population:
        The population mean ``p``, ``d`` values in ``[-1, 1]``; default: drawn uniformly from
        ``[-1, 1]^d`` with ``seed``.
    seed:
        Seed of the population mean (when not given), of the population sample used by
        :meth:`worst_case_pair` and :meth:`tracing_pair`, and of :meth:`reference_records`.

    Attributes
    ----------
    population:
        ``p``, float array of shape ``(d,)``.
    sigma, scale:
        The noise level per coordinate (``None`` for the other noise law).
    """

    relation = "replace_one"

    def __init__(
        self,
        d: int,
        n: int,
        noise: str = "gaussian",
        *,
        sigma: float | None = None,
        scale: float | None = None,
        mu: float | None = None,
        eps: float | None = None,
        delta: float | None = None,
        calibration: str = "release",
        population: object = None,
        seed: int = 0,
    ) -> None:
        self.d = check_integer("d", d, minimum=1)
        self.n = check_integer("n", n, minimum=1)
        if (self.n + 1) * self.d > MAX_RECORD_VALUES:
            raise ValueError(
                f"n = {self.n} records of d = {self.d} coordinates: (n + 1) * d must be at most "
                f"{MAX_RECORD_VALUES} (the population sample is drawn in memory); lower n or d"
            )
        self.noise = check_choice("noise", noise, NOISES)
        self.calibration = check_choice("calibration", calibration, CALIBRATIONS)
        self.seed = check_seed("seed", seed)
        self._given = {"sigma": sigma, "scale": scale, "mu": mu, "eps": eps, "delta": delta}
        self.sigma: float | None = None
        self.scale: float | None = None
        self._calibrate(sigma, scale, mu, eps, delta)
        self._population_given = population is not None
        if population is None:
            rng = object_generator(self.seed, "noisy_mean_population")
            self.population = rng.uniform(-1.0, 1.0, size=self.d)
        else:
            self.population = self._check_population(population)
        self._q = 0.5 * (1.0 + self.population)

    # ------------------------------------------------------------------ construction
    def _calibrate(
        self,
        sigma: float | None,
        scale: float | None,
        mu: float | None,
        eps: float | None,
        delta: float | None,
    ) -> None:
        allowed = ("sigma", "mu", "eps") if self.noise == "gaussian" else ("scale", "eps")
        given = [k for k in ("sigma", "scale", "mu", "eps") if self._given[k] is not None]
        for key in given:
            if key not in allowed:
                raise ValueError(
                    f"{key} does not apply to noise {self.noise!r}; give one of "
                    + ", ".join(allowed)
                )
        if len(given) != 1:
            raise ValueError(
                f"give exactly one of {', '.join(allowed)} for noise {self.noise!r}, "
                f"got {', '.join(given) if given else 'none'}"
            )
        if delta is not None and not (self.noise == "gaussian" and eps is not None):
            raise ValueError(
                "delta is only used with noise 'gaussian' and eps (the (eps, delta) calibration)"
            )
        if self.calibration == "coordinate" and (sigma is not None or scale is not None):
            raise ValueError(
                "calibration 'coordinate' applies to mu or eps, not to a noise level given "
                "directly (sigma or scale)"
            )
        # Shift of the worst-case pair's mean: per coordinate (2/n) and over the release.
        per_coordinate = 2.0 / self.n
        l2 = per_coordinate * (1.0 if self.calibration == "coordinate" else math.sqrt(self.d))
        l1 = per_coordinate * (1.0 if self.calibration == "coordinate" else float(self.d))
        if self.noise == "gaussian":
            if sigma is not None:
                self.sigma = check_positive("sigma", sigma)
                return
            if mu is not None:
                target_mu = check_positive("mu", mu)
            else:
                check_positive("eps", eps)
                if delta is None:
                    raise ValueError("noise 'gaussian' with eps needs delta in (0, 1)")
                check_probability("delta", delta, low_open=True, high_open=True)
                target_mu = float(gdp_mu(float(eps), float(delta)))
            self.sigma = check_positive("sigma", l2 / target_mu)
        else:
            if scale is not None:
                self.scale = check_positive("scale", scale)
                return
            self.scale = check_positive("scale", l1 / check_positive("eps", eps))

    def _check_population(self, population: object) -> np.ndarray:
        p = as_float_array("population", population, "an array of d numbers")
        if p.shape != (self.d,):
            raise ValueError(f"population must have shape ({self.d},), got {p.shape}")
        if np.isnan(p).any() or (p < -1).any() or (p > 1).any():
            raise ValueError("population must lie in [-1, 1] (no NaN); got values outside it")
        return p.copy()

    # ------------------------------------------------------------------ description
    @property
    def sensitivity(self) -> float:
        """``2/n``: the largest change of one coordinate of the mean when one record changes."""
        return 2.0 / self.n

    @property
    def l2_sensitivity(self) -> float:
        """``2 sqrt(d) / n``: the largest l2 change of the mean (replace-one)."""
        return 2.0 * math.sqrt(self.d) / self.n

    @property
    def l1_sensitivity(self) -> float:
        """``2d / n``: the largest l1 change of the mean (replace-one)."""
        return 2.0 * self.d / self.n

    @property
    def mu(self) -> float | None:
        """Gaussian noise: the release is exactly ``mu``-GDP, ``mu = 2 sqrt(d) / (n sigma)``
        (DRS Corollary 2). ``None`` for Laplace noise."""
        return None if self.sigma is None else self.l2_sensitivity / self.sigma

    @property
    def pure_epsilon(self) -> float | None:
        """Laplace noise: the release is ``(2d / (n b), 0)``-DP. ``None`` for Gaussian noise."""
        return None if self.scale is None else self.l1_sensitivity / self.scale

    @property
    def noise_variance(self) -> float:
        """Variance of the noise on one coordinate: ``sigma^2`` or ``2 b^2``."""
        if self.sigma is not None:
            return self.sigma**2
        return 2.0 * self.scale**2

    def params(self) -> dict[str, Any]:
        """The constructor parameters as given, JSON-ready: ``NoisyMean(**params())`` rebuilds
        the mechanism (:attr:`name` shows the resulting noise level)."""
        out: dict[str, Any] = {"d": self.d, "n": self.n, "noise": self.noise}
        for key, value in self._given.items():
            if value is not None:
                out[key] = float(value)
        out["calibration"] = self.calibration
        out["seed"] = self.seed
        if self._population_given:
            out["population"] = self.population.tolist()
        return out

    @property
    def name(self) -> str:
        """E.g. ``NoisyMean(d=100, n=100, gaussian, sigma=0.2)``."""
        level = f"sigma={self.sigma:.6g}" if self.sigma is not None else f"scale={self.scale:.6g}"
        flaw = ", calibration=coordinate" if self.calibration == "coordinate" else ""
        return f"NoisyMean(d={self.d}, n={self.n}, {self.noise}, {level}{flaw})"

    # ------------------------------------------------------------------ theory
    def _atom(self) -> Mechanism:
        """One coordinate: the input moves by at most ``2/n``."""
        if self.sigma is not None:
            return Gaussian(self.sigma, sensitivity=self.sensitivity)
        return Laplace(self.scale, sensitivity=self.sensitivity)

    def composition(self) -> Composed:
        """The ``d``-fold composition of one coordinate, whose theory is the release's."""
        return Composed(self._atom(), self.d)

    def pld(self, step: float | None = None) -> pld_lib.PLD:
        """Privacy loss distribution of the release on the worst-case pair (``d``-fold
        convolution of one coordinate's, Steinke 2022 Theorem 9)."""
        return self.composition().pld(step=step)

    def rdp(self, orders: object = None) -> RDPCurve:
        """RDP curve of the release: ``d`` times one coordinate's (Mironov 2017, Prop. 1)."""
        return self.composition().rdp(orders=orders)

    def _theories(self) -> dict[str, Callable[[], PrivacyProfile]]:
        """The composition's methods: ``exact`` (``G_mu``), ``pld``, ``rdp`` for Gaussian noise;
        ``pld``, ``rdp``, ``kov``, ``advanced`` for Laplace noise (``exact`` too when ``d = 1``)."""
        return self.composition()._theories()

    # ------------------------------------------------------------------ data
    def draw_records(self, count: int, rng: np.random.Generator) -> np.ndarray:
        """``count`` records drawn from the population: int8 array ``(count, d)`` of ``+-1``."""
        count = check_integer("count", count, minimum=0)
        rng = check_rng(rng)
        return np.where(rng.random((count, self.d)) < self._q, 1, -1).astype(np.int8)

    def _seeded_records(self) -> np.ndarray:
        """The population sample fixed by ``seed``: rows ``0 .. n-1`` are the dataset (row 0 the
        target), row ``n`` a fresh draw (the target's replacement in the tracing game)."""
        return self.draw_records(self.n + 1, object_generator(self.seed, "noisy_mean_data"))

    @property
    def target(self) -> np.ndarray:
        """The target record ``z``: row 0 of the population sample fixed by ``seed``."""
        return self._seeded_records()[0]

    @property
    def replacement(self) -> np.ndarray:
        """The fresh draw ``z'`` that replaces the target in the fixed-dataset tracing game."""
        return self._seeded_records()[self.n]

    def reference_records(self, count: int) -> np.ndarray:
        """``count`` records drawn from the population, outside every dataset of the games
        (reference individuals for :class:`~dpaudit.attacks.Tracing`); fixed by ``seed``."""
        rng = object_generator(self.seed, "noisy_mean_reference")
        return self.draw_records(count, rng)

    def records(self, dataset: object, name: str = "dataset") -> np.ndarray:
        """Validate a dataset: int8 array ``(k, d)``, ``k <= n``, entries in ``{-1, 0, +1}``
        (``0``: drawn fresh at every release). An empty 1-d array is the empty dataset."""
        try:
            x = np.asarray(dataset, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"{name} must be an array of records, got {type(dataset).__name__}"
            ) from exc
        if x.ndim == 1 and x.size == 0:
            x = x.reshape(0, self.d)
        if x.ndim != 2 or x.shape[1] != self.d:
            raise ValueError(f"{name} must have shape (k, {self.d}) with k <= n, got {x.shape}")
        if x.shape[0] > self.n:
            raise ValueError(
                f"{name} must hold at most n = {self.n} records, got {x.shape[0]} records"
            )
        a = np.abs(x)
        if not np.all((a <= 1.0) & (x * x == a)):  # exactly -1, 0, +1 (NaN and inf fail)
            raise ValueError(
                f"{name} entries must be -1 or +1 (or 0: drawn from the population at every "
                "release); got other values"
            )
        return x.astype(np.int8)

    def fresh_counts(self, dataset: object) -> np.ndarray:
        """Per coordinate, how many of the ``n`` entries are drawn fresh at every release:
        ``n - k`` missing records plus the zeros of the given ones. Int array ``(d,)``."""
        return self._fresh(self.records(dataset))

    def _fresh(self, x: np.ndarray) -> np.ndarray:
        return (self.n - x.shape[0]) + np.count_nonzero(x == 0, axis=0)

    def release_moments(self, dataset: object) -> tuple[np.ndarray, np.ndarray]:
        """Mean and variance of every coordinate of the release on ``dataset`` (coordinates
        are independent): ``(F_j + m_j p_j) / n`` and ``m_j (1 - p_j^2) / n^2 + Var(noise)``,
        with ``F_j`` the sum of the given entries and ``m_j`` the fresh ones."""
        x = self.records(dataset)
        fixed = x.sum(axis=0, dtype=np.int64).astype(float)
        m = self._fresh(x).astype(float)
        p = self.population
        mean = (fixed + m * p) / self.n
        var = m * (1.0 - p * p) / self.n**2 + self.noise_variance
        return mean, var

    # ------------------------------------------------------------------ sampling and density
    def output_shape(self, dataset: np.ndarray) -> tuple[int, ...]:
        """``(d,)``."""
        self.records(dataset)
        return (self.d,)

    def _noise(self, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        if self.sigma is not None:
            return rng.normal(0.0, self.sigma, size=shape)
        return rng.laplace(0.0, self.scale, size=shape)

    def _noise_logpdf(self, z: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            if self.sigma is not None:
                return -0.5 * np.square(z / self.sigma) - (
                    math.log(self.sigma) + 0.5 * math.log(2.0 * math.pi)
                )
            return -np.abs(z) / self.scale - math.log(2.0 * self.scale)

    def sample(self, dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` releases, float64 ``(size, d)``: the mean of the given records and of fresh
        population draws (one binomial count per coordinate and trial), plus noise."""
        x = self.records(dataset)
        size = check_size(size)
        rng = check_rng(rng)
        fixed = x.sum(axis=0, dtype=np.int64).astype(float)
        m = self._fresh(x)
        out = self._noise((size, self.d), rng)
        if m.any():
            # Sum of m_j fresh +-1 entries = 2 * Binomial(m_j, (1 + p_j) / 2) - m_j.
            ones = rng.binomial(m, self._q, size=(size, self.d))
            out += (fixed + 2.0 * ones - m) / self.n
        else:
            out += fixed / self.n
        return out

    def log_density(self, dataset: np.ndarray, outputs: np.ndarray) -> np.ndarray:
        """Exact log density of each release, shape ``(size,)``.

        Coordinates are independent. A coordinate with no fresh entries has the noise density
        at ``y_j - F_j / n``; one with ``m_j`` fresh entries has the binomial mixture
        ``sum_b Bin(b; m_j, (1 + p_j)/2) f(y_j - (F_j + 2b - m_j) / n)``, summed in log space
        (one vectorised pass per value of ``b``).
        """
        from scipy import stats

        x = self.records(dataset)
        y = check_outputs(outputs, (self.d,))
        fixed = x.sum(axis=0, dtype=np.int64).astype(float)
        m = self._fresh(x)
        if not m.any():
            return self._noise_logpdf(y - fixed / self.n).sum(axis=1)
        total = np.full(y.shape, -np.inf)
        for b in range(int(m.max()) + 1):
            with np.errstate(divide="ignore"):
                log_w = stats.binom.logpmf(b, m, self._q)
            live = np.isfinite(log_w)
            loc = (fixed[live] + 2.0 * b - m[live]) / self.n
            term = log_w[live] + self._noise_logpdf(y[:, live] - loc)
            total[:, live] = np.logaddexp(total[:, live], term)
        return total.sum(axis=1)

    # ------------------------------------------------------------------ pairs
    def worst_case_pair(self) -> NeighbouringPair:
        """The population sample fixed by ``seed`` with the target ``z`` as record 0
        (``D_prime``) against the same sample with ``z`` replaced by ``-z`` (``D``).

        Every coordinate of the mean moves by ``2/n``, the largest replace-one change: for
        Gaussian noise the outputs are ``N(a, sigma^2 I)`` against ``N(a + 2z/n, sigma^2 I)``,
        exactly ``mu``-GDP with ``mu = 2 sqrt(d) / (n sigma)``.
        """
        data = self._seeded_records()[: self.n]
        d = data.copy()
        d[0] = -data[0]
        return NeighbouringPair(
            d, data, "replace_one", description="target z vs -z (every coordinate differs)"
        )

    def tracing_pair(self, game: str = "fixed") -> NeighbouringPair:
        """The tracing game's pair: under ``D_prime`` the target ``z`` is in the data, under
        ``D`` it is replaced by a fresh draw from the population.

        ``game="fixed"``: one dataset for all trials, the population sample fixed by ``seed``
        (``D_prime``, target as record 0) against it with ``z`` replaced by :attr:`replacement`.
        ``game="fresh"``: a fresh dataset in every trial: ``D_prime = [z]`` (``z`` and ``n - 1``
        fresh records), ``D = [0, ..., 0]`` (``n`` fresh records).
        """
        game = check_choice("game", game, GAMES)
        records = self._seeded_records()
        if game == "fixed":
            data = records[: self.n]
            d = data.copy()
            d[0] = records[self.n]
            return NeighbouringPair(
                d, data, "replace_one", description="fixed dataset: target z vs a fresh draw z'"
            )
        return NeighbouringPair(
            np.zeros((1, self.d), dtype=np.int8),
            records[:1],
            "replace_one",
            description="fresh dataset every trial: target z vs a fresh draw",
        )

    def game_of(self, pair: NeighbouringPair) -> str:
        """``"fixed"`` when both datasets are fixed (``n`` records, no zeros), else ``"fresh"``."""
        fresh = self.fresh_counts(pair.d).any() or self.fresh_counts(pair.d_prime).any()
        return "fresh" if fresh else "fixed"

    def target_of(self, pair: NeighbouringPair) -> np.ndarray:
        """The record of ``D_prime`` that ``D`` replaces: the only row where they differ (as
        given; records not given count as fresh draws). Raises ``ValueError`` otherwise."""
        d, dp = self.records(pair.d, "pair.d"), self.records(pair.d_prime, "pair.d_prime")
        k = max(d.shape[0], dp.shape[0])
        pad = np.zeros((k, self.d), dtype=np.int8)
        a, b = pad.copy(), pad.copy()
        a[: d.shape[0]] = d
        b[: dp.shape[0]] = dp
        rows = np.flatnonzero((a != b).any(axis=1))
        if rows.size != 1:
            raise ValueError(
                f"pair must differ in exactly one record to define a target, got {rows.size}"
            )
        z = b[rows[0]]
        if (z == 0).any():
            raise ValueError("the target record of pair.d_prime must be fixed (no 0 entries)")
        return z

    def pair_mu(self, pair: NeighbouringPair) -> float:
        """The exact GDP parameter of a pair of fixed datasets under Gaussian noise: the outputs
        are ``N(S/n, sigma^2 I)`` and ``N(S'/n, sigma^2 I)``, whose trade-off function is
        ``G_mu`` with ``mu = ||S' - S||_2 / (n sigma)`` (DRS Theorem 1), the Neyman-Pearson
        optimum of any attack on this pair, in both orders."""
        if self.sigma is None:
            raise ValueError("pair_mu needs noise 'gaussian'")
        if self.game_of(pair) != "fixed":
            raise ValueError("pair_mu needs two fixed datasets (n records, no 0 entries)")
        s = self.records(pair.d).sum(axis=0, dtype=np.int64)
        s_prime = self.records(pair.d_prime).sum(axis=0, dtype=np.int64)
        return float(np.linalg.norm((s_prime - s).astype(float)) / (self.n * self.sigma))

    def membership_loss(self, pair: NeighbouringPair) -> Callable[[np.ndarray], np.ndarray]:
        """The loss of the pair's target under the released "model": the mean squared error
        ``||y - z||^2 / d`` of each release ``y``, shape ``(size,)``; for
        :class:`~dpaudit.attacks.MembershipInference` (a picklable callable)."""
        return _TargetMeanSquaredError(self.target_of(pair))


class _TargetMeanSquaredError:
    """``outputs (size, d) -> ||y - z||^2 / d``: picklable, so that parallel audits can ship it."""

    def __init__(self, target: np.ndarray) -> None:
        self.target = np.asarray(target, dtype=float)

    def __call__(self, outputs: np.ndarray) -> np.ndarray:
        y = check_outputs(outputs, self.target.shape)
        return np.mean(np.square(y - self.target), axis=1)
