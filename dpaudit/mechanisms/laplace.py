"""The Laplace mechanism: a clipped sum query plus ``Lap(0, scale)`` noise on every coordinate.

Records are clipped to l1 norm ``sensitivity`` (absolute value for scalar records), so adding or
removing one record moves the sum by at most ``Delta = sensitivity`` in l1, and the mechanism is
``eps0``-DP with ``eps0 = Delta / scale`` (Dwork, McSherry, Nissim & Smith 2006). On the
worst-case pair the outputs are ``Lap(0, b)`` against ``Lap(Delta, b)``, whose trade-off function
is given in closed form by Dong, Roth & Su 2022, "Gaussian differential privacy", Section 2.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from dpaudit._core.validation import check_positive
from dpaudit.bounds import pld as pld_lib
from dpaudit.bounds import tradeoff
from dpaudit.bounds.rdp import RDPCurve, rdp_laplace
from dpaudit.mechanisms.base import (
    AdditiveNoiseMechanism,
    CurveProfile,
    PrivacyProfile,
    check_outputs,
)

__all__ = ["Laplace"]


class Laplace(AdditiveNoiseMechanism):
    """Sum of records clipped to l1 norm ``sensitivity``, plus ``Lap(0, scale)`` per coordinate.

    Parameters
    ----------
    scale:
        Scale ``b`` of the Laplace noise (density ``exp(-|z|/b) / (2b)``).
    sensitivity:
        Clipping norm ``Delta``; the add/remove l1 sensitivity of the sum.
    """

    norm_order = 1

    def __init__(self, scale: float, sensitivity: float = 1.0) -> None:
        super().__init__(sensitivity)
        self.scale = check_positive("scale", scale)

    @property
    def pure_epsilon(self) -> float:
        """``eps0 = Delta / b``: the mechanism is ``(eps0, 0)``-DP."""
        return self.sensitivity / self.scale

    def params(self) -> dict[str, Any]:
        """``{"scale": ..., "sensitivity": ...}``."""
        return {"scale": self.scale, "sensitivity": self.sensitivity}

    def pld(self, step: float | None = None) -> pld_lib.PLD:
        """Privacy loss distribution of ``Lap(0, b)`` vs ``Lap(Delta, b)`` (the same in both
        orders; atoms at ``+-eps0`` and a continuous part in between)."""
        return pld_lib.laplace(self.scale, self.sensitivity, step=step)

    def rdp(self, orders: object = None) -> RDPCurve:
        """RDP curve of the Laplace mechanism (Mironov 2017, Proposition 6), exact."""
        return rdp_laplace(self.scale, self.sensitivity, orders=orders)

    def _theories(self) -> dict[str, Callable[[], PrivacyProfile]]:
        """``exact`` (closed-form trade-off, DRS Section 2.2), ``pld``, ``rdp``."""
        return {
            "exact": lambda: CurveProfile(tradeoff.laplace_tradeoff(self.pure_epsilon)),
            "pld": self.pld,
            "rdp": self.rdp,
        }

    def noise(self, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        """``Lap(0, scale)`` draws of the given shape."""
        return rng.laplace(0.0, self.scale, size=shape)

    def torch_noise(self, out: Any, generator: Any) -> None:
        """The device twin of :meth:`noise`: fill the float64 tensor ``out`` with
        ``Lap(0, scale)`` draws from ``generator``, each the difference of two ``Exp(1)`` draws
        ``-log1p(-u)`` (``u`` uniform on ``[0, 1)``, so both are finite) times ``scale``."""
        import torch

        u = torch.empty((2, *out.shape), dtype=torch.float64, device=out.device)
        u.uniform_(generator=generator).neg_().log1p_()
        torch.sub(u[1], u[0], out=out)
        out.mul_(self.scale)

    def torch_noise_logpdf(self, z: Any) -> Any:
        """The device twin of :meth:`noise_logpdf` on a float64 tensor."""
        return z.abs().div_(-self.scale).sub_(math.log(2.0) + math.log(self.scale))

    def noise_logpdf(self, z: np.ndarray) -> np.ndarray:
        """``log(exp(-|z|/b) / (2b)) = -|z|/b - log(2b)``, elementwise."""
        with np.errstate(over="ignore"):
            return -np.abs(z) / self.scale - (math.log(2.0) + math.log(self.scale))

    def torch_log_density_ratio(self, d: np.ndarray, d_prime: np.ndarray, outputs: Any) -> Any:
        """The device twin of :meth:`log_density_ratio` on a float64 tensor of outputs."""
        import torch

        a = self.query(d)
        c = self.query(d_prime)

        def tensor(x: np.ndarray) -> Any:
            return torch.as_tensor(x, dtype=torch.float64, device=outputs.device)

        width = np.abs(c - a)
        per_coordinate = (
            torch.clamp(
                tensor(np.sign(c - a)) * (2.0 * outputs - tensor(a) - tensor(c)),
                tensor(-width),
                tensor(width),
            )
            / self.scale
        )
        if outputs.ndim == 1:
            return per_coordinate
        return per_coordinate.reshape(outputs.shape[0], -1).sum(dim=1)

    def log_density_ratio(
        self, d: np.ndarray, d_prime: np.ndarray, outputs: np.ndarray
    ) -> np.ndarray:
        """Exact ``log q(y) - log p(y) = (|y - a| - |y - c|) / b`` per coordinate, with ``a``,
        ``c`` the sums on ``d``, ``d_prime``: ``clip(s (2y - a - c), -|c - a|, |c - a|) / b`` with
        ``s = sign(c - a)``. The clipped values are the point masses ``+-|c - a| / b`` exactly."""
        a = self.query(d)
        c = self.query(d_prime)
        y = check_outputs(outputs, a.shape)
        width = np.abs(c - a)
        per_coordinate = np.clip(np.sign(c - a) * (2.0 * y - a - c), -width, width) / self.scale
        if y.ndim == 1:
            return per_coordinate
        return per_coordinate.reshape(y.shape[0], -1).sum(axis=1)
