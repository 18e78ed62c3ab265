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
