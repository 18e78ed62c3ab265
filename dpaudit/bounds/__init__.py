"""Theory only: trade-off curves, privacy loss distributions, RDP/zCDP and (eps, delta) theorems.

Every object here can produce a trade-off curve (``.tradeoff()``) and a privacy profile
(``.delta(eps)``, ``.epsilon(delta)``), so all theories meet on the (alpha, beta) plane::

    dpaudit.bounds.gdp(1.0)(alpha)             # mu-GDP trade-off curve
    dpaudit.bounds.approx_dp(1.0, 1e-5)(alpha) # (eps, delta)-DP trade-off curve
    dpaudit.bounds.pld.poisson_subsampled_gaussian(1.1, rate=0.01).self_compose(1000).epsilon(1e-5)

The sub-modules are ``tradeoff``, ``gaussian_dp``, ``pld``, ``rdp`` and ``composition``;
``dpaudit.bounds.gdp`` is the curve constructor ``gdp(mu)`` of ``gaussian_dp``, a plain function.
This package imports nothing of dpaudit but the plumbing in :mod:`dpaudit._core`.

Argument order: every function takes the mechanism's own parameters first (noise scale,
``sensitivity``, probability vectors, a base RDP curve) and the sampling ``rate`` as a
keyword-only argument (``rdp_poisson_subsampled_gaussian(sigma, rate=q)``,
``pld.poisson_subsampled_gaussian(sigma, rate=q)``), so that the two numbers can never be swapped
silently.
"""

from dpaudit.bounds import composition, gaussian_dp, pld, rdp, tradeoff
from dpaudit.bounds.composition import (
    AdvancedComposition,
    OptimalComposition,
    advanced_composition,
    amplify_by_subsampling,
    basic_composition,
    optimal_composition,
    zcdp_composition,
)
from dpaudit.bounds.gaussian_dp import (
    GDPTradeoff,
    berry_esseen,
    clt_mu_fixed,
    clt_mu_poisson,
    gdp,
    gdp_clt,
    gdp_delta,
    gdp_epsilon,
    gdp_mu,
)
from dpaudit.bounds.pld import PLD
from dpaudit.bounds.rdp import ZCDP, ApproxZCDP, RDPCurve, zcdp_from_pure_dp
from dpaudit.bounds.tradeoff import (
    KINDS,
    PiecewiseLinearTradeoff,
    TradeoffCurve,
    approx_dp,
    compose,
    deprecated_name,
    from_delta,
    from_discrete,
    from_points,
    identity,
    laplace_tradeoff,
    randomized_response_tradeoff,
    subsample,
    symmetrize,
)

__all__ = [
    "KINDS",
    "PLD",
    "ZCDP",
    "ApproxZCDP",
    "AdvancedComposition",
    "GDPTradeoff",
    "OptimalComposition",
    "PiecewiseLinearTradeoff",
    "RDPCurve",
    "TradeoffCurve",
    "advanced_composition",
    "amplify_by_subsampling",
    "approx_dp",
    "basic_composition",
    "berry_esseen",
    "clt_mu_fixed",
    "clt_mu_poisson",
    "compose",
    "composition",
    "gaussian_dp",
    "from_delta",
    "from_discrete",
    "from_points",
    "gdp",
    "gdp_clt",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu",
    "identity",
    "laplace_tradeoff",
    "optimal_composition",
    "pld",
    "randomized_response_tradeoff",
    "rdp",
    "subsample",
    "symmetrize",
    "tradeoff",
    "zcdp_composition",
    "zcdp_from_pure_dp",
]


def __getattr__(name: str) -> object:
    """``laplace`` and ``randomized_response``: deprecated names of the trade-off curves."""
    return deprecated_name(__name__, name)
