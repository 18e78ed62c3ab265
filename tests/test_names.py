"""Public names are plain functions and plain modules: the deprecated call of the engine's package
warns and still works, and the deprecated trade-off names warn and still work."""

from __future__ import annotations

import importlib
import inspect
import types

import numpy as np
import pytest

import dpaudit as dpa
from dpaudit._core.modules import CallableModule, make_callable


def test_audit_is_a_plain_package_and_audit_mechanism_a_plain_function():
    import dpaudit.audit.grid as g

    assert isinstance(dpa.audit, types.ModuleType)
    assert g is importlib.import_module("dpaudit.audit.grid")
    assert dpa.audit.grid is g
    assert isinstance(dpa.audit_mechanism, types.FunctionType)
    assert dpa.audit_mechanism is dpa.audit.engine.audit_mechanism is dpa.audit.audit_mechanism
    params = inspect.signature(dpa.audit_mechanism).parameters
    assert list(params)[:3] == ["mechanism", "pair", "attack"] and "trials" in params


def test_calling_the_package_is_deprecated_and_still_audits():
    mech = dpa.mechanisms.Gaussian(sigma=1.0)
    pair = mech.worst_case_pair()
    attack = dpa.attacks.LikelihoodRatio(mech, pair)
    with pytest.warns(DeprecationWarning, match="dpaudit.audit_mechanism"):
        old = dpa.audit(mech, pair, attack, trials=2000)
    new = dpa.audit_mechanism(mech, pair, attack, trials=2000)
    assert old.epsilon_lower_bound(0.0) == new.epsilon_lower_bound(0.0)


def test_gdp_is_a_plain_function_beside_its_module():
    import dpaudit.bounds.gaussian_dp as module
    from dpaudit.bounds import gdp
    from dpaudit.bounds.gaussian_dp import GDPTradeoff

    assert isinstance(gdp, types.FunctionType)
    assert gdp is module.gdp is dpa.bounds.gdp
    assert list(inspect.signature(gdp).parameters) == ["mu", "kind"]
    alpha = np.linspace(0.0, 1.0, 11)
    curve = gdp(1.0)
    assert isinstance(curve, GDPTradeoff)
    assert np.array_equal(curve(alpha), module.gdp(1.0)(alpha))
    assert module.gdp_mu is dpa.bounds.gdp_mu


def test_the_package_ships_its_type_information():
    from importlib import resources

    assert resources.files("dpaudit").joinpath("py.typed").is_file()


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
        with pytest.warns(DeprecationWarning, match="main"):
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
