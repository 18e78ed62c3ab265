"""dpaudit.reports.records: the records of results.json (a public format, extended only)."""

from __future__ import annotations

import json
import math

import numpy as np

from dpaudit._core.jsonvalues import to_json_value
from dpaudit.reports.records import delta_key, results_document


def test_delta_keys_are_reprs_of_floats():
    assert delta_key(1e-5) == "1e-05" and delta_key(0) == "0.0"


def test_record_is_strict_json_with_the_witness_as_a_mapping(violated_record):
    text = json.dumps(results_document([violated_record]), allow_nan=False)
    document = json.loads(text)
    record = document["audits"][0]
    assert record["verdict"] == "violated"
    assert {"alpha_upper", "beta_upper", "order", "claim"} <= set(record["witness"])
    assert document["dpaudit_version"]


def test_non_finite_numbers_are_written_as_strings():
    assert to_json_value({"a": math.inf, "b": [float("nan")]}) == {"a": "inf", "b": ["nan"]}


def test_non_finite_numbers_can_be_written_as_null():
    """The accountant and one-run records write a value that is not finite as ``null``."""
    values = to_json_value(np.array([1.5, -math.inf, math.nan]), nonfinite="null")
    assert values == [1.5, None, None]
    assert to_json_value({"a": (np.float64(2.0), math.inf)}, nonfinite="null") == {"a": [2.0, None]}
