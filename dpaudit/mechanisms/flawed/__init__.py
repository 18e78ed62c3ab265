"""Deliberately flawed (and correct) mechanisms from the literature on detecting DP violations.

The benchmark of Ding et al. 2018 ("Detecting violations of differential privacy", CCS; StatDP)
and Bichsel et al. 2021 ("DP-Sniper", IEEE S&P): report-noisy-max and sparse-vector variants,
noisy histograms and prefix sums, plus Mironov's floating-point Laplace flaw (Mironov 2012, "On
significance of the least significant bits for differential privacy", CCS), bounded float sums
whose sensitivity is taken from the bounds (Casacuberta et al. 2022, "Widespread underestimation
of sensitivity in differentially private libraries and how to fix it", CCS) with their padded
remedy, and randomized-response variants. Each mechanism claims ``eps``-DP (the constructor's
``eps``); its true privacy is documented in :attr:`FlawedMechanism.epsilon_bounds`, proved in
the class docstring:

- ``(x, x)``: the true ``eps`` is exactly ``x``;
- ``(lower, upper)``: not known exactly; ``lower`` is proved by an explicit event (probabilities
  computed by adaptive quadrature of a one-dimensional integral, error below ``1e-9``), and
  ``upper`` by an argument in the docstring (``inf`` when none is known);
- correct mechanisms have ``upper <= eps``.

The dataset is the vector of true query answers (conventions in
:mod:`dpaudit.mechanisms.flawed.base`, beside the base class :class:`FlawedMechanism`). One module
per family: ``histograms``, ``noisy_max``, ``sparse_vector``, ``prefix_sums``, ``floating_point``
(Mironov's flaw), ``exact_values`` (exact answers on rare code paths, and the delta leaks),
``bounded_sums`` (Casacuberta et al.'s float sums), ``randomized_response``, ``dp_auditorium``
(re-implementations of DP-Auditorium's test material) and ``dpsgd`` (shuffled batches reported
with the Poisson accountant; its dataset is the records' clipped gradients). Every class is
importable from this package, which holds the catalogue: :data:`FLAWED` and :data:`PUBLISHED`.

:data:`FLAWED` maps the registry names (``dpaudit list``, spec kind ``flawed``) to the classes;
:func:`dpaudit.audit.benchmark.run_benchmark` audits all of them and lays the certified lower
bounds beside the true ``eps`` and the best published lower bounds (:data:`PUBLISHED`).
"""

from __future__ import annotations

from typing import Any

from dpaudit.mechanisms.flawed.base import FlawedMechanism, claimed_curve
from dpaudit.mechanisms.flawed.bounded_sums import BoundedFloatSum, BoundedFloatSumPadded
from dpaudit.mechanisms.flawed.dp_auditorium import (
    DP_AUDITORIUM,
    DPAuditoriumMeanNoisyScale,
    DPAuditoriumNoisyMaxGumbel,
    DPAuditoriumSVTRevealRecords,
)
from dpaudit.mechanisms.flawed.dpsgd import DPSGDShuffledClaimsPoisson
from dpaudit.mechanisms.flawed.exact_values import (
    DeltaLeakMechanism,
    LaplacePairExactCoordinate,
    LaplaceRareExactAnswer,
    LaplaceSkippedNoise,
    NoisyHistZeroBinUnnoised,
)
from dpaudit.mechanisms.flawed.floating_point import LaplaceFloat
from dpaudit.mechanisms.flawed.histograms import NoisyHist, NoisyHistWrongScale
from dpaudit.mechanisms.flawed.noisy_max import (
    ReportNoisyMax,
    ReportNoisyMaxExponential,
    ReportNoisyMaxExponentialValue,
    ReportNoisyMaxValue,
)
from dpaudit.mechanisms.flawed.prefix_sums import NoisyPrefixSums, PrefixSum
from dpaudit.mechanisms.flawed.randomized_response import (
    RandomizedResponseBinary,
    RandomizedResponseBinaryFormula,
)
from dpaudit.mechanisms.flawed.sparse_vector import (
    SparseVector,
    SparseVectorDworkRoth,
    SparseVectorLeeClifton,
    SparseVectorNoCutoff,
    SparseVectorNoThresholdNoise,
    SparseVectorOutputsNoisyValue,
    SparseVectorThresholdNoiseOnly,
)

__all__ = [
    "DP_AUDITORIUM",
    "FLAWED",
    "PUBLISHED",
    "BoundedFloatSum",
    "BoundedFloatSumPadded",
    "DPAuditoriumMeanNoisyScale",
    "DPAuditoriumNoisyMaxGumbel",
    "DPAuditoriumSVTRevealRecords",
    "DPSGDShuffledClaimsPoisson",
    "DeltaLeakMechanism",
    "FlawedMechanism",
    "LaplaceFloat",
    "LaplacePairExactCoordinate",
    "LaplaceRareExactAnswer",
    "LaplaceSkippedNoise",
    "NoisyHist",
    "NoisyHistWrongScale",
    "NoisyHistZeroBinUnnoised",
    "NoisyPrefixSums",
    "PrefixSum",
    "RandomizedResponseBinary",
    "RandomizedResponseBinaryFormula",
    "ReportNoisyMax",
    "ReportNoisyMaxExponential",
    "ReportNoisyMaxExponentialValue",
    "ReportNoisyMaxValue",
    "SparseVector",
    "SparseVectorDworkRoth",
    "SparseVectorLeeClifton",
    "SparseVectorNoCutoff",
    "SparseVectorNoThresholdNoise",
    "SparseVectorOutputsNoisyValue",
    "SparseVectorThresholdNoiseOnly",
    "claimed_curve",
    "flawed",
]


#: Registry name -> class (spec kind ``flawed``, ``dpaudit list``).
FLAWED: dict[str, type[FlawedMechanism]] = {
    cls.registry_name: cls
    for cls in (
        NoisyHist,
        NoisyHistWrongScale,
        ReportNoisyMax,
        ReportNoisyMaxExponential,
        ReportNoisyMaxValue,
        ReportNoisyMaxExponentialValue,
        SparseVector,
        SparseVectorDworkRoth,
        SparseVectorOutputsNoisyValue,
        SparseVectorLeeClifton,
        SparseVectorThresholdNoiseOnly,
        SparseVectorNoCutoff,
        SparseVectorNoThresholdNoise,
        PrefixSum,
        NoisyPrefixSums,
        LaplaceFloat,
        LaplaceSkippedNoise,
        BoundedFloatSum,
        BoundedFloatSumPadded,
        RandomizedResponseBinary,
        RandomizedResponseBinaryFormula,
        LaplaceRareExactAnswer,
        LaplacePairExactCoordinate,
        NoisyHistZeroBinUnnoised,
        *DP_AUDITORIUM,
        DPSGDShuffledClaimsPoisson,
    )
}

#: Best published lower bounds on ``eps`` at claimed ``eps = 0.1`` and the default sizes, with
#: their source: the reference results released with Bichsel et al. 2021 (DP-Sniper,
#: ``eval_sp2021/reference-results``: DD-Search with logistic regression and with a neural
#: network, and StatDP-Fixed run by the same authors), best of the three. ``None``: not audited
#: there (or audited under another neighbouring notion).
PUBLISHED: dict[str, tuple[float, str] | None] = {
    "noisy_hist": (0.0978, "DP-Sniper (logistic regression)"),
    "noisy_hist_wrong_scale": (9.717, "StatDP-Fixed, run in the DP-Sniper evaluation"),
    "report_noisy_max": (0.0925, "DP-Sniper (neural network)"),
    "report_noisy_max_exponential": (0.0996, "StatDP-Fixed, run in the DP-Sniper evaluation"),
    "report_noisy_max_value": (0.2488, "DP-Sniper (neural network)"),
    "report_noisy_max_exponential_value": (0.3534, "DP-Sniper (neural network)"),
    "svt": (0.0858, "DP-Sniper (logistic regression)"),
    "svt_dwork_roth": None,
    "svt_outputs_noisy_value": (0.1822, "DP-Sniper (neural network)"),
    "svt_lee_clifton": (0.1709, "StatDP-Fixed, run in the DP-Sniper evaluation"),
    "svt_threshold_noise_only": (14.31, "StatDP-Fixed, run in the DP-Sniper evaluation"),
    "svt_no_cutoff": (0.3220, "StatDP-Fixed, run in the DP-Sniper evaluation"),
    "svt_no_threshold_noise": None,
    "prefix_sum": None,
    "noisy_prefix_sums": None,
    "laplace_float": (0.2521, "DP-Sniper (neural network on bit patterns)"),
    "laplace_skipped_noise": None,
    "bounded_float_sum": None,
    "bounded_float_sum_padded": None,
    "randomized_response": None,
    "randomized_response_binary_formula": None,
    "laplace_rare_exact_answer": None,
    "laplace_pair_exact_coordinate": None,
    "noisy_hist_zero_bin_unnoised": None,
    "dpa_mean_noisy_scale": None,
    "dpa_svt_reveal_records": None,
    "dpa_noisy_max_gumbel": None,
    "dpsgd_shuffled_claims_poisson": None,
}


def flawed(name: str, eps: float = 0.1, **params: Any) -> FlawedMechanism:
    """Build the flawed mechanism registered as ``name`` (see :data:`FLAWED`)."""
    if name not in FLAWED:
        raise ValueError(f"name must be one of {', '.join(map(repr, FLAWED))}; got {name!r}")
    try:
        return FLAWED[name](eps, **params)
    except TypeError as exc:
        raise ValueError(
            f"flawed mechanism {name!r} does not take {sorted(params)}: {exc}"
        ) from None
