"""dpaudit.reports.tables: the tables of a report, formatted like every other number."""

from __future__ import annotations

import math

import numpy as np
import pytest

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


def test_toml_inline_is_valid_toml_and_leaves_unset_keys_out():
    """TOML has no null: a key set to None is left out (``features = None`` would not parse),
    a key TOML does not take bare is quoted, and what is written reads back as it was."""
    import tomllib

    value = {"kind": "learned", "features": None, "a b": [1, 2.5], "fitted": {"x": None, "y": 1}}
    text = toml_inline(value)
    assert "None" not in text and "features" not in text
    assert tomllib.loads(f"v = {text}")["v"] == {
        "kind": "learned",
        "a b": [1, 2.5],
        "fitted": {"y": 1},
    }
    assert toml_inline({"projection": None}) == "{}" and toml_inline(None) == "—"


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
    # The default evaluates on every score (no part of either side is spent on choosing).
    assert rows["of which evaluate (smaller side)"] == "200"
    assert "trials per dataset" not in rows


@pytest.fixture(scope="module")
def learned_record():
    """A record of a learned attack, whose configuration has settings left unset (None)."""
    import dpaudit as dpa
    from dpaudit.reports.records import build_record

    mech = dpa.mechanisms.Laplace(scale=1.0)
    pair = mech.worst_case_pair()
    result = dpa.audit_mechanism(mech, pair, dpa.attacks.Learned(), trials=4000, seed=1)
    return build_record(result, spec={"mechanism": {"kind": "laplace", "scale": 1.0}})


def test_the_attack_row_says_what_the_attack_is_and_folds_its_configuration(learned_record):
    """A learned attack's settings and what it learned are a wall of configuration: the attack
    row names the attack in a few words, the configuration follows on its own row, folded away
    in HTML until asked for."""
    import re

    from dpaudit.reports.html import render_html
    from dpaudit.reports.tables import ATTACK_CONFIGURATION, parameters_table

    record = learned_record
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


def test_no_parameter_is_written_as_python_none(learned_record):
    """The parameters table writes spec values and the attack's configuration as TOML, which
    has no None: an unset setting (the learned attack's feature map, a threshold's projection)
    is left out, the mechanism spec can be pasted into a spec, and no row shows 'None'."""
    import tomllib

    import dpaudit as dpa
    from dpaudit.reports.tables import ATTACK_CONFIGURATION, parameters_table

    assert learned_record["attack"]["params"]["features"] is None
    rows = dict(parameters_table(learned_record))
    assert not [(k, v) for k, v in rows.items() if "None" in v], rows
    configuration = tomllib.loads(f"v = {rows[ATTACK_CONFIGURATION]}")["v"]
    assert "features" not in configuration and configuration["model"] == "auto"
    assert tomllib.loads(f"mechanism = {rows['mechanism spec']}") == {
        "mechanism": {"kind": "laplace", "scale": 1.0}
    }
    mech = dpa.mechanisms.Laplace(scale=1.0)
    threshold = dpa.audit_mechanism(
        mech, mech.worst_case_pair(), dpa.attacks.Threshold(), trials=2000, seed=1
    )
    rows = dict(parameters_table(threshold))
    assert ATTACK_CONFIGURATION not in rows and "None" not in "".join(rows.values())


def test_a_scores_audit_names_its_attack_without_repeating_its_counts():
    import numpy as np

    from dpaudit.audit.scores import audit_scores
    from dpaudit.reports.tables import ATTACK_CONFIGURATION, parameters_table

    rng = np.random.default_rng(0)
    rows = dict(parameters_table(audit_scores(rng.standard_normal(300), rng.standard_normal(200))))
    assert rows["attack"] == "given scores: scores computed outside dpaudit"
    assert ATTACK_CONFIGURATION not in rows
