"""Names shared by a module and its main function: every import form works (callable modules,
dpaudit._core.modules), and the deprecated trade-off names warn and still work."""

from __future__ import annotations

import importlib
import types

import numpy as np
import pytest

import dpaudit as dpa
from dpaudit._core.modules import CallableModule, make_callable


def test_audit_is_the_package_and_runs_an_audit():
    import dpaudit.audit.grid as g

    assert isinstance(dpa.audit, types.ModuleType)
    assert g is importlib.import_module("dpaudit.audit.grid")
    assert dpa.audit.grid is g
    mech = dpa.mechanisms.Gaussian(sigma=1.0)
    pair = mech.worst_case_pair()
    via_package = dpa.audit(mech, pair, dpa.attacks.LikelihoodRatio(mech, pair), trials=2000)
    via_function = dpa.audit.engine.audit(
        mech, pair, dpa.attacks.LikelihoodRatio(mech, pair), trials=2000
    )
    assert via_package.epsilon_lower_bound(0.0) == via_function.epsilon_lower_bound(0.0)


def test_audit_import_forms():
    from dpaudit import audit
    from dpaudit.audit import audit as audit_function
    from dpaudit.audit.engine import audit as engine_audit

    assert audit is dpa.audit
    assert audit_function is engine_audit
    assert callable(audit)


def test_gdp_is_the_module_and_the_curve_constructor():
    import dpaudit.bounds.gdp as module
    from dpaudit.bounds import gdp
    from dpaudit.bounds.gdp import GDPTradeoff
    from dpaudit.bounds.gdp import gdp as function

    assert gdp is module is dpa.bounds.gdp
    alpha = np.linspace(0.0, 1.0, 11)
    for make in (gdp, module, function, dpa.bounds.gdp):
        curve = make(1.0)
        assert isinstance(curve, GDPTradeoff)
        assert np.array_equal(curve(alpha), function(1.0)(alpha))
    assert module.gdp_mu is dpa.bounds.gdp_mu


def test_make_callable_refuses_a_missing_function():
    module = types.ModuleType("dpaudit_test_module")
    import sys

    sys.modules[module.__name__] = module
    try:
        with pytest.raises(ValueError, match="function"):
            make_callable(module.__name__, "missing")
        module.main = lambda x: 2 * x
        make_callable(module.__name__, "main")
        assert isinstance(module, CallableModule)
        assert module(21) == 42
    finally:
        del sys.modules[module.__name__]


@pytest.mark.parametrize(
    ("old", "new", "args"),
    [
        ("laplace", "laplace_tradeoff", (1.0,)),
        ("randomized_response", "randomized_response_tradeoff", (1.0, 3)),
    ],
)
@pytest.mark.parametrize("home", ["dpaudit.bounds", "dpaudit.bounds.tradeoff"])
def test_deprecated_tradeoff_names_warn_and_work(home, old, new, args):
    module = importlib.import_module(home)
    with pytest.warns(DeprecationWarning, match=new):
        deprecated = getattr(module, old)
    assert deprecated is getattr(dpa.bounds, new)
    assert deprecated(*args)(0.3) == getattr(dpa.bounds, new)(*args)(0.3)


def test_tradeoff_and_pld_constructors_have_distinct_names():
    """``dpaudit.bounds`` exports no name that means a PLD in ``pld`` and a curve elsewhere."""
    from dpaudit.bounds import pld

    assert not {n for n in dpa.bounds.__all__ if n in pld.__all__ and n != "PLD"}
    with pytest.raises(AttributeError):
        dpa.bounds.no_such_name  # noqa: B018
