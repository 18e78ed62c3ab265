"""Auditing accountants: a claimed ``delta(eps)`` against the Monte Carlo privacy loss.

An accountant (a library, a closed form, a table in a paper) claims that a mechanism is
``(eps, delta(eps))``-DP. When the mechanism's densities are known, its privacy loss
``L = log a(y)/b(y)`` can be sampled exactly, and on a neighbouring pair ``(D, D_prime)`` the
tight ``delta`` is the larger of the two hockey-stick divergences (docs/theory.md#conventions;
Steinke 2022, Proposition 7)::

    delta(eps) = max( E_{y~P} (1 - e^{eps - L_{P||Q}(y)})_+ ,
                      E_{y~Q} (1 - e^{eps - L_{Q||P}(y)})_+ ).

:func:`audit_accountant` samples both orders, bounds both expectations with confidence intervals
that hold simultaneously over an ``eps`` grid (Bonferroni), and flags the claim wherever the lower
bound exceeds it. No attack and no threshold search is involved.

Estimators (every bound is exact, i.e. valid for any number of samples):

- ``plain_bernstein``: the sample mean of ``X = (1 - e^{eps - L})_+ in [0, 1]`` under the order's
  own law, with empirical Bernstein bounds (Maurer & Pontil 2009, Theorem 4). Vacuous below
  ``delta ~ 20 / n``.
- ``plain_events``: staircases of events. With ``c_0 = 0 < c_1 < ... < c_m < 1`` and
  ``t_j = eps + log(1 / (1 - c_j))`` (so ``X = c_j`` at ``L = t_j``), ``X`` is non-decreasing in
  ``L``, hence ``sum_{j>=1} (c_j - c_{j-1}) 1{L > t_j} <= X`` and
  ``X <= sum_{j>=0} (c_{j+1} - c_j) 1{L > t_j}`` (``c_{m+1} = 1``), and Clopper-Pearson bounds
  on the event probabilities ``P(L > t_j)`` (Bonferroni over ``j``) bound ``delta``.
  Informative down to ``delta ~ 10 / n``.
- ``importance_bernstein``: samples from a defensive mixture of exponentially tilted laws
  (:mod:`dpaudit.audit.importance`; half of the samples from the order's own law, which also
  feed the two plain estimators), weighted by the likelihood ratio. On every sample the weighted
  summand is at most ``B(eps)``, the Renyi-DP conversion bound of the best tilt divided by its
  mixture weight, so empirical Bernstein bounds on ``summand / B`` are exact. Its relative
  precision depends on ``B / delta``, not on ``delta``: values far below ``1 / n`` are checked.

The one-sided error probability ``1 - confidence`` is split equally over the ``eps`` grid, the
two orders, the two sides and the estimators of each order; each order's interval is the
intersection of its estimators' intervals. With probability at least ``confidence`` every
interval holds at once, so a claim is refuted only where it is wrong, simultaneously for every
claim checked against the same samples.
"""

from dpaudit.accountants.claims import Claim
from dpaudit.accountants.convert import as_claim
from dpaudit.audit.accountant.estimators import ESTIMATORS, ORDERS, STAIRCASE, DeltaBounds
from dpaudit.audit.accountant.result import AccountantAudit, ClaimCheck
from dpaudit.audit.accountant.runner import audit_accountant
from dpaudit.audit.accountant.spec import AccountantAuditSpec, run_accountant_spec

__all__ = [
    "ORDERS",
    "ESTIMATORS",
    "STAIRCASE",
    "Claim",
    "as_claim",
    "ClaimCheck",
    "DeltaBounds",
    "AccountantAudit",
    "AccountantAuditSpec",
    "audit_accountant",
    "run_accountant_spec",
]
