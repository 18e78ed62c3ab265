"""Membership inference from a model's loss (or confidence) on the target record.

The released output is a model (parameters, a released mean, ...); a user-supplied function
maps every output to one number about the target record: its loss under that model, or the
model's confidence on it. Training on the target lowers its loss, so the plain attack scores
``-loss`` (or ``+confidence``): the loss-threshold attack of Yeom, Giacomelli, Fredrikson & Jha
2018, "Privacy risk in machine learning".

The calibrated variant is the likelihood-ratio attack of Carlini, Chien, Nasr, Song, Terzis &
Tramer 2022, "Membership inference attacks from first principles" (LiRA, online form): the
statistic's laws with the target in (``D_prime``) and out (``D``) are modelled as normal,
``N(m_in, s_in^2)`` and ``N(m_out, s_out^2)``, fitted per target on the selection sample, and the
score is the log ratio of the two fitted densities::

    score(x) = log N(x; m_in, s_in^2) - log N(x; m_out, s_out^2).

For one target, thresholding a strictly increasing transform of ``-loss`` gives the same
trade-off curve; the calibrated score differs when the two variances differ (it is then
quadratic in the statistic and can separate laws that share a mean) and when the loss is not
monotone in the evidence. The fitted normal model is an assumption about the statistic; the
audit's bounds stay valid whatever the model, since they only use the evaluation counts.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from dpaudit._core.device import has_twin
from dpaudit._core.validation import check_choice
from dpaudit.attacks.base import Attack
from dpaudit.mechanisms.base import NeighbouringPair

__all__ = ["MembershipInference", "STATISTICS"]

#: What the function returns: a loss (smaller when the target is in) or a confidence (larger).
STATISTICS = ("loss", "confidence")


class MembershipInference(Attack):
    """Score = ``-loss`` (or ``+confidence``) of the target, or the calibrated log ratio.

    Parameters
    ----------
    statistic:
        ``statistic(outputs) -> ndarray (size,)``: for every output (axis 0 = trials, e.g. model
        parameters of shape ``(size, p)``) the loss of the target record, or the confidence on it.
        Must be vectorised over trials and return finite values.
    kind:
        ``"loss"`` (default; smaller means "in") or ``"confidence"`` (larger means "in").
    calibrated:
        Fit the two normal laws on the selection sample and score their log density ratio.

    Attributes
    ----------
    fitted:
        After :meth:`fit` of a calibrated attack: ``{"mean_in", "sd_in", "mean_out", "sd_out"}``
        of the statistic (as returned, before the sign of ``kind``).
    """

    def __init__(
        self,
        statistic: Callable[[np.ndarray], np.ndarray],
        *,
        kind: str = "loss",
        calibrated: bool = False,
    ) -> None:
        if not callable(statistic):
            raise ValueError(
                "statistic must be a function of the outputs returning one value per trial, "
                f"got {type(statistic).__name__}"
            )
        if not isinstance(calibrated, bool):
            raise ValueError(f"calibrated must be True or False, got {calibrated!r}")
        self.statistic = statistic
        self.kind = check_choice("kind", kind, STATISTICS)
        self.calibrated = calibrated
        self.learns = calibrated
        self.fitted: dict[str, float] | None = None

    @classmethod
    def for_mechanism(
        cls, mechanism: Any, pair: NeighbouringPair, *, calibrated: bool = False
    ) -> MembershipInference:
        """The attack with the mechanism's own loss of the pair's target:
        ``mechanism.membership_loss(pair)`` (e.g. :meth:`NoisyMean.membership_loss
        <dpaudit.mechanisms.NoisyMean.membership_loss>`)."""
        make = getattr(mechanism, "membership_loss", None)
        if not callable(make):
            kind = getattr(mechanism, "name", type(mechanism).__name__)
            raise ValueError(
                f"{kind} offers no membership_loss(pair); build MembershipInference(statistic) "
                "with a loss function of its outputs"
            )
        return cls(make(pair), kind="loss", calibrated=calibrated)

    def _values(self, outputs: np.ndarray, name: str = "outputs") -> np.ndarray:
        y = np.asarray(outputs)
        if y.ndim == 0:
            raise ValueError(f"{name} must have a trial axis (axis 0)")
        x = np.asarray(self.statistic(outputs), dtype=float)
        if x.shape != (y.shape[0],):
            raise ValueError(
                f"statistic must return one value per trial, shape ({y.shape[0]},), got {x.shape}"
            )
        if not np.isfinite(x).all():
            raise ValueError("statistic returned NaN or infinite values")
        return x

    def fit(self, outputs_d: np.ndarray, outputs_d_prime: np.ndarray) -> MembershipInference:
        """Calibrated attack: fit ``N(m_out, s_out^2)`` to the statistic on the selection
        outputs under ``D`` and ``N(m_in, s_in^2)`` under ``D_prime`` (sample mean and standard
        deviation, ``ddof=1``). A no-op for the plain attack."""
        if not self.calibrated:
            return self
        x_out = self._values(outputs_d, "outputs_d")
        x_in = self._values(outputs_d_prime, "outputs_d_prime")
        if min(x_out.size, x_in.size) < 2:
            raise ValueError("fit needs at least 2 selection outputs under each dataset")
        sd_out, sd_in = float(np.std(x_out, ddof=1)), float(np.std(x_in, ddof=1))
        if not (sd_out > 0 and sd_in > 0):
            raise ValueError(
                "the statistic is constant under one dataset of the selection sample; a normal "
                "model cannot be fitted (use calibrated=False)"
            )
        self.fitted = {
            "mean_in": float(np.mean(x_in)),
            "sd_in": sd_in,
            "mean_out": float(np.mean(x_out)),
            "sd_out": sd_out,
        }
        return self

    def score(self, outputs: np.ndarray) -> np.ndarray:
        """Plain: ``-statistic`` (loss) or ``+statistic`` (confidence). Calibrated: the log
        ratio of the fitted normal densities, ``log N(x; in) - log N(x; out)``. Shape
        ``(size,)``."""
        x = self._values(outputs)
        if not self.calibrated:
            return -x if self.kind == "loss" else x
        if self.fitted is None:
            raise ValueError(
                "the calibrated attack learns from the selection sample: call "
                "fit(outputs_d, outputs_d_prime) first"
            )
        f = self.fitted
        z_in = (x - f["mean_in"]) / f["sd_in"]
        z_out = (x - f["mean_out"]) / f["sd_out"]
        return 0.5 * (z_out * z_out - z_in * z_in) - math.log(f["sd_in"] / f["sd_out"])

    def runs_on_device(self) -> bool:
        """Whether the attack scores on a torch device: the plain attack (the calibrated one
        learns) with a statistic that has a device twin, a ``torch_call(outputs)`` (tensor in,
        float64 tensor out) defined in the class that defines its ``__call__``, as DP-SGD's
        :class:`~dpaudit.mechanisms.dpsgd.TargetLoss` has."""
        return super().runs_on_device() and has_twin(self.statistic, "__call__", "torch_call")

    def torch_score(self, outputs: Any) -> Any:
        """The device twin of :meth:`score` for the plain attack: ``-statistic`` (loss) or
        ``+statistic`` (confidence), the statistic computed on the device by its
        ``torch_call``; float64, shape ``(size,)``."""
        import torch

        if self.calibrated:
            raise ValueError(
                "the calibrated attack learns from numpy outputs; it has no device score"
            )
        x = self.statistic.torch_call(outputs)
        if tuple(x.shape) != (outputs.shape[0],):
            raise ValueError(
                f"statistic must return one value per trial, shape ({outputs.shape[0]},), "
                f"got {tuple(x.shape)}"
            )
        if not bool(torch.isfinite(x).all()):
            raise ValueError("statistic returned NaN or infinite values")
        return -x if self.kind == "loss" else x

    def params(self) -> dict[str, Any]:
        """``kind``, ``calibrated``, the statistic's name and the fitted laws (when fitted)."""
        out: dict[str, Any] = {
            "statistic": getattr(self.statistic, "__qualname__", type(self.statistic).__name__),
            "kind": self.kind,
            "calibrated": self.calibrated,
        }
        if self.fitted is not None:
            out["fitted"] = dict(self.fitted)
        return out

    @property
    def name(self) -> str:
        """``MembershipInference(loss)`` or ``MembershipInference(loss, calibrated)``."""
        extra = ", calibrated" if self.calibrated else ""
        return f"MembershipInference({self.kind}{extra})"
