"""dpaudit.reports.figures: the witness is drawn where the test was made, in its order."""

from __future__ import annotations

import pytest

from dpaudit.reports.figures import figure_png, tradeoff_figure, witness_point


def test_witness_point_swaps_for_the_reverse_order():
    assert witness_point({"alpha_upper": 0.1, "beta_upper": 0.3, "order": "d_d_prime"}) == (
        0.1,
        0.3,
    )
    assert witness_point({"alpha_upper": 0.1, "beta_upper": 0.3, "order": "d_prime_d"}) == (
        0.3,
        0.1,
    )
    assert witness_point(None) is None and witness_point({"alpha_upper": 0.1}) is None


def test_tradeoff_figure_renders_a_png(violated_record):
    png = figure_png(tradeoff_figure(violated_record), dpi=40)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_profile_states_the_level_per_test_the_verdict_states(violated_record):
    """The delta(eps) staircase is read at the family's level per test, and its legend names
    that level in the words of the verdict (not the family's overall confidence)."""
    from dpaudit.reports.figures import plot_privacy_profile
    from dpaudit.reports.text import level_per_test, verdict_sentence

    family = violated_record["family"]
    profile = violated_record["empirical"]["profile"]
    assert profile["confidence"] == pytest.approx(family["confidence_per_test"])
    each = level_per_test(violated_record)
    assert each == f"{100 * family['confidence_per_test']:.4g}%" and each != "95%"
    assert f"each at {each}" in verdict_sentence(violated_record)
    labels = [line.get_label() for line in plot_privacy_profile(violated_record).get_lines()]
    assert any(f"each step at {each} (the verdict's level per test)" in x for x in labels), labels


def test_profile_of_an_older_record_keeps_the_level_it_was_read_at(violated_record):
    """A record whose profile does not carry its level was read at the audit's confidence,
    each step alone; redrawing it says so rather than claiming the level per test."""
    from dpaudit.reports.figures import plot_privacy_profile

    empirical = dict(violated_record["empirical"])
    empirical["profile"] = {k: v for k, v in empirical["profile"].items() if k != "confidence"}
    older = {**violated_record, "empirical": empirical}
    labels = [line.get_label() for line in plot_privacy_profile(older).get_lines()]
    assert any("each step alone at 95%" in label for label in labels), labels
