"""DP-SGD that shuffles its batches and reports the Poisson accountant (Chua, Ghazi, Kamath,
Kumar, Manurangsi, Sinha & Zhang 2024, "How private are DP-SGD implementations?", ICML): the
common practice their paper warns against, on the core of DP-SGD that decides its privacy.

The dataset is the vector of the records' clipped gradients along one coordinate, each in
``[-1, 1]`` (units of the clipping norm ``C``): every record a Dirac record of
:mod:`dpaudit.mechanisms.dirac`, whose gradient is its value. Every epoch a fresh permutation
of the records is cut into ``b = k // m`` batches of ``m`` (the records left over sit the epoch
out); each step releases its batch's sum plus ``N(0, sigma^2)``: the white-box updates of
DP-SGD. Neighbours add or remove one record, as for the Poisson accountant.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import special

from dpaudit._core.validation import check_integer
from dpaudit.bounds.gaussian_dp import gdp_epsilon
from dpaudit.bounds.tradeoff import TradeoffCurve
from dpaudit.mechanisms.base import NeighbouringPair, PrivacyProfile, check_rng, check_size
from dpaudit.mechanisms.composed import Composed
from dpaudit.mechanisms.datasets import Dataset, make_records
from dpaudit.mechanisms.dpsgd import DPSGD
from dpaudit.mechanisms.flawed.base import FlawedMechanism
from dpaudit.mechanisms.gaussian import Gaussian
from dpaudit.mechanisms.subsampled import PoissonSubsampled

__all__ = ["DPSGDShuffledClaimsPoisson"]

# Relative precision of the noise multiplier calibrated to the claimed eps.
_CALIBRATION = 1e-6


class _AccountantClaim:
    """The Poisson accountant's guarantee as the claim: its own ``delta``, ``epsilon`` and
    trade-off curve (kind ``claim``)."""

    def __init__(self, accountant: Composed) -> None:
        self.pld = accountant.theory("pld")

    def delta(self, eps: float | np.ndarray) -> np.ndarray | float:
        return self.pld.delta(eps)

    def epsilon(self, delta: float) -> float:
        return self.pld.epsilon(delta)

    def tradeoff(self) -> TradeoffCurve:
        curve = self.pld.tradeoff()
        return TradeoffCurve(
            curve.__call__,
            name="Poisson accountant (claimed)",
            kind="claim",
            delta_fn=curve.delta,
        )


class DPSGDShuffledClaimsPoisson(FlawedMechanism):
    """Shuffled batches accounted as Poisson samples of rate ``m / k`` (module docstring).

    The claim is the Poisson-subsampled Gaussian mechanism composed over the ``T = b E`` steps
    (the accountant such implementations run), with the noise multiplier ``sigma`` chosen so that
    it states ``(eps, 1e-5)``-DP. It is wrong: with a fixed batch size an added record takes the
    slot of another, so on datasets whose records are all ``-1`` the added ``+1`` moves its
    batch's sum by 2 (in units of ``C``), where Poisson sampling moves a sum by at most 1; it
    does so at exactly one step of every epoch (or none, when it sits the epoch out).

    True ``eps`` at ``delta = 1e-5``: at most that of the Gaussian mechanism with
    ``mu = 2 sqrt(E) / sigma`` (one step of sensitivity 2 per epoch, composed over the ``E``
    epochs; :class:`~dpaudit.mechanisms.dpsgd.DPSGD`'s bound for shuffled batches), and at least
    what the event "some update exceeds ``t``" certifies on the worst-case pair, whose two
    probabilities are products of normal CDFs (computed exactly, best ``t`` on a grid).

    Parameters
    ----------
    eps:
        The ``eps`` claimed at ``delta = 1e-5`` (it sets ``sigma``).
    k:
        Records of ``D`` (default 10).
    batch_size:
        ``m`` (default 1).
    epochs:
        ``E`` (default 1).
    """

    registry_name = "dpsgd_shuffled_claims_poisson"
    citation = (
        "Chua, Ghazi, Kamath, Kumar, Manurangsi, Sinha & Zhang 2024, 'How private are DP-SGD "
        "implementations?' (ICML)"
    )
    adjacency = "add_remove"
    relation = "add_remove"
    claimed_delta = 1e-5
    default_k = 10
    max_k = 2**12

    def __init__(
        self, eps: float = 0.1, k: int | None = None, *, batch_size: int = 1, epochs: int = 1
    ) -> None:
        super().__init__(eps, k)
        self.batch_size = check_integer("batch_size", batch_size, minimum=1, maximum=self.k)
        self.epochs = check_integer("epochs", epochs, minimum=1, maximum=1000)
        self.batches = self.k // self.batch_size
        self.steps = self.batches * self.epochs
        self.sigma = self._calibrate()
        data = Dataset("records", np.zeros((self.k, 1)), np.zeros(self.k))
        self._dpsgd = DPSGD(
            "logistic",
            data,
            sigma=self.sigma,
            batch_size=self.batch_size,
            steps=self.steps,
            sampling="shuffled",
            observe="updates",
        )

    def _accountant(self, sigma: float) -> Composed:
        rate = self.batch_size / self.k
        return Composed(PoissonSubsampled(Gaussian(sigma, 1.0), rate), self.steps)

    def _calibrate(self) -> float:
        """The ``sigma`` at which the Poisson accountant states ``(eps, 1e-5)``-DP (bisection on
        ``log sigma``; the accountant's ``eps`` falls as ``sigma`` grows)."""

        def eps_at(log_sigma: float) -> float:
            return self._accountant(math.exp(log_sigma)).epsilon(self.claimed_delta, "pld")

        lo, hi = -3.0, 3.0
        while eps_at(hi) > self.eps:
            lo, hi = hi, hi + 3.0
        while eps_at(lo) < self.eps:
            lo, hi = lo - 3.0, lo
        while hi - lo > _CALIBRATION:
            mid = 0.5 * (lo + hi)
            if eps_at(mid) > self.eps:
                lo = mid
            else:
                hi = mid
        return math.exp(hi)

    def params(self) -> dict[str, Any]:
        """Registry name, ``eps``, ``k``, ``batch_size``, ``epochs`` and the calibrated
        ``sigma``."""
        return {
            **super().params(),
            "batch_size": self.batch_size,
            "epochs": self.epochs,
            "sigma": self.sigma,
        }

    def _theories(self) -> dict[str, Callable[[], PrivacyProfile]]:
        """``claim``: the Poisson accountant's guarantee (not a bound: this mechanism shuffles)."""
        return {"claim": lambda: _AccountantClaim(self._accountant(self.sigma))}

    def epsilon_bounds(self) -> tuple[float, float]:
        upper = float(gdp_epsilon(self.claimed_delta, 2.0 * math.sqrt(self.epochs) / self.sigma))
        return min(self._event_lower_bound(), upper), upper

    def _event_lower_bound(self) -> float:
        """``max_t log((Q(E_t) - delta) / P(E_t))`` for ``E_t = {some update > t - m}`` on the
        worst-case pair: under ``D`` every update is ``-m + sigma Z``; under ``D_prime`` the
        added record's batch (probability ``m / (k + 1)`` each) is shifted by 2."""
        b, m, n = self.batches, self.batch_size, self.k + 1
        t = np.linspace(-2.0, 12.0, 4001) * self.sigma
        log_below = special.log_ndtr(t / self.sigma)
        log_shifted = special.log_ndtr((t - 2.0) / self.sigma)
        p_none = -np.expm1(self.steps * log_below)
        in_epoch = b * m / n
        epoch_below = np.log(
            (1.0 - in_epoch) * np.exp(b * log_below)
            + in_epoch * np.exp(log_shifted + (b - 1) * log_below)
        )
        q_none = -np.expm1(self.epochs * epoch_below)
        with np.errstate(divide="ignore", invalid="ignore"):
            eps = np.log((q_none - self.claimed_delta) / p_none)
        eps = eps[np.isfinite(eps)]
        return max(0.0, float(eps.max())) if eps.size else 0.0

    def worst_case_pair(self) -> NeighbouringPair:
        """``k`` records ``-1`` against the same plus one ``+1``."""
        d = -np.ones(self.k)
        return NeighbouringPair(
            d, np.append(d, 1.0), "add_remove", f"{self.k} records -1 vs the same plus +1"
        )

    def _records(self, dataset: object) -> np.ndarray:
        a = np.asarray(dataset, dtype=float)
        if a.ndim != 1 or a.size < self.batches * self.batch_size:
            raise ValueError(
                f"dataset must be a vector of at least {self.batches * self.batch_size} clipped "
                f"gradients for {self.name}, got shape {a.shape}"
            )
        if not np.isfinite(a).all() or (np.abs(a) > 1.0).any():
            raise ValueError("dataset values must be finite clipped gradients in [-1, 1]")
        return make_records(np.zeros((a.size, 1)), 0.0, a)

    def sample(self, dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` runs of ``T`` updates on the records ``dataset``, shape ``(size, T)``."""
        records = self._records(dataset)
        return self._dpsgd.sample(records, check_size(size), check_rng(rng))

    def log_density(self, dataset: np.ndarray, outputs: np.ndarray) -> np.ndarray:
        """Exact log density of the updates
        (:func:`~dpaudit.mechanisms.dirac.shuffled_updates_log_density`)."""
        return self._dpsgd.log_density(self._records(dataset), outputs)

    def features(self, pair: NeighbouringPair) -> Callable[[np.ndarray], np.ndarray]:
        """The exact log likelihood ratio of the updates on ``pair``."""

        def log_ratio(outputs: np.ndarray) -> np.ndarray:
            return self.log_density(pair.d_prime, outputs) - self.log_density(pair.d, outputs)

        return log_ratio
