"""OpenDP's further measurements: each claim read from OpenDP's privacy map, pinned against the
documented formula computed here, and a small battery run with no false alarm."""

from __future__ import annotations

import math

import pytest

from dpaudit.bounds.rdp import ZCDP
from dpaudit.libraries import run_battery

pytest.importorskip("opendp")
from dpaudit.libraries import opendp as battery  # noqa: E402


def _claim(function, relation="replace_one"):
    return function.claims[relation].table


def test_noisy_max_and_top_k_claims_follow_the_exponential_and_gumbel_formulas():
    # Scores under the l-infinity distance at d_in = 1: report noisy max with exponential noise
    # of scale s is 2/s-DP (not monotone); with Gumbel noise, (2/s)^2/8-zCDP; top-k composes k.
    scale = 2.0
    assert _claim(battery.noisy_max("max_divergence", scale=scale))["eps"] == pytest.approx(1.0)
    assert _claim(battery.noisy_max("zero_concentrated_divergence", scale=scale))[
        "rho"
    ] == pytest.approx((2 / scale) ** 2 / 8)
    top = battery.noisy_max("max_divergence", scale=scale, top=2)
    assert _claim(top)["eps"] == pytest.approx(2.0)


def test_dispersion_count_and_response_claims():
    # Sized data of n records in [L, U], replace-one (d_in = 2): the variance (ddof 1) moves by
    # at most (U - L)^2 / n, the sum of squared deviations by (U - L)^2 (n - 1) / n.
    n, scale = 10, 0.5
    variance = battery.dispersion("variance", "max_divergence", scale=scale, bounds=(0.0, 2.0))
    assert _claim(variance)["eps"] == pytest.approx(4 / n / scale, rel=1e-6)
    squares = battery.dispersion("sum_of_squared_deviations", "max_divergence", scale=scale)
    assert _claim(squares)["eps"] == pytest.approx((n - 1) / n / scale, rel=1e-6)
    assert set(variance.claims) == {"replace_one"}
    count = battery.count("zero_concentrated_divergence", scale=2.0)
    assert _claim(count, "add_remove")["rho"] == pytest.approx(1 / (2 * 4.0))
    response = battery.randomized_response_bool(prob=0.8)
    assert _claim(response)["eps"] == pytest.approx(math.log(0.8 / 0.2))


def test_the_approximate_measures_claim_opendps_conversion():
    laplace = _claim(battery.approximate("laplace", scale=2.0))
    assert (laplace["eps"], laplace["delta"]) == pytest.approx((0.5, 0.0))
    gaussian = _claim(battery.approximate("gaussian", scale=1.0, delta=1e-5))
    # rho = 1 / (2 scale^2) = 0.5 converted to (eps, 1e-5)-DP (Canonne, Kamath and Steinke 2020)
    assert gaussian["delta"] == 1e-5
    assert gaussian["eps"] == pytest.approx(ZCDP(0.5).epsilon(1e-5), rel=1e-3)
    threshold = _claim(battery.laplace_threshold(scale=1.0, threshold=10), "add_remove")
    assert threshold["eps"] == pytest.approx(1.0) and 0 < threshold["delta"] < 1e-3


def test_a_small_battery_of_the_new_measurements_raises_no_false_alarm():
    names = [
        battery.noisy_max("max_divergence").name,
        battery.private_quantile("zero_concentrated_divergence").name,
        battery.laplace_threshold().name,
        battery.count("max_divergence").name,
    ]
    # Correct functions at a family-wise level of 0.05: a false alarm has probability <= 0.05.
    assert not run_battery("opendp", trials=400, quick=True, functions=names).refuted
