"""One small audit, and its record, shared by the focused tests of the report modules."""

from __future__ import annotations

import pytest

import dpaudit as dpa
from dpaudit.reports.records import build_record


@pytest.fixture(scope="package")
def small_result():
    mech = dpa.mechanisms.Gaussian(sigma=1.0)
    pair = mech.worst_case_pair()
    return dpa.audit_mechanism(
        mech, pair, dpa.attacks.LikelihoodRatio(mech, pair), trials=4000, seed=3
    )


@pytest.fixture(scope="package")
def violated_record(small_result):
    """A record whose claim (0.2-GDP, far below the truth mu = 1) the audit refutes."""
    return build_record(
        small_result, name="gauss|*_name", claim=dpa.bounds.gdp(0.2), expect="violated"
    )
