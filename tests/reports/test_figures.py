"""dpaudit.reports.figures: the witness is drawn where the test was made, in its order."""

from __future__ import annotations

import numpy as np
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


def _hidden_curves(lines, *, only=None):
    """Pairs ``(upper, lower)`` of curves where ``upper``, drawn over ``lower``, is solid and at
    least as wide: where the two coincide, ``lower`` cannot be seen. Matplotlib draws by
    ``zorder``, then in the order the lines were added."""
    order = sorted(enumerate(lines), key=lambda item: (item[1].get_zorder(), item[0]))
    curves = [line for _, line in order if line.get_linestyle() != "None"]
    if only is not None:
        curves = [line for line in curves if line.get_label().startswith(only)]
    return [
        (upper.get_label(), lower.get_label())
        for i, lower in enumerate(curves)
        for upper in curves[i + 1 :]
        if upper.get_linestyle() == "-" and upper.get_linewidth() >= lower.get_linewidth()
    ]


@pytest.mark.parametrize("scale", ["linear", "log"])
def test_every_curve_of_the_plane_shows_where_curves_coincide(violated_record, scale):
    """An exact audit meets the exact curve, the PLD accountant meets it, a claim often is it:
    the measured curve lies under the theory curves and each curve drawn over another is
    narrower or dashed, so that every one of them stays visible where they coincide."""
    from dpaudit.reports.figures import plot_tradeoff

    lines = plot_tradeoff(violated_record, scale=scale).get_lines()
    labels = [line.get_label() for line in lines]
    assert sum(x.startswith("theory:") for x in labels) >= 3 and any(
        x.startswith("claim:") for x in labels
    )
    measured = next(line for line in lines if line.get_label().startswith("measured"))
    assert all(
        measured.get_zorder() < line.get_zorder()
        for line in lines
        if line.get_label().startswith(("theory:", "claim:"))
    )
    assert _hidden_curves(lines) == []


def test_every_theory_profile_shows_where_profiles_coincide(violated_record):
    """The Gaussian's exact profile, its PLD profile and a claim of it are one curve: each is
    drawn so that the others still show."""
    from dpaudit.reports.figures import plot_privacy_profile

    lines = plot_privacy_profile(violated_record).get_lines()
    assert _hidden_curves(lines, only=("theory:", "claim:")) == []


def _scores_record():
    """A record of scores computed elsewhere, tested against a 2-GDP claim."""
    import numpy as np

    import dpaudit as dpa
    from dpaudit.audit.scores import audit_scores
    from dpaudit.reports.records import build_record

    rng = np.random.default_rng(0)
    result = audit_scores(rng.normal(0.0, 1.0, 2000), rng.normal(1.0, 1.0, 2000))
    return build_record(result, name="scores: scores.csv", claim=dpa.bounds.gdp(2.0))


@pytest.mark.parametrize("which", ["violated", "scores"])
def test_no_legend_or_label_runs_off_a_figure(violated_record, which):
    """Every legend, label and annotation of every figure of a report lies inside the figure
    (a PNG shows nothing beyond its edges), and the label of a marked bound inside its axes."""
    from dpaudit.reports.figures import audit_figures, plot_privacy_profile

    record = violated_record if which == "violated" else _scores_record()
    figures = dict(audit_figures(record))
    figures["profile alone"] = plot_privacy_profile(record).figure
    for key, fig in figures.items():
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        width, height = fig.get_size_inches()
        box = fig.get_tightbbox(renderer)
        assert box.x0 >= -0.01 and box.y0 >= -0.01, (key, box)
        assert box.x1 <= width + 0.01 and box.y1 <= height + 0.01, (key, box, width, height)
        for ax in fig.axes:  # a label of a point stays inside its axes, off the tick labels
            for text in ax.texts:
                extent = text.get_window_extent(renderer)
                assert ax.bbox.contains(*extent.min) and ax.bbox.contains(*extent.max), (
                    key,
                    text.get_text(),
                )
        legends = fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
        assert legends, key
        for legend in legends:
            assert fig.bbox.contains(*legend.get_window_extent(renderer).min), key
            assert fig.bbox.contains(*legend.get_window_extent(renderer).max), key


def test_the_guide_describes_the_figures_as_they_are_drawn(violated_record):
    """docs/guide/reports.md says what each figure draws: its numbers are the code's, and it
    names no element the figures do not draw (the trade-off plane has points and a band, no
    confidence boxes). The elements of the plane are pinned: one more needs its line there."""
    from pathlib import Path

    from dpaudit.reports.figures import HISTOGRAM_BINS, tradeoff_figure
    from dpaudit.reports.records import PROFILE_DELTAS
    from dpaudit.reports.text import format_delta

    guide = (Path(__file__).parents[2] / "docs/guide/reports.md").read_text(encoding="utf-8")
    figures = " ".join(guide.split("## The figures")[1].split("\n## ")[0].split())
    steps = PROFILE_DELTAS.size
    low, high = format_delta(PROFILE_DELTAS[0]), format_delta(PROFILE_DELTAS[-1])
    assert f"{steps} values of `delta` from `{low}` to `{high}`" in figures
    assert f"at most {HISTOGRAM_BINS} bins" in figures
    assert "box" not in figures
    labels = tradeoff_figure(violated_record).legends[0].get_texts()
    drawn = {text.get_text().split(":")[0].split(" (")[0] for text in labels}
    assert drawn == {
        "perfect privacy",
        "95% confidence band",
        "measured",
        "theory",
        "claim",
        "test behind the ε bound at δ = 1e-05",
        "witness",
        "α = 1/n",
    }, drawn


def test_the_small_alpha_panel_draws_no_measurement_below_what_the_trials_resolve(small_result):
    """Below its first test with alpha > 0 (at least 1/n) the measured curve is only the chord
    from alpha = 0: drawn on log axes it stood above the theory curve of a consistent audit,
    reading as a violation. It now starts at that test, 1/n is marked, and the claim, which
    often is the exact theory's curve, is drawn on a white edge so that it shows on top of it."""
    from dpaudit.reports.figures import plot_tradeoff
    from dpaudit.reports.records import build_record

    mechanism = small_result.mechanism
    record = build_record(small_result, claim=mechanism.tradeoff("exact"))
    assert record["verdict"] == "consistent"
    n = record["trials"]
    lines = plot_tradeoff(record, scale="log").get_lines()
    measured = next(line for line in lines if line.get_label().startswith("measured"))
    alpha = np.asarray(record["empirical"]["curve"]["alpha"], dtype=float)
    assert measured.get_xdata().min() == pytest.approx(alpha[alpha > 0].min())
    assert measured.get_xdata().min() >= 1.0 / n
    resolution = next(line for line in lines if line.get_label().startswith("α = 1/n"))
    assert resolution.get_xdata()[0] == pytest.approx(1.0 / n)
    claim = next(line for line in lines if line.get_label().startswith("claim:"))
    assert claim.get_path_effects(), "the claim needs its white edge"
