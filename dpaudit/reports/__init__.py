"""Reports of audits: figures (matplotlib), tables (pandas), HTML, Markdown and JSON writers.

``dpaudit.reports.write(result_or_results, "out/x")`` writes a self-contained HTML page, a
Markdown page with PNG figures, and ``results.json`` holding every number, from which
``write(load_results("out/x"), ...)`` draws the same report again without running anything.
"""

from dpaudit.audit.frames import result_frame, theory_comparison, tightness
from dpaudit.reports.figures import (
    audit_figures,
    figure_png,
    plot_histogram,
    plot_privacy_profile,
    plot_tradeoff,
    tradeoff_figure,
)
from dpaudit.reports.records import (
    as_record,
    build_record,
    load_results,
    results_document,
)
from dpaudit.reports.tables import bounds_table, index_table, parameters_table, theory_table
from dpaudit.reports.text import verdict_label, verdict_sentence
from dpaudit.reports.writer import write

__all__ = [
    "write",
    "build_record",
    "as_record",
    "load_results",
    "results_document",
    "plot_tradeoff",
    "plot_privacy_profile",
    "plot_histogram",
    "tradeoff_figure",
    "audit_figures",
    "figure_png",
    "bounds_table",
    "parameters_table",
    "index_table",
    "theory_table",
    "result_frame",
    "theory_comparison",
    "tightness",
    "verdict_sentence",
    "verdict_label",
]
