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


def test_a_scores_audit_shows_its_sample_sizes_and_no_invented_pair():
    """Scores computed elsewhere come with no dataset: the parameters table says so instead of
    showing the placeholder pair, and counts scores per side rather than 'trials'."""
    import numpy as np

    from dpaudit.audit.scores import audit_scores
    from dpaudit.reports.tables import parameters_table

    rng = np.random.default_rng(0)
    rows = dict(parameters_table(audit_scores(rng.standard_normal(300), rng.standard_normal(200))))
    assert (
        rows["neighbouring pair"].endswith("(not known)")
        and "D′ =" not in rows["neighbouring pair"]
    )
    assert rows["scores on D (non-members)"] == "300" and rows["scores on D′ (members)"] == "200"
    assert rows["of which evaluate (smaller side)"] == "100"
    assert "trials per dataset" not in rows
