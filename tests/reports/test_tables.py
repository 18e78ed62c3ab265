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


def test_the_attack_row_says_what_the_attack_is_and_folds_its_configuration():
    """A learned attack's settings and what it learned are a wall of configuration: the attack
    row names the attack in a few words, the configuration follows on its own row, folded away
    in HTML until asked for."""
    import re

    import dpaudit as dpa
    from dpaudit.reports.html import render_html
    from dpaudit.reports.records import build_record
    from dpaudit.reports.tables import ATTACK_CONFIGURATION, parameters_table

    mech = dpa.mechanisms.Laplace(scale=1.0)
    pair = mech.worst_case_pair()
    result = dpa.audit_mechanism(mech, pair, dpa.attacks.Learned(), trials=4000, seed=1)
    record = build_record(result)
    rows = dict(parameters_table(record))
    assert rows["attack"] == "Learned(histogram): a likelihood ratio learned from training outputs"
    assert "outputs_per_dataset" in rows[ATTACK_CONFIGURATION]
    page = render_html([record], [{}])
    attack = re.search(r"<tr><td>attack</td><td>(.*?)</td></tr>", page).group(1)
    assert len(re.sub(r"<[^>]+>", "", attack)) <= 80
    folded = re.search(
        r"<tr><td>attack configuration</td><td><details><summary>[^<]*</summary>(.*?)</details>",
        page,
    )
    assert folded is not None and "outputs_per_dataset" in folded.group(1)


def test_a_scores_audit_names_its_attack_without_repeating_its_counts():
    import numpy as np

    from dpaudit.audit.scores import audit_scores
    from dpaudit.reports.tables import ATTACK_CONFIGURATION, parameters_table

    rng = np.random.default_rng(0)
    rows = dict(parameters_table(audit_scores(rng.standard_normal(300), rng.standard_normal(200))))
    assert rows["attack"] == "given scores: scores computed outside dpaudit"
    assert ATTACK_CONFIGURATION not in rows
