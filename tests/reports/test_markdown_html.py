"""dpaudit.reports.markdown and dpaudit.reports.html: user text is escaped, verdicts shown."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess

import pytest

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


def test_a_one_run_readme_escapes_the_audit_name_and_notes(tmp_path):
    from dpaudit.audit.one_run import audit_one_run, simulate_one_run
    from dpaudit.reports.one_run import write_one_run

    scores, included = simulate_one_run(200, 1.0, seed=0)
    result = audit_one_run(scores, included)
    write_one_run({"<script>x</script> | `a`": result}, tmp_path / "r", notes=["*b* | c"])
    text = (tmp_path / "r" / "README.md").read_text()
    assert "<script>" not in text and "&lt;script&gt;x&lt;/script&gt; \\| \\`a\\`" in text
    assert "- \\*b\\* \\| c" in text


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


#: Mechanism names of the reference battery, the longest of which used to break mid-word.
LONG_NAMES = (
    "PoissonSubsampled(Gaussian(sigma=0.8, sensitivity=1.0), rate=0.2)",
    "FixedSizeSubsampled(Gaussian(sigma=2.0, sensitivity=1.0), size=20, population=100)",
    "Composed(RandomizedResponse(eps=0.3, k=2), times=10)",
    "BlackBox(dpaudit.mechanisms.adapters:diffprivlib_release(mechanism='laplace', epsilon=1.0))",
)


def _long_named(record):
    """Records of the battery's long names, one with an (eps, delta) claim whose delta has a
    hyphen, as the index table of ``dpaudit suite`` shows them."""
    claim = {**record["claim"], "table": {"kind": "approx_dp", "eps": 1.0, "delta": 1e-6}}
    return [
        {
            **record,
            "name": f"poisson-subsampled-gaussian-{i}",
            "mechanism_name": name,
            "claim": claim,
        }
        for i, name in enumerate(LONG_NAMES)
    ]


def test_table_cells_wrap_between_words_not_inside_them(violated_record):
    """A long mechanism name may wrap after an opening parenthesis, a comma or the dots of a
    dotted path, an audit name after a hyphen between letters, and nothing may break inside a
    number such as 1e-06 or a file name such as scores.csv: the cells carry those break points
    and no style that breaks anywhere."""
    page = render_html(_long_named(violated_record), [{}] * len(LONG_NAMES))
    assert "PoissonSubsampled(<wbr>Gaussian(<wbr>sigma=0.8, sensitivity=1.0), rate=0.2)" in page
    assert '<span class="nw">poisson-</span><wbr><span class="nw">subsampled-</span>' in page
    assert '(1, <span class="nw">1e-06)-DP</span>' in page
    assert "dpaudit.<wbr>mechanisms.<wbr>adapters:<wbr>diffprivlib_release(<wbr>" in page
    assert "scores: scores.csv" in render_html(
        [{**violated_record, "name": "scores: scores.csv"}], [{}]
    )
    style = re.search(r"<style>(.*)</style>", page, flags=re.DOTALL).group(1)
    for selector, body in re.findall(r"([^{}]+)\{([^}]*)\}", style):
        if "td" in selector:
            assert "anywhere" not in body and "break-all" not in body, selector


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

#: Lists in ``data-split`` every word of a table cell that the page laid out over two lines.
_SPLIT_WORDS = """<script>
const split = [];
for (const cell of document.querySelectorAll("td")) {
  const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (const word of node.data.matchAll(/\\S+/g)) {
      const range = document.createRange();
      range.setStart(node, word.index);
      range.setEnd(node, word.index + word[0].length);
      const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
      if (lines.size > 1) split.push(word[0]);
    }
  }
}
document.body.dataset.split = JSON.stringify(split);
</script>
</body>"""


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed")
@pytest.mark.parametrize("width", [1400, 1000])
def test_no_word_of_a_table_cell_breaks_across_lines_in_chromium(tmp_path, violated_record, width):
    """Laid out by a browser at report widths, no word of any table cell (the index and the
    parameters of every audit) is split over two lines."""
    records = _long_named(violated_record)
    page = render_html(records, [{}] * len(records)).replace("</body>", _SPLIT_WORDS)
    path = tmp_path / "index.html"
    path.write_text(page, encoding="utf-8")
    dom = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--window-size={width},2000",
            "--dump-dom",
            path.as_uri(),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=180,
    ).stdout
    found = re.search(r'data-split="([^"]*)"', dom)
    assert found is not None, dom[-2000:]
    assert json.loads(html.unescape(found.group(1))) == []


def test_the_one_run_report_tells_one_story_in_every_format(tmp_path, capsys):
    """The one-run report's HTML was unstyled, without a figure or the Markdown's note, and
    ``ceiling`` meant eps in the terminal and the HTML but the family's mu in results.json; no
    ``report:`` path was printed. Now: the report's style, the guesses' figure in both formats,
    one note, the same rounded numbers under the same names, and no bare ``ceiling``."""
    import numpy as np

    from dpaudit import cli
    from dpaudit.audit.one_run import simulate_one_run
    from dpaudit.reports.one_run import ONE_RUN_NOTE

    scores, included = simulate_one_run(1000, 2.0, seed=1)
    table = tmp_path / "canaries.csv"
    rows = "".join(f"{float(s)!r},{i}\n" for s, i in zip(scores, included, strict=True))
    table.write_text("score,member\n" + rows)
    out = tmp_path / "out"
    argv = ["scores", str(table), "--one-run", "--family", "gdp", "-o", str(out)]
    assert cli.main(argv) == cli.EXIT_OK
    line = capsys.readouterr().out
    eps = re.search(r"eps >= (\S+) at", line)[1]
    ceiling = re.search(r"eps ceiling (\S+)\)", line)[1]
    assert f"report: {out / 'index.html'}" in line
    page = (out / "index.html").read_text()
    readme = (out / "README.md").read_text()
    assert "<style>" in page and "data:image/png;base64," in page
    assert html.escape(ONE_RUN_NOTE) in page and ONE_RUN_NOTE in readme
    figures = list((out / "figures").glob("*.png"))
    assert len(figures) == 1 and f"(figures/{figures[0].name})" in readme
    assert "ε ceiling" in page and f">{eps}</td>" in page and f">{ceiling}</td>" in page
    assert "ε ceiling" in readme and f"| {eps} |" in readme and f"| {ceiling} |" in readme
    (record,) = json.loads((out / "results.json").read_text())["one_run"].values()
    assert "ceiling" not in record and "bound" not in record
    assert record["tested"]["parameter"] == "mu"
    assert float(eps) <= record["epsilon_lower_bound"] < float(eps) + 1e-3
    assert float(ceiling) >= record["epsilon_ceiling"] > float(ceiling) - 1e-3
    assert np.isfinite(record["epsilon_ceiling"])
