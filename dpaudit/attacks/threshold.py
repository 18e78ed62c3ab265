"""The threshold attack on a scalar statistic of the output.

The simplest black-box attack: score every output by one number (the output itself, one of its
coordinates, or a fixed linear projection) and threshold it. For the Gaussian and Laplace
mechanisms on their worst-case pairs the output itself is a monotone function of the likelihood
ratio, so this attack is already optimal there; on other mechanisms it is a valid but weaker test.
"""

from __future__ import annotations

from numbers import Integral
from typing import Any

import numpy as np

from dpaudit.attacks.base import Attack

__all__ = ["Threshold"]


class Threshold(Attack):
    """Score = the scalar output, a coordinate of it, or a fixed linear projection.

    Parameters
    ----------
    projection:
        ``None``: outputs must be scalar (shape ``(size,)`` or ``(size, 1)``). An integer ``j``:
        coordinate ``j`` of vector outputs. An array ``w``: the projection ``<y, w>`` (use a
        negative weight, e.g. ``[-1.0]`` for scalar outputs, when smaller outputs point to
        ``D_prime``). Vector outputs of any shape are flattened per trial first.
    """

    def __init__(self, projection: int | np.ndarray | list[float] | None = None) -> None:
        if projection is None or (
            isinstance(projection, Integral | np.integer) and not isinstance(projection, bool)
        ):
            self.projection: int | np.ndarray | None = (
                None if projection is None else int(projection)
            )
            return
        try:
            w = np.asarray(projection, dtype=float)
        except (TypeError, ValueError):
            w = np.zeros(0)
        if w.ndim != 1 or w.size == 0 or not np.isfinite(w).all():
            raise ValueError(
                "projection must be None, an integer coordinate or a non-empty 1-d array of "
                f"finite weights, got {projection!r}"
            )
        self.projection = w

    def _check_width(self, width: int) -> None:
        """Refuse outputs of ``width`` values that the projection does not fit."""
        if self.projection is None:
            if width != 1:
                raise ValueError(
                    f"Threshold() needs scalar outputs, got {width} values per output; "
                    "pass projection= (a coordinate or weights)"
                )
        elif isinstance(self.projection, int):
            if not -width <= self.projection < width:
                raise ValueError(
                    f"projection (coordinate) must be in [{-width}, {width - 1}], "
                    f"got {self.projection}"
                )
        elif self.projection.size != width:
            raise ValueError(
                f"projection must have one weight per output value ({width}), "
                f"got {self.projection.size}"
            )

    def score(self, outputs: np.ndarray) -> np.ndarray:
        """The statistic of every output (axis 0 = trials), shape ``(size,)``."""
        y = np.asarray(outputs, dtype=float)
        if y.ndim == 0:
            raise ValueError("outputs must have a trial axis (axis 0)")
        flat = y.reshape(y.shape[0], -1)
        self._check_width(flat.shape[1])
        if self.projection is None:
            return flat[:, 0]
        if isinstance(self.projection, int):
            return flat[:, self.projection]
        return flat @ self.projection

    def torch_score(self, outputs: Any) -> Any:
        """The device twin of :meth:`score` on a tensor of outputs: float64, shape ``(size,)``."""
        import torch

        flat = outputs.reshape(outputs.shape[0], -1).to(torch.float64)
        self._check_width(flat.shape[1])
        if self.projection is None:
            return flat[:, 0]
        if isinstance(self.projection, int):
            return flat[:, self.projection]
        return flat @ torch.as_tensor(self.projection, dtype=torch.float64, device=flat.device)

    def params(self) -> dict[str, Any]:
        """``{"projection": None | int | list}``."""
        p = self.projection
        return {"projection": p.tolist() if isinstance(p, np.ndarray) else p}

    @property
    def name(self) -> str:
        """``Threshold`` or ``Threshold(projection=...)``."""
        if self.projection is None:
            return "Threshold"
        return f"Threshold(projection={self.params()['projection']})"
