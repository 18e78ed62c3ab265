"""The Monte Carlo engine, empirical trade-off curves, confidence bands, lower bounds, verdicts.

``dpaudit.audit(mechanism, pair, attack, trials=...)`` (:func:`dpaudit.audit.engine.audit`)
returns an :class:`~dpaudit.audit.result.AuditResult`. The package is callable: calling it calls
:func:`dpaudit.audit.engine.audit`, so the package and its main function share one name without
hiding each other (``import dpaudit.audit.grid as g`` works too; see
:class:`dpaudit._core.modules.CallableModule`).
"""

from dpaudit._core.modules import make_callable
from dpaudit.audit.confidence import (
    clopper_pearson_lower,
    clopper_pearson_upper,
    dkw_radius,
    empirical_bernstein_radius,
)
from dpaudit.audit.empirical import EmpiricalTradeoff
from dpaudit.audit.engine import audit
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
    "audit",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "dkw_radius",
    "empirical_bernstein_radius",
    "epsilon_from_errors",
    "mu_from_errors",
    "violation_margin",
]

make_callable(__name__, "audit")
