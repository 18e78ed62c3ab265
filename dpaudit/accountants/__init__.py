"""Claims about privacy: what a library's accountant (or anyone) says ``delta(eps)`` is.

- :mod:`dpaudit.accountants.claims`: :class:`Claim`, a frozen value object.
- :mod:`dpaudit.accountants.convert`: :func:`as_claim`, anything that states ``delta(eps)`` as a
  claim.
- :mod:`dpaudit.accountants.libraries`: third-party accountants (dp-accounting, prv-accountant,
  Opacus, autodp) asked about a dpaudit mechanism: ``claim(name, mechanism)``.

The accountant audit that checks claims against the Monte Carlo privacy loss is
:func:`dpaudit.audit_accountant` (:mod:`dpaudit.audit.accountant`); its report is
:func:`dpaudit.reports.accountants.write_accountant_report`.
"""

from dpaudit.accountants.claims import Claim
from dpaudit.accountants.convert import as_claim
from dpaudit.accountants.libraries import (
    NAMES,
    PACKAGES,
    AccountantUnavailable,
    claim,
    installed,
)

__all__ = ["NAMES", "PACKAGES", "AccountantUnavailable", "Claim", "as_claim", "claim", "installed"]
