"""dpaudit.reports.accountants: the accountant report shares the audit reports' formats."""

from __future__ import annotations

import dpaudit as dpa
from dpaudit.audit.accountant import audit_accountant
from dpaudit.reports.accountants import accountant_table, delta_table, write_accountant_report


def test_accountant_report_uses_the_shared_number_format(tmp_path):
    result = audit_accountant(
        dpa.mechanisms.Gaussian(1.0),
        {"right": dpa.bounds.gdp(1.0), "wrong": dpa.bounds.gdp(0.5)},
        trials=4000,
        seed=0,
    )
    verdicts = accountant_table(result)
    assert set(verdicts["verdict"]) <= {"violated", "consistent"}
    assert len(delta_table(result)) == result.epsilons.size
    out = write_accountant_report([result], tmp_path / "report")
    readme = (out / "README.md").read_text()
    page = (out / "index.html").read_text()
    assert "—" in readme  # the consistent claim has no violation to show
    assert "| - |" not in readme and ">-<" not in page
    assert 'class="badge' in page  # the audit reports' verdict badges
