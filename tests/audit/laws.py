"""The true eps(1e-5) of the score and canary laws that the coverage tests draw from."""

from __future__ import annotations


def true_eps(law: str) -> float:
    """eps(1e-5) of ``law``: the Gaussian shift by 1 (``mu = 1``) from its exact curve; Laplace,
    randomized response and the clipped geometric are pure 1-DP (clipping is post-processing),
    so their eps(delta) is at most 1; the subsampled Gaussian (noise 0.5, rate 0.2) from its
    exact privacy-loss distribution."""
    from dpaudit.bounds.gaussian_dp import gdp_epsilon

    if law == "subsampled_gaussian":
        from dpaudit.mechanisms import Gaussian
        from dpaudit.mechanisms.subsampled import PoissonSubsampled

        return float(PoissonSubsampled(Gaussian(0.5), 0.2).epsilon(1e-5))
    return float(gdp_epsilon(1e-5, 1.0)) if law == "gaussian" else 1.0
