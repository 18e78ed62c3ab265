"""The top-level names of the public contract (docs/architecture.md#contracts)."""

import importlib
import subprocess
import sys

import dpaudit as dpa


def test_contract_names_resolve():
    assert callable(dpa.audit)
    assert callable(dpa.reports.write)
    assert callable(dpa.bounds.gdp) and callable(dpa.bounds.approx_dp)
    assert dpa.AuditResult is importlib.import_module("dpaudit.audit.result").AuditResult


def test_import_does_not_load_matplotlib():
    code = "import sys, dpaudit; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_unknown_attribute_is_an_attribute_error():
    try:
        dpa.no_such_name  # noqa: B018
    except AttributeError as err:
        assert "no_such_name" in str(err)
    else:
        raise AssertionError("expected AttributeError")
