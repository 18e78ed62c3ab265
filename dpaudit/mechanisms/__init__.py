"""What is audited: reference mechanisms and adapters for foreign code.

Reference mechanisms know their exact output density (``log_density``) and their theory
(``theory_methods``; ``epsilon``/``delta``/``tradeoff`` with ``method=...``):

- :class:`Gaussian`, :class:`Laplace`: noisy sum queries over clipped records (``add_remove``).
- :class:`RandomizedResponse`: k-ary randomized response per record (``replace_one``).
- :class:`PoissonSubsampled`, :class:`FixedSizeSubsampled`: any mechanism on a random subset
  (records left out are dropped from a sum, or replaced by a reference record).
- :class:`Composed`: independent runs of one or several mechanisms on the same dataset.
"""

from dpaudit.mechanisms.base import (
    METHOD_KINDS,
    RELATIONS,
    AdditiveNoiseMechanism,
    Mechanism,
    NeighbouringPair,
    PrivacyProfile,
)
from dpaudit.mechanisms.blackbox import BlackBox
from dpaudit.mechanisms.composed import Composed
from dpaudit.mechanisms.dpsgd import DPSGD
from dpaudit.mechanisms.flawed import FLAWED, FlawedMechanism
from dpaudit.mechanisms.gaussian import Gaussian
from dpaudit.mechanisms.laplace import Laplace
from dpaudit.mechanisms.noisy_mean import NoisyMean
from dpaudit.mechanisms.randomized_response import RandomizedResponse
from dpaudit.mechanisms.subsampled import FixedSizeSubsampled, PoissonSubsampled

__all__ = [
    "FLAWED",
    "METHOD_KINDS",
    "RELATIONS",
    "AdditiveNoiseMechanism",
    "BlackBox",
    "Composed",
    "DPSGD",
    "FixedSizeSubsampled",
    "FlawedMechanism",
    "Gaussian",
    "Laplace",
    "Mechanism",
    "NeighbouringPair",
    "NoisyMean",
    "PoissonSubsampled",
    "PrivacyProfile",
    "RandomizedResponse",
]
