"""The top-level names of the public contract (docs/architecture.md#contracts)."""

import importlib
import subprocess
import sys

import pytest

import dpaudit as dpa
from dpaudit.cli import LAZY_IMPORTS


def test_contract_names_resolve():
    assert callable(dpa.audit)
    assert callable(dpa.reports.write)
    assert callable(dpa.bounds.gdp) and callable(dpa.bounds.approx_dp)
    assert dpa.AuditResult is importlib.import_module("dpaudit.audit.result").AuditResult


@pytest.mark.parametrize("module", ["dpaudit", "dpaudit.cli"])
def test_import_loads_no_slow_dependency(module):
    """``import dpaudit`` and the command's ``import dpaudit.cli`` (all of the start-up before
    the first progress line) load none of :data:`dpaudit.cli.LAZY_IMPORTS`."""
    code = f"import sys, {module}; print(sorted(m for m in {LAZY_IMPORTS!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_unknown_attribute_is_an_attribute_error():
    try:
        dpa.no_such_name  # noqa: B018
    except AttributeError as err:
        assert "no_such_name" in str(err)
    else:
        raise AssertionError("expected AttributeError")
