"""Witnesses are frozen value objects that read as the dictionaries of results.json."""

from __future__ import annotations

import dataclasses
import json

import pytest

import dpaudit as dpa
from dpaudit._core.jsonvalues import to_json_value
from dpaudit.audit.witness import Witness


@pytest.fixture(scope="module")
def result():
    mech = dpa.mechanisms.Gaussian(sigma=1.0)
    pair = mech.worst_case_pair()
    return dpa.audit_mechanism(
        mech, pair, dpa.attacks.LikelihoodRatio(mech, pair), trials=20_000, seed=1
    )


def test_witness_is_frozen_and_reads_as_the_old_dictionary(result):
    w = result.epsilon_witness(1e-5)
    assert isinstance(w, Witness)
    with pytest.raises(dataclasses.FrozenInstanceError):
        w.epsilon = 0.0
    assert w["epsilon"] == w.epsilon == result.epsilon_lower_bound(1e-5)
    assert set(w) == {
        "threshold", "rule", "alpha", "beta", "alpha_upper", "beta_upper", "strategy",
        "candidates", "gamma_per_bound", "confidence", "delta", "epsilon", "order",
    }  # fmt: skip
    assert "mu" not in w and w.get("claim") is None
    with pytest.raises(KeyError):
        w["mu"]  # noqa: B018
    assert json.loads(json.dumps(to_json_value(w))) == json.loads(json.dumps(w.to_dict()))


def test_violation_witness_names_the_claim_and_order(result):
    w = result.violates(dpa.bounds.gdp(0.3))
    assert w is not None and w["claim"] == "GDP(mu=0.3)" and w.order in ("d_d_prime", "d_prime_d")
    assert w["claimed_beta"] > w["beta_upper"] or w["claimed_beta"] > w["alpha_upper"]


def test_witness_refuses_an_unknown_order(result):
    with pytest.raises(ValueError, match="order must be one of"):
        result.mu_witness().with_(order="sideways")


def test_describe_is_deprecated_and_metadata_is_the_record(result):
    with pytest.warns(DeprecationWarning, match="result.metadata"):
        described = type(result).describe(result.mechanism, result.pair, result.attack, True)
    assert described["mechanism"] == result.metadata["mechanism"]
    assert (
        "0 fit, 1 pilot, 2 selection, 3 evaluation, 4 probe" in result.metadata["random"]["streams"]
    )


def test_a_key_given_as_none_stays_present(result):
    """results.json wrote ``"claimed_epsilon": null`` when a claim has no eps there; so does a
    witness."""
    w = result.mu_witness().with_(claimed_epsilon=None)
    assert "claimed_epsilon" in w and w["claimed_epsilon"] is None
    assert w.to_dict()["claimed_epsilon"] is None
