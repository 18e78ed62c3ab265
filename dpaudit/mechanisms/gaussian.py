"""The Gaussian mechanism: a clipped sum query plus ``N(0, sigma^2)`` noise on every coordinate.

Records are clipped to l2 norm ``sensitivity`` (absolute value for scalar records), so adding or
removing one record moves the sum by at most ``Delta = sensitivity`` in l2. The mechanism is then
``mu``-GDP with ``mu = Delta / sigma`` (Dong, Roth & Su 2022, "Gaussian differential privacy",
Theorem 1), and that is exact: on the worst-case pair the outputs are ``N(0, sigma^2)`` against
``N(Delta, sigma^2)``, whose trade-off function is ``G_mu`` (DRS Definition 4).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from dpaudit._core.validation import check_positive
from dpaudit.bounds import pld as pld_lib
from dpaudit.bounds.gaussian_dp import gdp
from dpaudit.bounds.rdp import RDPCurve, rdp_gaussian
from dpaudit.mechanisms.base import (
    AdditiveNoiseMechanism,
    CurveProfile,
    PrivacyProfile,
    check_outputs,
)

__all__ = ["Gaussian"]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


class Gaussian(AdditiveNoiseMechanism):
    """Sum of records clipped to l2 norm ``sensitivity``, plus ``N(0, sigma^2)`` per coordinate.

    Parameters
    ----------
    sigma:
        Standard deviation of the noise (absolute, not a multiplier of the sensitivity).
    sensitivity:
        Clipping norm ``Delta``; the add/remove l2 sensitivity of the sum.
    """

    norm_order = 2

    def __init__(self, sigma: float, sensitivity: float = 1.0) -> None:
        super().__init__(sensitivity)
        self.sigma = check_positive("sigma", sigma)

    @property
    def mu(self) -> float:
        """The GDP parameter ``Delta / sigma`` (DRS Theorem 1)."""
        return self.sensitivity / self.sigma

    def params(self) -> dict[str, Any]:
        """``{"sigma": ..., "sensitivity": ...}``."""
        return {"sigma": self.sigma, "sensitivity": self.sensitivity}

    def pld(self, step: float | None = None) -> pld_lib.PLD:
        """Privacy loss distribution of ``N(0, sigma^2)`` vs ``N(Delta, sigma^2)``: the loss is
        ``N(eta, 2 eta)``, ``eta = Delta^2 / (2 sigma^2)`` (Steinke 2022, Proposition 3)."""
        return pld_lib.gaussian(self.sigma, self.sensitivity, step=step)

    def rdp(self, orders: object = None) -> RDPCurve:
        """RDP curve ``eps(lambda) = lambda Delta^2 / (2 sigma^2)`` (Mironov 2017, Prop. 7)."""
        return rdp_gaussian(self.sigma, self.sensitivity, orders=orders)

    def log_density_ratio(
        self, d: np.ndarray, d_prime: np.ndarray, outputs: np.ndarray
    ) -> np.ndarray:
        """Exact ``log q(y) - log p(y) = <y - (a + c) / 2, c - a> / sigma^2``, with ``a``, ``c`` the
        sums on ``d``, ``d_prime``: the difference of the two quadratic log densities, which is
        linear in ``y``. One multiply-add per coordinate instead of two log densities."""
        a = self.query(d)
        c = self.query(d_prime)
        y = check_outputs(outputs, a.shape)
        shift = (c - a) / self.sigma**2
        offset = float(np.dot(np.ravel(a + c), np.ravel(shift))) / 2.0
        if y.ndim == 1:
            score = y * float(shift)
        else:
            score = y.reshape(y.shape[0], -1) @ np.ravel(shift)
        score -= offset
        return score

    def torch_log_density_ratio(self, d: np.ndarray, d_prime: np.ndarray, outputs: Any) -> Any:
        """The device twin of :meth:`log_density_ratio` on a float64 tensor of outputs."""
        import torch

        a = self.query(d)
        c = self.query(d_prime)
        shift = (c - a) / self.sigma**2
        offset = float(np.dot(np.ravel(a + c), np.ravel(shift))) / 2.0
        if outputs.ndim == 1:
            score = outputs * float(shift)
        else:
            weights = torch.as_tensor(np.ravel(shift), dtype=torch.float64, device=outputs.device)
            score = outputs.reshape(outputs.shape[0], -1) @ weights
        return score.sub_(offset)

    def _theories(self) -> dict[str, Callable[[], PrivacyProfile]]:
        """``exact`` (``G_mu``, DRS Theorem 1), ``pld``, ``rdp``."""
        return {
            "exact": lambda: CurveProfile(gdp(self.mu)),
            "pld": self.pld,
            "rdp": self.rdp,
        }

    def noise(self, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        """``N(0, sigma^2)`` draws of the given shape."""
        return rng.normal(0.0, self.sigma, size=shape)

    def torch_noise(self, out: Any, generator: Any) -> None:
        """The device twin of :meth:`noise`: fill the float64 tensor ``out`` with
        ``N(0, sigma^2)`` draws from ``generator`` (float64 throughout: float32 normals on CUDA
        never go beyond about 6.7 sigma)."""
        out.normal_(0.0, self.sigma, generator=generator)

    def torch_noise_logpdf(self, z: Any) -> Any:
        """The device twin of :meth:`noise_logpdf` on a float64 tensor."""
        return (z / self.sigma).square_().mul_(-0.5).sub_(math.log(self.sigma) + _HALF_LOG_2PI)

    def noise_logpdf(self, z: np.ndarray) -> np.ndarray:
        """``log phi_sigma(z) = -z^2 / (2 sigma^2) - log(sigma) - log(2 pi) / 2``, elementwise."""
        with np.errstate(over="ignore"):
            return -0.5 * np.square(z / self.sigma) - (math.log(self.sigma) + _HALF_LOG_2PI)
