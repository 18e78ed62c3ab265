"""Score functions: larger means "the output came from D_prime".

- :class:`LikelihoodRatio`: the Neyman-Pearson optimal score from the mechanism's exact density.
- :class:`Threshold`: the output itself, a coordinate or a fixed linear projection of it.
- :class:`Learned`, :class:`DeltaLeak`: a log-likelihood ratio learned from samples, and that
  score plus tests on exact output events (the default for mechanisms without a density).
- :class:`MembershipInference`, :class:`Tracing`: attacks that learn from a selection sample.
"""

from dpaudit.attacks.base import Attack
from dpaudit.attacks.delta_leak import DeltaLeak
from dpaudit.attacks.learned import Learned
from dpaudit.attacks.likelihood_ratio import LikelihoodRatio
from dpaudit.attacks.membership import MembershipInference
from dpaudit.attacks.threshold import Threshold
from dpaudit.attacks.tracing import Tracing

__all__ = [
    "Attack",
    "DeltaLeak",
    "Learned",
    "LikelihoodRatio",
    "MembershipInference",
    "Threshold",
    "Tracing",
]
