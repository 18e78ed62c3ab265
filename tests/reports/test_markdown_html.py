"""dpaudit.reports.markdown and dpaudit.reports.html: user text is escaped, verdicts shown."""

from __future__ import annotations

from dpaudit.reports.html import render_html
from dpaudit.reports.markdown import render_markdown


def test_markdown_escapes_the_audit_name(violated_record):
    text = render_markdown([violated_record], [{}])
    assert "gauss\\|\\*\\_name" in text
    assert "violated" in text


def test_html_escapes_and_marks_the_violation(violated_record):
    page = render_html([violated_record], [{}])
    assert "<!doctype html>" in page.lower()
    assert "gauss|*_name" in page and "<script" not in page
    assert 'class="badge violated"' in page


def test_a_verdict_read_from_a_results_file_is_escaped_in_markdown(violated_record):
    """``dpaudit report`` draws README.md from a results.json that anyone may have edited."""
    record = {**violated_record, "verdict": "<script>x</script> | `code`"}
    heading = next(
        line for line in render_markdown([record], [{}]).splitlines() if line.startswith("## ")
    )
    assert "<script>" not in heading and "&lt;script&gt;" in heading
    assert "\\|" in heading and "\\`code\\`" in heading


def test_both_formats_explain_the_ceiling_and_tightness_columns(violated_record):
    """The note under the lower-bounds table is one text, shown by HTML and Markdown alike."""
    import html as html_module

    from dpaudit.reports.html import render_html
    from dpaudit.reports.markdown import render_markdown
    from dpaudit.reports.text import BOUNDS_TABLE_NOTE

    assert "ceiling:" in BOUNDS_TABLE_NOTE and "tightness" in BOUNDS_TABLE_NOTE
    assert BOUNDS_TABLE_NOTE in render_markdown([violated_record], [{}])
    page = render_html([violated_record], [{}])
    assert html_module.escape(BOUNDS_TABLE_NOTE, quote=True) in page
