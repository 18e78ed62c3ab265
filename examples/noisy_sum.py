"""A release function as an implementer might write one: the sum of the records plus Laplace
noise of scale 1 (1-DP when one record changes by at most 1). The spec
``blackbox-pair-from-files.toml`` beside this file audits it; ``callable = "noisy_sum:release"``
finds this module there without ``PYTHONPATH``."""

import numpy as np


def release(dataset: np.ndarray, rng: np.random.Generator) -> float:
    """One noisy sum of ``dataset``, with all randomness drawn from ``rng``."""
    return float(np.sum(dataset)) + rng.laplace(0.0, 1.0)
