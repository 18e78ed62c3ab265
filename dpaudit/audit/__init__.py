"""The Monte Carlo engine, empirical trade-off curves, confidence bands, lower bounds, verdicts.

The audit of a mechanism is :func:`dpaudit.audit_mechanism`
(:func:`dpaudit.audit.engine.audit_mechanism`), beside :func:`dpaudit.audit_scores`,
:func:`dpaudit.audit_one_run` and
:func:`dpaudit.audit_accountant`; each returns a result object of this package. Calling the
package itself, ``dpaudit.audit(mechanism, ...)``, still runs :func:`audit_mechanism` for one
release and warns (:class:`dpaudit._core.modules.CallableModule`).
"""

from dpaudit._core.modules import make_callable
from dpaudit.audit.confidence import (
    clopper_pearson_lower,
    clopper_pearson_upper,
    dkw_radius,
    empirical_bernstein_radius,
)
from dpaudit.audit.empirical import EmpiricalTradeoff
from dpaudit.audit.engine import audit_mechanism
from dpaudit.audit.grid import ScoreGrid
from dpaudit.audit.lower_bounds import epsilon_from_errors, mu_from_errors, violation_margin
from dpaudit.audit.pair_search import PairSearchResult, answer_pairs, record_pairs, search_pairs
from dpaudit.audit.privacy_loss import PrivacyLossStatistics
from dpaudit.audit.result import AuditResult
from dpaudit.audit.strategies import STRATEGIES

__all__ = [
    "PairSearchResult",
    "answer_pairs",
    "record_pairs",
    "search_pairs",
    "STRATEGIES",
    "AuditResult",
    "EmpiricalTradeoff",
    "PrivacyLossStatistics",
    "ScoreGrid",
    "audit_mechanism",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "dkw_radius",
    "empirical_bernstein_radius",
    "epsilon_from_errors",
    "mu_from_errors",
    "violation_margin",
]

make_callable(__name__, "audit_mechanism")
