"""dpaudit.reports.tables: the tables of a report, formatted like every other number."""

from __future__ import annotations

import math

import numpy as np

from dpaudit.reports.tables import bounds_table, format_cell, format_frame, toml_inline


def test_cells_use_the_shared_number_format():
    assert format_cell("eps", np.nan) == "—"
    assert format_cell("eps", math.inf) == "∞"
    assert format_cell("delta", 1e-5) == "1e-05"
    assert format_cell("note", None) == "—"


def test_toml_inline_writes_what_a_user_types():
    assert toml_inline({"kind": "gaussian", "sigma": 1.0, "flag": True}) == (
        '{ kind = "gaussian", sigma = 1.0, flag = true }'
    )
    assert toml_inline([1, "a"]) == '[1, "a"]'


def test_bounds_table_holds_the_certified_eps(violated_record):
    frame = bounds_table(violated_record)
    assert len(frame) >= 1
    text = format_frame(frame)
    assert "nan" not in text
    assert f"{violated_record['epsilon_lower_bounds']['1e-05']:.4g}" in text
