"""What every attack offers: a score per output, larger meaning "the output came from D_prime".

Attacks that learn (a threshold, a classifier, a population mean) learn in :meth:`Attack.fit` on a
selection sample handed to them by the engine, never on the evaluation trials.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from dpaudit._core.device import has_twin

__all__ = ["Attack"]


class Attack(ABC):
    """Base class of attacks: ``score(outputs) -> ndarray of shape (size,)``."""

    #: True when the attack must be fitted on a selection sample before scoring.
    learns: bool = False

    #: True when the score is the exact privacy loss ``log q(y)/p(y)`` (enables delta(eps)
    #: Monte Carlo estimates in the engine).
    exact_privacy_loss: bool = False

    @abstractmethod
    def score(self, outputs: np.ndarray) -> np.ndarray:
        """Score each output (axis 0 = trials); larger means "more likely D_prime"."""

    def runs_on_device(self) -> bool:
        """Whether the attack scores on a torch device: a ``torch_score(outputs)`` (tensor in,
        float64 tensor out) defined in the class that defines :meth:`score` (its device twin).
        Attacks that learn never do."""
        return not self.learns and has_twin(self, "score", "torch_score")

    def fit(self, outputs_d: np.ndarray, outputs_d_prime: np.ndarray) -> Attack:
        """Learn from selection outputs under ``D`` and ``D_prime``; a no-op for fixed attacks."""
        return self

    def limit_training(self, outputs: int) -> None:
        """Draw at most ``outputs`` extra training outputs per dataset in :meth:`fit` (the
        engine's budget of calls to the mechanism); a no-op for attacks that draw none."""
        return None

    @property
    def extra_outputs(self) -> int:
        """Extra outputs per dataset the attack drew from the mechanism in :meth:`fit`."""
        return 0

    def params(self) -> dict[str, Any]:
        """The attack's parameters, JSON-ready."""
        return {}

    @property
    def name(self) -> str:
        """Short label used in results and reports."""
        return type(self).__name__
