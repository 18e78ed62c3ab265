"""Figures of an audit, drawn with matplotlib on axes the caller passes in.

Nothing here touches pyplot's global state: without an ``ax`` a function makes its own
:class:`matplotlib.figure.Figure` on the Agg canvas. Each function takes an ``AuditResult`` or a
record (a dict from :func:`dpaudit.reports.build_record` or ``results.json``), so stored results are
drawn exactly as fresh ones.

- :func:`plot_tradeoff`: the (alpha, beta) plane with the measured curve, its confidence band,
  every theoretical curve and the claim; ``scale="log"`` shows power ``1 - beta`` against
  ``alpha`` on log axes, where small alpha (and so the epsilon bound) lives.
- :func:`plot_privacy_profile`: the delta(eps) plane with the theoretical profiles and the
  measured lower bound (the true profile lies above the shaded staircase).
- :func:`plot_histogram`: the attack's score histogram under both datasets.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from dpaudit._core.validation import check_choice
from dpaudit.audit.grid import ScoreGrid
from dpaudit.reports.records import as_record, from_json_value
from dpaudit.reports.text import (
    claim_label,
    format_delta,
    format_number,
    level_per_test,
    method_title,
)

if TYPE_CHECKING:  # matplotlib is imported when a figure is drawn, not with dpaudit.reports
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "plot_tradeoff",
    "plot_privacy_profile",
    "plot_histogram",
    "tradeoff_figure",
    "FIGURE_KEYS",
    "audit_figures",
    "battery_figure",
    "figure_png",
]

#: Colour and line style of each theory method (an approximation is dashed: it is no bound).
#: Curves often coincide (an exact audit meets the exact curve, the PLD accountant meets the exact
#: curve, a claim is often the exact curve), so they are stacked: the measured curve widest at the
#: bottom, then the theory curves each narrower and higher (``zorder``), the dashed claim on top;
#: where they coincide each shows as a coloured edge around the next.
METHOD_STYLE: dict[str, dict[str, Any]] = {
    "exact": {"color": "#222222", "linestyle": "-", "linewidth": 4.2, "zorder": 3.0},
    "pld": {"color": "#1b7837", "linestyle": "-", "linewidth": 2.6, "zorder": 3.1},
    "rdp": {"color": "#e08214", "linestyle": "-", "linewidth": 1.5, "zorder": 3.2},
    "gdp_clt": {"color": "#8073ac", "linestyle": (0, (5, 2)), "linewidth": 1.4, "zorder": 3.3},
    "berry_esseen": {"color": "#b35806", "linestyle": (0, (1, 1)), "linewidth": 1.6, "zorder": 3.3},
    "advanced": {"color": "#7f3b08", "linestyle": "-.", "linewidth": 1.2, "zorder": 3.3},
    "kov": {"color": "#542788", "linestyle": "-.", "linewidth": 1.2, "zorder": 3.3},
    "last_iterate": {
        "color": "#01665e",
        "linestyle": (0, (3, 1, 1, 1)),
        "linewidth": 1.8,
        "zorder": 3.2,
    },
}
_OTHER_STYLE = {"color": "#666666", "linestyle": ":", "linewidth": 1.2, "zorder": 3.3}
CLAIM_STYLE = {"color": "#d6191b", "linestyle": (0, (5, 3)), "linewidth": 1.6, "zorder": 4.0}
MEASURED_COLOR = "#2166ac"
#: The measured curve: under every theory curve, and wider than all of them.
MEASURED_STYLE = {"color": MEASURED_COLOR, "linewidth": 6.5, "zorder": 2.5}
BAND_COLOR = "#92c5de"
D_COLOR = "#4d4d4d"
D_PRIME_COLOR = "#d6604d"

#: Longest line of a legend entry; longer labels wrap onto further lines.
LEGEND_WRAP = 60


def _claim_line() -> dict[str, Any]:
    """:data:`CLAIM_STYLE` on a white edge, so that the claim shows on top of the theory curve
    it often coincides with (the exact accountant's, say)."""
    from matplotlib.patheffects import withStroke

    return {**CLAIM_STYLE, "path_effects": [withStroke(linewidth=3.6, foreground="white")]}


def _new_figure(figsize: tuple[float, float]) -> Figure:
    """A figure on the Agg canvas (no pyplot state)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _new_axes(figsize: tuple[float, float] = (6.0, 4.6)) -> Axes:
    return _new_figure(figsize).add_subplot()


def _xy(points: Mapping[str, Any] | None, x: str, y: str) -> tuple[np.ndarray, np.ndarray] | None:
    if not points or x not in points or y not in points:
        return None
    return np.asarray(points[x], dtype=float), np.asarray(points[y], dtype=float)


def _method_label(method: str) -> str:
    return f"theory: {method_title(method, long=True)}"


def _trials_label(record: Mapping[str, Any]) -> str:
    trials = record.get("trials")
    return f"measured ({trials:,} trials each)" if isinstance(trials, int) else "measured"


def _power_xy(
    alpha: np.ndarray, beta: np.ndarray, floor: float, start: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """``(alpha, 1 - beta)`` of a piecewise-linear curve for log axes, from ``alpha = start``
    (at least ``floor``) on.

    The curve is resampled on a log-spaced grid (plus its vertices) before the transform: a
    straight segment, e.g. the randomised tests between the trivial test and the first
    threshold, is a curve on log axes. Points below ``floor`` on either axis are dropped.
    """
    order = np.argsort(alpha, kind="stable")
    alpha, beta = alpha[order], beta[order]
    start = max(floor, start)
    grid = np.union1d(np.geomspace(start, 1.0, 400), alpha[alpha >= start])
    power = 1.0 - np.interp(grid, alpha, beta)
    keep = power >= floor
    return grid[keep], power[keep]


def witness_point(witness: Mapping[str, Any] | None) -> tuple[float, float] | None:
    """Where a witnessing test sits on the trade-off plane: its confidence upper bounds
    ``(alpha+, beta+)``, or ``(beta+, alpha+)`` when it refutes the claim with the roles of
    ``D`` and ``D_prime`` swapped (``order = "d_prime_d"``)."""
    if not witness or witness.get("alpha_upper") is None or witness.get("beta_upper") is None:
        return None
    a, b = float(witness["alpha_upper"]), float(witness["beta_upper"])
    return (b, a) if witness.get("order") == "d_prime_d" else (a, b)


def _swapped(witness: Mapping[str, Any] | None) -> str:
    return " (D, D′ swapped)" if witness and witness.get("order") == "d_prime_d" else ""


def _common_grid(base: np.ndarray, *curves: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """``base`` together with the vertices of ``curves`` that lie in its range."""
    grid = np.unique(np.concatenate([base, *(c[0] for c in curves)]))
    return grid[(grid >= base.min()) & (grid <= base.max())]


def plot_tradeoff(
    result: Any, ax: Axes | None = None, *, scale: str = "linear", legend: bool = True
) -> Axes:
    """Draw the trade-off plane of an audit on ``ax`` and return it.

    ``scale="linear"``: type II error beta against type I error alpha on [0, 1]^2, with the
    measured curve (lower convex hull of the achieved points), its confidence band, the
    theoretical curves (solid: exact or valid bounds; dashed: approximations), the claim and the
    witnessing test when the claim is violated. ``scale="log"``: the same curves as power
    ``1 - beta`` against ``alpha`` on log-log axes; there ``(eps, 0)``-DP is the line
    ``1 - beta = e^eps alpha``, so epsilon is the height above the diagonal. ``legend=False``
    leaves the legend to the caller (e.g. one legend for several panels).
    """
    check_choice("scale", scale, ("linear", "log"))
    record = as_record(result)
    ax = ax if ax is not None else _new_axes()
    log = scale == "log"
    trials = record.get("trials")
    floor = 0.3 / trials if isinstance(trials, int) and trials > 0 else 1e-6
    _draw_perfect_privacy(ax, log, floor)
    _draw_band(ax, record, log, floor)
    _draw_curves(ax, record, log, floor)
    _mark_tests(ax, record, log, floor)
    _frame_plane(ax, log, floor, legend)
    return ax


def _draw_curve(
    ax: Axes,
    xy: tuple[np.ndarray, np.ndarray] | None,
    log: bool,
    floor: float,
    start: float = 0.0,
    **style: Any,
) -> None:
    """One curve of the plane (``beta`` against ``alpha``, or power on log axes from
    ``alpha = start`` on)."""
    if xy is None:
        return
    a, b = xy
    if log:
        a, b = _power_xy(a, b, floor, start)
    ax.plot(a, b, **style)


def _draw_perfect_privacy(ax: Axes, log: bool, floor: float) -> None:
    """The diagonal ``beta = 1 - alpha`` (on log axes ``1 - beta = alpha``)."""
    diag = np.geomspace(floor, 1.0, 50) if log else np.array([0.0, 1.0])
    ax.plot(
        diag,
        diag if log else 1.0 - diag,
        color="#bbbbbb",
        linestyle=":",
        linewidth=1.0,
        label="perfect privacy (β = 1 − α)",
        zorder=3.9,  # dotted: it hides no curve, and a nearly private audit meets it
    )


def _draw_band(ax: Axes, record: dict[str, Any], log: bool, floor: float) -> None:
    """The confidence band of the measured curve, when the record has one."""
    empirical = record.get("empirical") or {}
    upper = _xy(empirical.get("upper_band"), "alpha", "beta")
    lower = _xy(empirical.get("lower_band"), "alpha", "beta")
    if upper is None or lower is None:
        return
    confidence = from_json_value(record.get("confidence"))
    base = np.geomspace(floor, 1.0, 400) if log else np.linspace(0.0, 1.0, 201)
    grid = _common_grid(base, upper, lower)
    hi = np.interp(grid, *upper)
    lo = np.interp(grid, *lower)
    if log:
        # Power 1 - beta: the upper band of beta is the lower band of the power.
        hi, lo = np.maximum(1.0 - lo, floor * 1e-3), np.maximum(1.0 - hi, floor * 1e-3)
    level = f"{100 * confidence:g}% " if confidence is not None else ""
    ax.fill_between(
        grid, lo, hi, color=BAND_COLOR, alpha=0.55, linewidth=0, label=f"{level}confidence band"
    )


def _draw_curves(ax: Axes, record: dict[str, Any], log: bool, floor: float) -> None:
    """The measured curve, the theory curves and the claim, from the bottom up
    (:data:`METHOD_STYLE`)."""
    xy = _xy((record.get("empirical") or {}).get("curve"), "alpha", "beta")
    # Below its first test with alpha > 0 (at least 1/n) the measured curve is only the chord
    # from alpha = 0, which on log axes would stand above a theory curve it does not refute.
    start = float(np.min(xy[0][xy[0] > 0], initial=1.0)) if xy is not None else 0.0
    _draw_curve(ax, xy, log, floor, start, label=_trials_label(record), **MEASURED_STYLE)
    trials = record.get("trials")
    if log and isinstance(trials, int) and trials > 0:
        ax.axvline(
            1.0 / trials,
            color="#888888",
            linestyle=(0, (1, 2)),
            linewidth=1.0,
            zorder=3.95,  # dotted and thin over the curves, like the diagonal: it hides none
            label=f"α = 1/n: no smaller α > 0 is measured with n = {trials:,} trials",
        )
    for method, entry in (record.get("theory") or {}).items():
        xy = _xy(entry.get("tradeoff"), "alpha", "beta")
        style = METHOD_STYLE.get(method, _OTHER_STYLE)
        _draw_curve(ax, xy, log, floor, label=_method_label(method), **style)
    claim = record.get("claim")
    if claim:
        xy = _xy(claim.get("tradeoff"), "alpha", "beta")
        _draw_curve(ax, xy, log, floor, label=f"claim: {claim_label(record)}", **_claim_line())


def _mark_point(
    ax: Axes, point: tuple[float, float] | None, log: bool, floor: float, **style: Any
) -> None:
    """One test's ``(alpha, beta)`` point, left out on log axes when it is below the floor."""
    if point is None:
        return
    a, b = point
    y = 1.0 - b if log else b
    if not log or (a >= floor and y >= floor):
        ax.plot([a], [y], linestyle="none", markeredgecolor="white", zorder=5, **style)


def _mark_tests(ax: Axes, record: dict[str, Any], log: bool, floor: float) -> None:
    """The test behind the first ``eps`` bound and the witness refuting the claim."""
    bounds = record.get("epsilon_witnesses") or {}
    if bounds:
        key = next(iter(bounds))
        label = f"test behind the ε bound at δ = {format_delta(key)}{_swapped(bounds[key])}"
        point = witness_point(bounds[key])
        style = {"marker": "o", "markersize": 7, "color": MEASURED_COLOR, "label": label}
        _mark_point(ax, point, log, floor, **style)
    witness = record.get("witness")
    label = f"witness: test refuting the claim{_swapped(witness)}"
    style = {"marker": "X", "markersize": 11, "color": CLAIM_STYLE["color"], "label": label}
    _mark_point(ax, witness_point(witness), log, floor, **style)


def _frame_plane(ax: Axes, log: bool, floor: float, legend: bool) -> None:
    """Axes, labels, title, grid and (unless ``legend=False``) the legend of the plane."""
    if log:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(floor, 1.0)
        ax.set_ylim(floor, 1.05)
        ax.set_xlabel("type I error α (log)")
        ax.set_ylabel("power 1 − β (log)")
        title = "Small α, log–log (ε is the height above the diagonal)"
    else:
        ax.set_xlim(0.0, 1.0)
        ax.set_ylim(0.0, 1.0)
        ax.set_aspect("equal")
        ax.set_xlabel("type I error α")
        ax.set_ylabel("type II error β")
        title = "Trade-off plane"
    _finish_axes(ax, title, legend, loc="lower right" if log else "upper right")


def _finish_axes(ax: Axes, title: str, legend: bool, loc: str = "upper right") -> None:
    """Title, grid and (unless ``legend=False``) the legend every panel shares."""
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", color="#e5e5e5", linewidth=0.6)
    if legend:
        handles, labels = ax.get_legend_handles_labels()
        labels = ["\n".join(textwrap.wrap(label, LEGEND_WRAP)) for label in labels]
        ax.legend(handles, labels, fontsize=7.5, loc=loc, framealpha=0.9)


def _profile_label(record: Mapping[str, Any]) -> str:
    """Legend of the measured staircase, naming the level its steps were read at: the
    family's level per test, as the verdict states it (a record written before the profile
    carried its level was read at the audit's confidence)."""
    profile = (record.get("empirical") or {}).get("profile") or {}
    level = from_json_value(profile.get("confidence", record.get("confidence")))
    shown = f"{100 * level:.4g}%"
    if shown == level_per_test(record):
        return f"measured lower bound on δ(ε), each step at {shown} (the verdict's level per test)"
    return f"measured lower bound on δ(ε), each step alone at {shown}"


def _label_bound(ax: Axes, eps: float, delta: float, text: str) -> None:
    """Label a marked eps bound: left of its point, inside the shaded area, where the label
    fits inside the axes; right of it otherwise (a bound near eps = 0)."""
    style = {
        "textcoords": "offset points",
        "fontsize": 7.5,
        "color": MEASURED_COLOR,
        "bbox": {"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85},
    }
    label = ax.annotate(text, (eps, delta), xytext=(-6, 5), ha="right", **style)
    # A margin for the axes' final width, which the figure's layout sets when it is drawn.
    if label.get_window_extent().x0 < ax.bbox.x0 + 0.02 * ax.bbox.width:
        label.remove()
        ax.annotate(text, (eps, delta), xytext=(6, 5), ha="left", **style)


def plot_privacy_profile(result: Any, ax: Axes | None = None, *, legend: bool = True) -> Axes:
    """Draw the delta(eps) plane of an audit on ``ax`` and return it.

    Theoretical profiles are upper bounds (or exact values) of the mechanism's delta(eps). The
    measurement gives lower bounds: at each delta, the mechanism is not (eps, delta)-DP for any
    eps below the measured epsilon lower bound, so the true profile passes above the shaded
    staircase. Each step of the staircase is one test at the level per test of the report's
    family (:meth:`dpaudit.AuditResult.verdict`), so at each reported delta it meets the marked
    eps bound; the other steps are tests on their own, not members of the family. The legend
    names that level as the verdict does.
    """
    record = as_record(result)
    ax = ax if ax is not None else _new_axes()
    eps_max = 1.0
    lowest = 1e-8

    def draw(entry: Mapping[str, Any], **style: Any) -> None:
        nonlocal eps_max, lowest
        xy = _xy(entry.get("delta_curve"), "eps", "delta")
        if xy is None:
            return
        eps, delta = xy
        keep = delta > 0
        if keep.any():
            ax.plot(eps[keep], delta[keep], **style)
            eps_max = max(eps_max, float(eps.max()))

    for method, entry in (record.get("theory") or {}).items():
        draw(entry, label=_method_label(method), **METHOD_STYLE.get(method, _OTHER_STYLE))
    claim = record.get("claim")
    if claim:
        draw(claim, label=f"claim: {claim_label(record)}", **_claim_line())

    profile = _xy((record.get("empirical") or {}).get("profile"), "delta", "epsilon")
    if profile is not None:
        deltas, eps_lb = profile
        keep = eps_lb > 0
        if keep.any():
            d, e = deltas[keep], eps_lb[keep]
            order = np.argsort(d)[::-1]
            d, e = d[order], e[order]
            # Staircase: for eps below e_i the profile exceeds d_i.
            xs = np.concatenate([[0.0], np.repeat(e, 2)])
            ys = np.concatenate([np.repeat(d, 2), [lowest]])
            ax.fill_between(
                xs,
                lowest,
                ys,
                color=BAND_COLOR,
                alpha=0.5,
                linewidth=0,
                label="ruled out by the measurement",
            )
            ax.plot(
                xs,
                ys,
                color=MEASURED_COLOR,
                linewidth=1.8,
                drawstyle="default",
                label=_profile_label(record),
            )
            eps_max = max(eps_max, float(e.max()) * 1.1)

    bounds = []
    for key, value in (record.get("epsilon_lower_bounds") or {}).items():
        delta, eps = float(key), from_json_value(value)
        if delta > 0 and eps is not None and eps > 0:
            ax.plot(
                [eps],
                [delta],
                marker="o",
                color=MEASURED_COLOR,
                markersize=6,
                markeredgecolor="white",
                linestyle="none",
                zorder=5,
            )
            text = f"ε ≥ {format_number(eps, 3, rounding='down')} at δ = {format_delta(key)}"
            bounds.append((eps, delta, text))

    ax.set_yscale("log")
    ax.set_xlim(0.0, eps_max)
    ax.set_ylim(lowest, 1.5)
    for eps, delta, text in bounds:
        _label_bound(ax, eps, delta, text)
    ax.set_xlabel("ε")
    ax.set_ylabel("δ(ε) (log)")
    _finish_axes(ax, "Privacy profile δ(ε)", legend)
    return ax


#: Most bins a score histogram is drawn with; finer grids are merged in groups of equal size.
HISTOGRAM_BINS = 160


def _histogram(record: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``(edges, counts_d, counts_d_prime)`` for drawing, from the record's score grid.

    The grid's ``E`` finite edges bound ``E + 1`` bins, the outer two open; those are drawn one
    bin wide. Inner bins are merged in groups so that at most :data:`HISTOGRAM_BINS` remain.
    """
    grid, counts = record.get("grid"), record.get("counts")
    if not grid or not counts:
        return None
    edges = ScoreGrid.from_dict(grid).edges
    c0 = np.asarray(counts["d"], dtype=float)
    c1 = np.asarray(counts["d_prime"], dtype=float)
    inner = edges.size - 1
    group = max(1, -(-inner // HISTOGRAM_BINS))
    if group > 1:
        pad = -inner % group
        merged = [
            np.concatenate([c[1:-1], np.zeros(pad)]).reshape(-1, group).sum(axis=1)
            for c in (c0, c1)
        ]
        c0 = np.concatenate([c0[:1], merged[0], c0[-1:]])
        c1 = np.concatenate([c1[:1], merged[1], c1[-1:]])
        edges = np.append(edges[::group], edges[-1]) if pad else edges[::group]
    width = float(np.median(np.diff(edges))) if edges.size > 1 else 1.0
    outer = np.concatenate([[edges[0] - width], edges, [edges[-1] + width]])
    return outer, c0, c1


def plot_histogram(result: Any, ax: Axes | None = None, *, legend: bool = True) -> Axes:
    """Draw the attack's score distribution under ``D`` and ``D_prime`` on ``ax`` and return it.

    Bars are the fraction of trials per score bin (log scale, so thin tails stay visible);
    the witnessing threshold, when the claim is violated, is a vertical line.
    """
    record = as_record(result)
    ax = ax if ax is not None else _new_axes()
    hist = _histogram(record)
    if hist is None:
        ax.text(0.5, 0.5, "no score counts", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return ax
    edges, c0, c1 = hist
    f0 = c0 / max(c0.sum(), 1.0)
    f1 = c1 / max(c1.sum(), 1.0)
    ax.stairs(f0, edges, color=D_COLOR, linewidth=1.4, label="under D", fill=False)
    ax.stairs(f1, edges, color=D_PRIME_COLOR, linewidth=1.4, label="under D′", fill=False)
    ax.stairs(f0, edges, color=D_COLOR, alpha=0.12, fill=True)
    ax.stairs(f1, edges, color=D_PRIME_COLOR, alpha=0.12, fill=True)
    witness = record.get("witness")
    if witness and witness.get("threshold") is not None:
        t = from_json_value(witness["threshold"])
        if t is not None and np.isfinite(t):
            ax.axvline(
                t,
                color=CLAIM_STYLE["color"],
                linestyle="--",
                linewidth=1.2,
                label="witness threshold",
            )
    positive = np.concatenate([f0[f0 > 0], f1[f1 > 0]])
    if positive.size:
        ax.set_yscale("log")
        ax.set_ylim(positive.min() / 2.0, 1.5)
    used = np.flatnonzero((c0 + c1) > 0)
    if used.size:
        ax.set_xlim(edges[used[0]], edges[used[-1] + 1])
    ax.set_xlabel("attack score (larger: more likely D′)")
    ax.set_ylabel("fraction of trials per bin")
    _finish_axes(ax, "Score distribution", legend)
    return ax


def _legend_below(fig: Figure, ax: Axes, ncols: int, also: Axes | None = None) -> None:
    """One legend under the figure for the curves of ``ax`` (and those of ``also`` that ``ax``
    lacks): labels wrapped at :data:`LEGEND_WRAP` characters, in as many columns (at most
    ``ncols``) as the figure's width holds, so that no entry runs off the figure."""
    handles, labels = ax.get_legend_handles_labels()
    if also is not None:
        for handle, label in zip(*also.get_legend_handles_labels(), strict=True):
            if label not in labels:
                handles, labels = [*handles, handle], [*labels, label]
    labels = ["\n".join(textwrap.wrap(label, LEGEND_WRAP)) for label in labels]
    for n in range(ncols, 0, -1):
        legend = fig.legend(
            handles, labels, loc="outside lower center", ncols=n, fontsize=8, frameon=False
        )
        if n == 1 or legend.get_window_extent().width <= 0.98 * fig.bbox.width:
            return
        legend.remove()


def tradeoff_figure(result: Any) -> Figure:
    """The trade-off plane in two panels, linear and log-log for small alpha, one legend below."""
    record = as_record(result)
    fig = _new_figure((11.0, 6.0))
    left, right = fig.subplots(1, 2)
    plot_tradeoff(record, left, scale="linear", legend=False)
    plot_tradeoff(record, right, scale="log", legend=False)
    _legend_below(fig, left, ncols=3, also=right)
    # A long audit name wraps onto a few lines instead of running off the figure.
    title = "\n".join(textwrap.wrap(str(record.get("name", "")), 100)[:3])
    fig.suptitle(title, fontsize=12, fontweight="bold")
    return fig


#: The figures of an audit, in the order :func:`audit_figures` draws them.
FIGURE_KEYS = ("tradeoff", "profile", "histogram")


def audit_figures(result: Any, keys: tuple[str, ...] = FIGURE_KEYS) -> dict[str, Figure]:
    """The figures of an audit named in ``keys`` (default all: ``"tradeoff"``, ``"profile"``,
    ``"histogram"``) -> Figure."""
    record = as_record(result)
    figures = {"tradeoff": tradeoff_figure(record)} if "tradeoff" in keys else {}
    for key, plot in (("profile", plot_privacy_profile), ("histogram", plot_histogram)):
        if key not in keys:
            continue
        ax = _new_axes((5.4, 5.2))
        plot(record, ax, legend=False)
        _legend_below(ax.figure, ax, ncols=2)
        figures[key] = ax.figure
    return figures


#: Longest row label of :func:`battery_figure`; longer ones are cut with an ellipsis.
BATTERY_LABEL = 70


def battery_figure(battery: Mapping[str, Any]) -> Figure:
    """One figure for a library battery's rows (``battery["rows"]``, as in ``results.json``):
    per row, the certified ``eps`` lower bound (a bar, red where the row is violated) against
    the claimed ``eps`` (a tick), the relation marked "(assumed)" where the library does not
    state it. Rows that raised an error are listed without a bar."""
    rows = list(battery.get("rows") or [])
    fig = _new_figure((10.0, 1.4 + 0.24 * max(len(rows), 1)))
    ax = fig.add_subplot()
    y = np.arange(len(rows))[::-1]
    labels = []
    top = 1.0
    for position, row in zip(y, rows, strict=True):
        assumed = "" if row.get("relation_stated", True) else " (assumed)"
        tail = f" [{row['relation']}{assumed}, {row['generator']}]"
        function = str(row["function"])
        room = max(BATTERY_LABEL - len(tail), 12)
        if len(function) > room:  # the function is cut, never its relation and pairs
            function = function[: room - 1] + "…"
        labels.append(function + tail)
        bound = from_json_value(row.get("epsilon_lower_bound"))
        claimed = from_json_value(row.get("claimed_epsilon"))
        if bound is not None and np.isfinite(bound):
            violated = row.get("verdict") == "violated"
            colour = CLAIM_STYLE["color"] if violated else MEASURED_COLOR
            ax.barh(position, bound, height=0.6, color=colour, alpha=0.85 if violated else 0.5)
            top = max(top, bound)
        if claimed is not None and np.isfinite(claimed):
            ax.plot([claimed], [position], marker="|", markersize=12, color="#222222", zorder=3)
            top = max(top, claimed)
    ax.set_yticks(y, labels, fontsize=7)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlim(0.0, 1.08 * top)
    ax.set_xlabel(
        "ε: certified lower bound (bar; red: violated) and claimed (tick), at the claim's δ"
    )
    ax.set_title(f"{battery.get('library', 'library')}: every row of the battery", fontsize=10)
    ax.grid(True, axis="x", color="#e5e5e5", linewidth=0.6)
    return fig


def one_run_figure(name: str, result: Any) -> Figure:
    """The guesses of a one-run audit (a :class:`~dpaudit.audit.one_run.OneRunResult`): the
    share of correct guesses among the ``k`` most confident ones, for every total ``k`` tested,
    beside the share that guessing by chance gets and the ceiling (every guess correct); the
    total behind the bound is marked."""
    counts = np.asarray(result.counts, dtype=float).reshape(-1, 2)
    ax = _new_axes((6.4, 4.4))
    chance = 0.5 if result.sides == "both" else result.included / result.m
    if counts.size:
        ax.plot(
            counts[:, 0],
            counts[:, 1] / counts[:, 0],
            marker="o",
            color=MEASURED_COLOR,
            label="correct among the k most confident guesses",
        )
    ceiling = {"color": "#222222", "linestyle": "--", "linewidth": 1.0, "zorder": 1.5}
    ax.axhline(1.0, **ceiling, label="ceiling: every guess correct")
    ax.axhline(chance, color="#888888", linestyle=":", label="guessing by chance")
    if result.guesses:
        ax.plot(
            [result.guesses],
            [result.correct / result.guesses],
            marker="o",
            markersize=10,
            linestyle="none",
            color=CLAIM_STYLE["color"],
            markeredgecolor="white",
            zorder=5,
            label=f"the bound's {result.guesses:,} guesses ({result.correct:,} correct)",
        )
    ax.set_xscale("log")
    ax.set_ylim(0.0, 1.05)
    ax.set_xlabel(f"guesses k (of {result.m:,} canaries)")
    ax.set_ylabel("share of correct guesses")
    _finish_axes(ax, "\n".join(textwrap.wrap(f"Guesses of {name}", 70)[:2]), legend=False)
    _legend_below(ax.figure, ax, ncols=2)
    return ax.figure


def figure_png(fig: Figure, dpi: int = 110) -> bytes:
    """The figure as PNG bytes."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()
