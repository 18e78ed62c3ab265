"""dpaudit: empirical privacy auditing by Monte Carlo.

Run a mechanism many times on two neighbouring datasets, score every output with an attack, turn
the scores into an empirical trade-off curve with a confidence band, and compare it with the
theoretical f-DP, Renyi DP and (eps, delta) curves of the same mechanism.
"""

from dpaudit import attacks, audit, bounds, mechanisms, reports
from dpaudit._core.provenance import __version__
from dpaudit.audit.accountant import audit_accountant
from dpaudit.audit.engine import audit_mechanism
from dpaudit.audit.one_run import OneRunResult, audit_one_run, simulate_one_run
from dpaudit.audit.result import AuditResult
from dpaudit.audit.scores import audit_scores

# ``dpaudit.audit`` is the sub-package of the engine; calling it is a deprecated spelling of
# ``dpaudit.audit_mechanism`` (see dpaudit._core.modules). The slow dependencies of some of
# these (matplotlib, pandas, parts of scipy, joblib) are imported where they are used.

__all__ = [
    "__version__",
    "AuditResult",
    "attacks",
    "audit",
    "audit_accountant",
    "audit_mechanism",
    "audit_one_run",
    "audit_scores",
    "OneRunResult",
    "simulate_one_run",
    "bounds",
    "mechanisms",
    "reports",
]
