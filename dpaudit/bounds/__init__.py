"""Theory only: trade-off curves, privacy loss distributions, RDP/zCDP and (eps, delta) theorems.

Every object here can produce a trade-off curve (``.tradeoff()``) and a privacy profile
(``.delta(eps)``, ``.epsilon(delta)``), so all theories meet on the (alpha, beta) plane::

    dpaudit.bounds.gdp(1.0)(alpha)             # mu-GDP trade-off curve
    dpaudit.bounds.approx_dp(1.0, 1e-5)(alpha) # (eps, delta)-DP trade-off curve
    dpaudit.bounds.pld.poisson_subsampled_gaussian(1.1, rate=0.01).self_compose(1000).epsilon(1e-5)

The sub-modules are ``tradeoff``, ``gdp`` (imported as ``from dpaudit.bounds.gdp import ...``:
the name ``dpaudit.bounds.gdp`` itself is the curve constructor), ``pld``, ``rdp`` and
``composition``. This package imports nothing else of dpaudit.

Argument order: every function takes the mechanism's own parameters first (noise scale,
``sensitivity``, probability vectors, a base RDP curve) and the sampling ``rate`` as a
keyword-only argument (``rdp_poisson_subsampled_gaussian(sigma, rate=q)``,
``pld.poisson_subsampled_gaussian(sigma, rate=q)``), so that the two numbers can never be swapped
silently.
"""

from dpaudit.bounds import composition, pld, rdp, tradeoff
from dpaudit.bounds.composition import (
    AdvancedComposition,
    OptimalComposition,
    advanced_composition,
    amplify_by_subsampling,
    basic_composition,
    optimal_composition,
    zcdp_composition,
)
from dpaudit.bounds.gdp import (
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
from dpaudit.bounds.rdp import ZCDP, RDPCurve, zcdp_from_pure_dp
from dpaudit.bounds.tradeoff import (
    KINDS,
    PiecewiseLinearTradeoff,
    TradeoffCurve,
    approx_dp,
    compose,
    from_delta,
    from_discrete,
    from_points,
    identity,
    laplace,
    randomized_response,
    subsample,
    symmetrize,
)

__all__ = [
    "KINDS",
    "PLD",
    "ZCDP",
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
    "from_delta",
    "from_discrete",
    "from_points",
    "gdp",
    "gdp_clt",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu",
    "identity",
    "laplace",
    "optimal_composition",
    "pld",
    "randomized_response",
    "rdp",
    "subsample",
    "symmetrize",
    "tradeoff",
    "zcdp_composition",
    "zcdp_from_pure_dp",
]
