"""The Neyman-Pearson likelihood-ratio attack.

By the Neyman-Pearson lemma, thresholding ``log q(y)/p(y)`` gives the most powerful test of
``P = M(D)`` against ``Q = M(D_prime)`` at every type I error (with randomisation at ties), so its
trade-off curve is ``T(P, Q)`` itself (Dong, Roth & Su 2022, Section 2.1;
docs/theory.md#conventions).
The score is the privacy loss ``L_{Q||P}(y) = -L_{P||Q}(y)``, which also lets the engine estimate
``delta(eps)`` directly (docs/theory.md#empirical).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpaudit.attacks.base import Attack
from dpaudit.mechanisms.base import Mechanism, NeighbouringPair

__all__ = ["LikelihoodRatio"]


class LikelihoodRatio(Attack):
    """Score ``log q(y) - log p(y)`` from the mechanism's exact ``log_density``.

    Parameters
    ----------
    mechanism:
        A mechanism whose ``log_density(dataset, outputs)`` is its exact output log density.
    pair:
        The neighbouring pair the test distinguishes; ``p`` is the density on ``pair.d``, ``q``
        on ``pair.d_prime``. Defaults to ``mechanism.worst_case_pair()``.

    Notes
    -----
    Outputs impossible under ``D`` but possible under ``D_prime`` score ``+inf`` (and ``-inf`` the
    other way round); an output impossible under both raises ``ValueError``.
    """

    exact_privacy_loss = True

    def __init__(self, mechanism: Mechanism, pair: NeighbouringPair | None = None) -> None:
        if not callable(getattr(mechanism, "log_density", None)):
            kind = type(mechanism).__name__
            raise ValueError(f"mechanism must offer log_density(dataset, outputs), got {kind}")
        if pair is None:
            pair = mechanism.worst_case_pair()
        if not isinstance(pair, NeighbouringPair):
            raise ValueError(f"pair must be a NeighbouringPair, got {type(pair).__name__}")
        self.mechanism = mechanism
        self.pair = pair

    def score(self, outputs: np.ndarray) -> np.ndarray:
        """``log q(y) - log p(y)`` for every output (axis 0 = trials), shape ``(size,)``.

        Uses the mechanism's ``log_density_ratio`` when it has one (exact closed forms keep the
        privacy loss's point masses single floating-point values), else the two log densities.
        """
        ratio = getattr(self.mechanism, "log_density_ratio", None)
        if callable(ratio):
            score = np.asarray(ratio(self.pair.d, self.pair.d_prime, outputs), dtype=float)
        else:
            log_q = np.asarray(self.mechanism.log_density(self.pair.d_prime, outputs), dtype=float)
            log_p = np.asarray(self.mechanism.log_density(self.pair.d, outputs), dtype=float)
            with np.errstate(invalid="ignore"):
                score = log_q - log_p
        if np.isnan(score).any():
            raise ValueError(
                "log_density gave NaN, or an output has density zero under both datasets"
            )
        return score

    def runs_on_device(self) -> bool:
        """Whether the mechanism computes its log density ratio on a torch device
        (:meth:`~dpaudit.mechanisms.base.Mechanism.ratio_on_device`)."""
        ready = getattr(self.mechanism, "ratio_on_device", None)
        return super().runs_on_device() and callable(ready) and bool(ready())

    def torch_score(self, outputs: Any) -> Any:
        """The device twin of :meth:`score`: the mechanism's ``torch_log_density_ratio`` on a
        tensor of outputs, as a float64 tensor of shape ``(size,)``."""
        return self.mechanism.torch_log_density_ratio(self.pair.d, self.pair.d_prime, outputs)

    def params(self) -> dict[str, Any]:
        """The mechanism's name and the pair."""
        return {"mechanism": self.mechanism.name, "pair": self.pair.to_dict()}
