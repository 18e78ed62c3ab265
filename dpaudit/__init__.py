"""dpaudit: empirical privacy auditing by Monte Carlo.

Run a mechanism many times on two neighbouring datasets, score every output with an attack, turn
the scores into an empirical trade-off curve with a confidence band, and compare it with the
theoretical f-DP, Renyi DP and (eps, delta) curves of the same mechanism.
"""

from importlib.metadata import PackageNotFoundError, version

from dpaudit import attacks, bounds, mechanisms

try:
    __version__ = version("dpaudit")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__", "attacks", "bounds", "mechanisms"]
