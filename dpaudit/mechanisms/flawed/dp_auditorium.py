"""Mechanisms re-implemented from the test material of Google's DP-Auditorium
(github.com/google/differential-privacy, ``python/dp_auditorium/dp_auditorium/mechanisms/``),
audited there as black boxes. Each class names its source file and the flaw it has."""

from __future__ import annotations

import math

import numpy as np

from dpaudit.mechanisms.base import NeighbouringPair
from dpaudit.mechanisms.flawed.base import FlawedMechanism
from dpaudit.mechanisms.flawed.sparse_vector import SparseVectorLeeClifton

__all__ = [
    "DP_AUDITORIUM",
    "DPAuditoriumMeanNoisyScale",
    "DPAuditoriumSVTRevealRecords",
    "DPAuditoriumNoisyMaxGumbel",
]


# ------------------------------------------------------------------ DP-Auditorium test material
#
# Mechanisms re-implemented from the test material of Google's DP-Auditorium
# (github.com/google/differential-privacy, python/dp_auditorium/dp_auditorium/mechanisms/),
# audited there as black boxes. Each class names its source file and the flaw it has.


class DPAuditoriumMeanNoisyScale(FlawedMechanism):
    """Mean of records clipped to ``[0, 1]`` whose noise scale is computed from a *noisy count*
    and clipped below at ``1e-12`` (DP-Auditorium, ``mechanisms/mean.py``, ``MeanMechanism`` with
    noised counts for the noise scale). Half the budget buys ``n~ = n + Lap(2/eps)``, the other
    half ``Lap(s)`` with ``s = max(1e-12, 2 / (eps n~))`` added to ``sum / n``.

    Flaw: when ``n~ <= 0`` the scale becomes ``1e-12`` and the exact mean is released. With
    ``D = [1]`` and ``D' = [1, 0]`` (add one record): ``P_D(|y - 1| <= w) >= P(Lap(2/eps) <= -1)
    = e^(-eps/2) / 2`` (the ``Lap(1e-12)`` noise exceeds ``w = 1e-9`` with probability
    ``e^-1000``), while under ``D'`` the output is ``1/2 + Lap(s)`` and a Laplace density at
    distance ``1/2 - w`` is at most ``1 / (2 e (1/2 - w))`` whatever ``s``, so
    ``P_D'(|y - 1| <= w) <= w / (e (1/2 - w))``. The ratio proves ``eps >= log(e^(1 - eps/2)
    (1/2 - w) / (2 w))`` (``19.8`` at ``eps = 1``); no finite upper bound is known.
    Dataset: the records (any length); neighbours add or remove one record.
    """

    registry_name = "dpa_mean_noisy_scale"
    citation = "DP-Auditorium, python/dp_auditorium/dp_auditorium/mechanisms/mean.py"
    adjacency = "add_remove"
    relation = "add_remove"
    default_k = 1
    #: The clipped noise scale of the source.
    floor = 1e-12

    def epsilon_bounds(self) -> tuple[float, float]:
        w = 1e-9
        lower = 1.0 - self.eps / 2.0 + math.log((0.5 - w) / (2.0 * w))
        return (lower, math.inf)

    def _answers(self, dataset: object) -> np.ndarray:
        try:
            x = np.asarray(dataset, dtype=float)
        except (TypeError, ValueError) as exc:
            kind = type(dataset).__name__
            raise ValueError(f"dataset must be a vector of records, got {kind}") from exc
        if x.ndim != 1 or x.size < 1 or not np.isfinite(x).all():
            raise ValueError(
                f"dataset must be a non-empty vector of finite records for {self.name}"
            )
        return np.clip(x, 0.0, 1.0)

    def _sample(self, a, size, rng):
        n = a.size
        noisy_count = n + rng.laplace(0.0, 2.0 / self.eps, size)
        with np.errstate(divide="ignore"):
            scale = np.maximum(self.floor, 2.0 / (self.eps * noisy_count))
        return a.sum() / n + rng.laplace(0.0, 1.0, size) * scale

    def worst_case_pair(self) -> NeighbouringPair:
        """``[1]`` vs ``[1, 0]``: a second record, and a count small enough to go negative."""
        return NeighbouringPair(
            np.array([1.0]), np.array([1.0, 0.0]), "add_remove", "one record vs one added"
        )


class DPAuditoriumSVTRevealRecords(SparseVectorLeeClifton):
    """Sparse vector with binary answers, threshold noise ``Lap(4/eps)`` and query noise
    ``Lap(4/(3 eps))`` whatever the cutoff ``c`` (DP-Auditorium,
    ``mechanisms/sparse_vector_technique.py``, ``SVT4``; Lyu et al. 2017, Algorithm 4), on
    DP-Auditorium's "reveal records" query: the first ``k - 1`` queries answer the last record,
    the last query the record before it, so the records ``[0, 1]`` and ``[0, 1, 0]`` (one record
    added) give the answers ``[1, ..., 1, 0]`` and ``[0, ..., 0, 1]``.

    Flaw: the stated ``eps`` guarantee does not hold, not even for ``c = 1``: Lyu et al. 2017
    prove ``((1 + 6c)/4) eps`` (``1.75 eps`` for ``c = 1``), the upper bound used here. No lower
    bound is proved here; audits certify more than ``eps``.
    """

    registry_name = "dpa_svt_reveal_records"
    citation = (
        "DP-Auditorium, python/dp_auditorium/dp_auditorium/mechanisms/sparse_vector_technique.py"
    )
    default_threshold = 0.5
    proven_lower: dict = {}

    def worst_case_pair(self) -> NeighbouringPair:
        """``[1, ..., 1, 0]`` vs ``[0, ..., 0, 1]`` (the reveal-records query on ``[0, 1]`` and
        ``[0, 1, 0]``)."""
        k = self.k
        return self._pair(
            [1.0] * (k - 1) + [0.0], [0.0] * (k - 1) + [1.0], "reveal-records query, one added"
        )


class DPAuditoriumNoisyMaxGumbel(FlawedMechanism):
    """Noisy max with Gumbel noise: the index of the largest ``count_i + Gumbel(2/eps)``
    (DP-Auditorium, ``mechanisms/noisy_max.py``, ``NoisyMaxMechanism``). Correct: it samples
    index ``i`` with probability proportional to ``exp(eps count_i / 2)`` (the exponential
    mechanism); one record raises one count by one, which multiplies one weight by ``e^(eps/2)``
    and the normaliser by at most that, so every probability changes by at most ``e^(eps/2)``:
    the true ``eps`` is at most ``eps/2``. Counts as the dataset, histogram neighbours.
    """

    registry_name = "dpa_noisy_max_gumbel"
    citation = "DP-Auditorium, python/dp_auditorium/dp_auditorium/mechanisms/noisy_max.py"
    adjacency = "l1"

    def epsilon_bounds(self) -> tuple[float, float]:
        return (0.0, self.eps / 2.0)

    def _sample(self, a, size, rng):
        noisy = a + rng.gumbel(0.0, 2.0 / self.eps, (size, a.size))
        return np.argmax(noisy, axis=1)

    def worst_case_pair(self) -> NeighbouringPair:
        """All counts zero vs the first count one."""
        d_prime = [1.0] + [0.0] * (self.k - 1)
        return self._pair([0.0] * self.k, d_prime, "one record added to the first count")


#: The mechanisms of the block above (DP-Auditorium's test material).
DP_AUDITORIUM = (
    DPAuditoriumMeanNoisyScale,
    DPAuditoriumSVTRevealRecords,
    DPAuditoriumNoisyMaxGumbel,
)
