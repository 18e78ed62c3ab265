"""The tracing attack on a released mean: correlate the release with the target record.

Score (Steinke 2022, "Composition of differential privacy & privacy amplification by
subsampling", proof of Theorem 25; Dwork, Smith, Steinke, Ullman & Vadhan 2015, "Robust
traceability from trace amounts")::

    T(y) = < y - p_hat, z - c >,

with ``y`` the release, ``z`` the target record, ``p_hat`` the population mean (known, or
estimated) and ``c = p_hat``, or in the reference-record variant ``c = r_bar``, the mean of
reference records drawn from the population and known to be outside the data. A target in the
data pulls the mean towards itself, so ``T`` is larger under ``D_prime``. ``T`` is an affine
function of ``y`` with direction ``v = z - c``: :attr:`Tracing.direction`.

**Analytic distribution, fixed-dataset game.** Let ``S'`` be the sum of the records of
``D_prime`` (target ``z`` included) and ``S = S' - z + z'`` that of ``D`` (``z`` replaced by
``z'``). With Gaussian noise ``y = S/n + xi``, ``xi ~ N(0, sigma^2 I_d)``, and ``T`` is an affine
function of ``xi``::

    T ~ N(<S/n - p_hat, v>,  sigma^2 ||v||^2)   under D,
    T ~ N(<S'/n - p_hat, v>, sigma^2 ||v||^2)   under D_prime.

Two normal laws with one variance: thresholding ``T`` has the trade-off function ``G_mu_T``
exactly (Dong, Roth & Su 2022, Definition 4), with::

    mu_T = <S' - S, v> / (n sigma ||v||) = <z - z', v> / (n sigma ||v||).

By Cauchy-Schwarz ``mu_T <= ||z - z'|| / (n sigma)``, the Neyman-Pearson ``mu`` of the pair
(:meth:`~dpaudit.mechanisms.NoisyMean.pair_mu`), with equality iff ``v`` is parallel to
``z - z'``. For ``v = z - p`` and ``z, z'`` drawn from the population,
``E <z - z', z - p> = E ||z - p||^2 = sum_j (1 - p_j^2)`` while ``E ||z - z'||^2`` is twice that:
the statistic, which does not know ``z'``, reaches about ``1/sqrt(2)`` of the optimum, and both
stay below the worst-case ``2 sqrt(d) / (n sigma)`` (``z' = -z``).

**Fresh-dataset game.** The other records are drawn afresh in every trial, so the data part
of ``T`` is random too: with ``m_j`` fresh entries in coordinate ``j`` (``n - 1`` under
``D_prime``, ``n`` under ``D``) ``T`` has mean ``<(F + m p)/n - p_hat, v>`` and variance
``sum_j v_j^2 (m_j (1 - p_j^2) / n^2 + sigma^2)``; it is a sum of independent bounded terms plus
Gaussian noise, approximately normal, and::

    mu_T ~= <z - p, v> / (n sqrt(sum_j v_j^2 ((n - 1/2)(1 - p_j^2) / n^2 + sigma^2))).

The other records' sampling variance, about ``(1 - p_j^2) / n`` per coordinate of the mean,
adds to the noise variance ``sigma^2``, while the mean shift ``<z - p, v> / n`` is what the fixed
game gives on average over ``z'``: the fresh game is weaker by a factor of about
``1 / sqrt(1 + c / (n sigma^2))``, with ``c`` the mean of ``1 - p_j^2`` weighted by ``v_j^2``
(``c = 0.8`` for ``p`` uniform on ``[-1, 1]``). It matters when the noise per coordinate is small
against the sampling error of the mean: with the release calibrated to ``mu``-GDP,
``n sigma^2 = 4d / (n mu^2)``, so the fresh game loses most at small ``d``.

:meth:`Tracing.score_moments` and :meth:`Tracing.predicted_mu` compute these numbers for any
dataset pair (Laplace noise: the same moments, and a normal approximation throughout).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpaudit._core.validation import check_choice, check_integer
from dpaudit.attacks.base import Attack
from dpaudit.mechanisms.base import NeighbouringPair
from dpaudit.mechanisms.noisy_mean import GAMES, NoisyMean

__all__ = ["Tracing", "CENTERS"]

#: Where ``p_hat`` comes from in :meth:`Tracing.for_game`: the true population mean, an
#: estimate learned on the selection sample, or the mean of reference records.
CENTERS = ("population", "learned", "reference")


def _vector(name: str, value: object, length: int | None = None) -> np.ndarray:
    try:
        v = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be an array of numbers, got {type(value).__name__}") from exc
    if v.ndim != 1 or v.size == 0 or (length is not None and v.size != length):
        shape = "(d,)" if length is None else f"({length},)"
        raise ValueError(f"{name} must have shape {shape}, got {v.shape}")
    if not np.isfinite(v).all():
        raise ValueError(f"{name} must contain only finite numbers, got NaN or inf")
    return v.copy()


def _releases(name: str, outputs: object, d: int) -> np.ndarray:
    """``outputs`` as a float array ``(size, d)`` (any trailing shape with ``d`` values)."""
    y = np.asarray(outputs, dtype=float)
    if y.ndim < 1 or math.prod(y.shape[1:]) != d:
        raise ValueError(f"{name} must have shape (size, {d}), got {y.shape}")
    return y.reshape(y.shape[0], d)


class Tracing(Attack):
    """Score ``<y - p_hat, z - c>`` (see the module docstring); larger means "``z`` is in".

    Parameters
    ----------
    target:
        The target record ``z``, shape ``(d,)``.
    population_mean:
        ``p_hat``, shape ``(d,)``. Default: the mean of the reference records when given, else
        learned in :meth:`fit`: the mean of all selection releases (under both datasets).
    reference:
        Reference records, shape ``(m, d)``: the direction becomes ``z - r_bar``
        (reference-record variant). Default: none, direction ``z - p_hat``.
    game:
        The game the attack is meant for (``"fixed"`` or ``"fresh"``), recorded in
        :meth:`params`; :meth:`for_game` sets it together with :attr:`pair`.

    Attributes
    ----------
    pair:
        The pair of the game (set by :meth:`for_game`), else ``None``.
    """

    def __init__(
        self,
        target: object,
        population_mean: object = None,
        *,
        reference: object = None,
        game: str | None = None,
    ) -> None:
        self.target = _vector("target", target)
        d = self.target.size
        self.reference: np.ndarray | None = None
        if reference is not None:
            r = np.asarray(reference, dtype=float)
            if r.ndim != 2 or r.shape[0] == 0 or r.shape[1] != d:
                raise ValueError(f"reference must have shape (m, {d}) with m >= 1, got {r.shape}")
            if not np.isfinite(r).all():
                raise ValueError("reference must contain only finite numbers, got NaN or inf")
            self.reference = r.copy()
        self.game = None if game is None else check_choice("game", game, GAMES)
        self.pair: NeighbouringPair | None = None
        self.center: np.ndarray | None = None
        if population_mean is not None:
            self.center = _vector("population_mean", population_mean, d)
        elif self.reference is not None:
            self.center = self.reference.mean(axis=0)
        self.learns = self.center is None

    @classmethod
    def for_game(
        cls,
        mechanism: NoisyMean,
        game: str = "fixed",
        *,
        center: str = "population",
        references: int = 100,
    ) -> Tracing:
        """The attack of the tracing game on a :class:`~dpaudit.mechanisms.NoisyMean`, with the
        game's pair as :attr:`pair` (audit it:
        ``audit_mechanism(mechanism, attack.pair, attack, ...)``).

        ``center``: ``"population"`` (the true ``p``), ``"learned"`` (estimated in :meth:`fit`)
        or ``"reference"`` (``references`` reference records of the mechanism's population,
        :meth:`~dpaudit.mechanisms.NoisyMean.reference_records`).
        """
        if not isinstance(mechanism, NoisyMean):
            raise ValueError(
                f"the tracing game needs a NoisyMean mechanism, got {type(mechanism).__name__}"
            )
        game = check_choice("game", game, GAMES)
        center = check_choice("center", center, CENTERS)
        pair = mechanism.tracing_pair(game)
        target = mechanism.target
        if center == "population":
            attack = cls(target, mechanism.population, game=game)
        elif center == "learned":
            attack = cls(target, game=game)
        else:
            count = check_integer("references", references, minimum=1)
            attack = cls(target, reference=mechanism.reference_records(count), game=game)
        attack.pair = pair
        return attack

    @property
    def direction(self) -> np.ndarray:
        """``v = z - r_bar`` (reference variant) or ``z - p_hat``; needs ``p_hat`` (fit first)."""
        if self.reference is not None:
            return self.target - self.reference.mean(axis=0)
        return self.target - self._center()

    def _center(self) -> np.ndarray:
        if self.center is None:
            raise ValueError(
                "Tracing learns the population mean from the selection sample: call "
                "fit(outputs_d, outputs_d_prime) first, or give population_mean"
            )
        return self.center

    def fit(self, outputs_d: np.ndarray, outputs_d_prime: np.ndarray) -> Tracing:
        """Learn ``p_hat`` as the mean of all selection releases (both datasets); a no-op when
        ``p_hat`` was given."""
        if not self.learns:
            return self
        d = self.target.size
        y = np.concatenate(
            [_releases("outputs_d", outputs_d, d), _releases("outputs_d_prime", outputs_d_prime, d)]
        )
        if y.shape[0] == 0:
            raise ValueError("fit needs at least one selection output")
        if not np.isfinite(y).all():
            raise ValueError("selection outputs must be finite to learn the population mean")
        self.center = y.mean(axis=0)
        return self

    def score(self, outputs: np.ndarray) -> np.ndarray:
        """``<y - p_hat, v>`` for every release (axis 0 = trials), shape ``(size,)``."""
        y = _releases("outputs", outputs, self.target.size)
        v = self.direction
        return y @ v - float(self._center() @ v)

    def score_moments(self, mechanism: NoisyMean, dataset: object) -> tuple[float, float]:
        """Exact mean and variance of the score on ``dataset``: ``sum_j v_j (E y_j - p_hat_j)``
        and ``sum_j v_j^2 Var y_j`` (coordinates of the release are independent;
        :meth:`~dpaudit.mechanisms.NoisyMean.release_moments`)."""
        mean, var = mechanism.release_moments(dataset)
        if mean.size != self.target.size:
            raise ValueError(
                f"mechanism releases {mean.size} coordinates, the target has {self.target.size}"
            )
        v = self.direction
        return float(v @ (mean - self._center())), float(np.square(v) @ var)

    def predicted_mu(self, mechanism: NoisyMean, pair: NeighbouringPair) -> float:
        """``(E_Q T - E_P T) / sqrt((Var_P T + Var_Q T) / 2)`` on ``pair``: exactly the ``mu``
        of the score's trade-off function ``G_mu`` for Gaussian noise and fixed datasets (equal
        variances, normal scores; module docstring), a normal approximation otherwise."""
        m0, v0 = self.score_moments(mechanism, pair.d)
        m1, v1 = self.score_moments(mechanism, pair.d_prime)
        return float((m1 - m0) / np.sqrt(0.5 * (v0 + v1)))

    def params(self) -> dict[str, Any]:
        """Game, variant, and whether ``p_hat`` is given or learned (arrays are summarised)."""
        return {
            "game": self.game,
            "d": int(self.target.size),
            "variant": "reference" if self.reference is not None else "population",
            "references": 0 if self.reference is None else int(self.reference.shape[0]),
            "center": "learned" if self.learns else "given",
        }

    @property
    def name(self) -> str:
        """E.g. ``Tracing(game=fixed)``."""
        parts = [f"game={self.game}"] if self.game else []
        if self.reference is not None:
            parts.append(f"references={self.reference.shape[0]}")
        if self.learns:
            parts.append("learned center")
        return "Tracing" + (f"({', '.join(parts)})" if parts else "")
