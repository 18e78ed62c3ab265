"""dpaudit: empirical privacy auditing by Monte Carlo.

Run a mechanism many times on two neighbouring datasets, score every output with an attack, turn
the scores into an empirical trade-off curve with a confidence band, and compare it with the
theoretical f-DP, Renyi DP and (eps, delta) curves of the same mechanism.
"""

from importlib.metadata import PackageNotFoundError, version

from dpaudit import attacks, bounds, mechanisms
from dpaudit.audit.accountant import audit_accountant
from dpaudit.audit.engine import audit as _audit_function
from dpaudit.audit.one_run import OneRunResult, audit_one_run, simulate_one_run
from dpaudit.audit.result import AuditResult
from dpaudit.audit.scores import audit_scores

# ``dpaudit.audit`` is the function. The sub-package of the same name stays importable through
# sys.modules with ``from dpaudit.audit.<module> import <name>`` (not ``import ... as``, which
# resolves attributes of the function).
audit = _audit_function

try:
    __version__ = version("dpaudit")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"


def __getattr__(name: str) -> object:
    """Import ``dpaudit.reports`` on first use: it loads matplotlib, which audits do not need."""
    if name == "reports":
        import importlib

        return importlib.import_module("dpaudit.reports")
    raise AttributeError(f"module 'dpaudit' has no attribute {name!r}")


__all__ = [
    "__version__",
    "AuditResult",
    "attacks",
    "audit",
    "audit_accountant",
    "audit_one_run",
    "audit_scores",
    "OneRunResult",
    "simulate_one_run",
    "bounds",
    "mechanisms",
    "reports",
]
