"""dpaudit.reports.figures: the witness is drawn where the test was made, in its order."""

from __future__ import annotations

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


def test_profile_staircase_says_its_steps_are_single_tests(violated_record):
    """The delta(eps) staircase is drawn from pointwise bounds, not from the report's
    simultaneous family: its legend must say each step holds alone, at the audit's level."""
    from dpaudit.reports.figures import plot_privacy_profile

    ax = plot_privacy_profile(violated_record)
    labels = [line.get_label() for line in ax.get_lines()]
    level = f"{violated_record['confidence']:.0%}"
    assert any(f"each step alone at {level}" in label for label in labels), labels
