"""The top-level names of the public contract (docs/architecture.md#contracts)."""

import importlib
import subprocess
import sys

import pytest

import dpaudit as dpa


def test_contract_names_resolve():
    assert callable(dpa.audit)
    assert callable(dpa.reports.write)
    assert callable(dpa.bounds.gdp) and callable(dpa.bounds.approx_dp)
    assert dpa.AuditResult is importlib.import_module("dpaudit.audit.result").AuditResult


#: Slow imports that only some commands and functions need: each is imported where it is used.
LAZY = (
    "matplotlib",
    "pandas",
    "scipy.stats",
    "scipy.optimize",
    "scipy.integrate",
    "joblib",
    "tqdm",
    "dask",
    "torch",
    "sklearn",
    "jinja2",
)


@pytest.mark.parametrize("module", ["dpaudit", "dpaudit.cli"])
def test_import_loads_no_slow_dependency(module):
    """``import dpaudit`` and the command's ``import dpaudit.cli`` (all of the start-up before
    the first progress line) load none of :data:`LAZY`."""
    code = f"import sys, {module}; print(sorted(m for m in {LAZY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_unknown_attribute_is_an_attribute_error():
    try:
        dpa.no_such_name  # noqa: B018
    except AttributeError as err:
        assert "no_such_name" in str(err)
    else:
        raise AssertionError("expected AttributeError")
