"""Reports: the record of an audit, its figures, tables, HTML/Markdown/JSON files."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from matplotlib.figure import Figure
from scipy import stats

import dpaudit
from dpaudit import mechanisms, reports
from dpaudit.attacks import LikelihoodRatio
from dpaudit.audit.engine import audit_mechanism
from dpaudit.audit.result import AuditResult
from dpaudit.bounds.gaussian_dp import gdp
from dpaudit.reports import writer
from dpaudit.reports.html import render_html
from dpaudit.reports.markdown import render_markdown
from dpaudit.reports.records import RESULT_KEYS, delta_key
from dpaudit.reports.text import format_number, format_probability
from dpaudit.reports.writer import atomic_directory, check_output_directory
from tests.reference import rows

TRIALS = 20_000
DELTAS = (1e-5, 1e-3)


@pytest.fixture(scope="module")
def gaussian_run() -> tuple[mechanisms.Gaussian, AuditResult]:
    mech = mechanisms.Gaussian(1.0)
    pair = mech.worst_case_pair()
    return mech, audit_mechanism(mech, pair, LikelihoodRatio(mech, pair), trials=TRIALS, seed=3)


@pytest.fixture(scope="module")
def consistent(gaussian_run) -> dict:
    mech, result = gaussian_run
    return reports.build_record(
        result,
        name="gaussian",
        mechanism=mech,
        claim=gdp(1.0),
        claim_table={"kind": "gdp", "mu": 1.0},
        deltas=DELTAS,
    )


@pytest.fixture(scope="module")
def violated(gaussian_run) -> dict:
    # sigma = 1 is exactly 1-GDP; claiming 0.5-GDP is wrong by a wide margin.
    mech, result = gaussian_run
    return reports.build_record(
        result,
        name="gaussian <b>overclaimed</b> & co",
        mechanism=mech,
        claim=gdp(0.5),
        claim_table={"kind": "gdp", "mu": 0.5},
        deltas=DELTAS,
        description='a "quoted" <script>alert(1)</script> description',
    )


def test_record_has_the_contract_keys_and_is_strict_json(gaussian_run, consistent: dict) -> None:
    for key in RESULT_KEYS:
        assert key in consistent
    text = json.dumps(consistent, allow_nan=False)
    assert json.loads(text) == consistent
    assert consistent["name"] == "gaussian"
    assert consistent["trials"] == TRIALS and consistent["seed"] == 3
    assert consistent["confidence"] == 0.95
    assert consistent["elapsed_seconds"] == gaussian_run[1].elapsed_seconds
    assert set(consistent["epsilon_lower_bounds"]) == {"1e-05", "0.001"}


def test_record_engine_numbers_are_the_engines(gaussian_run, consistent: dict) -> None:
    _, result = gaussian_run
    # A record's bounds are the family of its verdict: eps at each delta, mu, the claim's test.
    family = result.verdict(gdp(1.0), DELTAS)
    assert consistent["family"]["tests"] == len(DELTAS) + 2
    for delta in DELTAS:
        key = delta_key(delta)
        assert consistent["epsilon_lower_bounds"][key] == family["epsilon_lower_bounds"][key]
        assert consistent["epsilon_lower_bounds"][key] <= result.epsilon_lower_bound(delta)
    assert consistent["mu_lower_bound"] == family["mu_lower_bound"]
    # The stored engine state reproduces the same numbers without running.
    again = AuditResult.from_dict(consistent).verdict(gdp(1.0), DELTAS)
    for delta in DELTAS:
        key = delta_key(delta)
        assert again["epsilon_lower_bounds"][key] == pytest.approx(
            family["epsilon_lower_bounds"][key]
        )


def test_record_theory_matches_the_reference_values(consistent: dict) -> None:
    exact = {r["query"]: r["value"] for r in rows(item="1", setting="sigma=1.0", quantity="eps")}
    theory = consistent["theory"]
    assert set(theory) == set(mechanisms.Gaussian(1.0).theory_methods)
    first = next(iter(theory))
    for delta in DELTAS:
        key = delta_key(delta)
        assert theory[first]["epsilon"][key] == pytest.approx(exact[delta], rel=1e-6)
        lower = consistent["epsilon_lower_bounds"][key]
        assert theory[first]["tightness"][key] == pytest.approx(lower / exact[delta], rel=1e-6)
    # Stored curves: the exact trade-off curve is G_1 (DRS Def. 4).
    curve = theory[first]["tradeoff"]
    alpha = np.asarray(curve["alpha"])
    inner = (alpha > 1e-9) & (alpha < 1 - 1e-9)
    expected = stats.norm.cdf(stats.norm.ppf(1 - alpha[inner]) - 1.0)
    np.testing.assert_allclose(np.asarray(curve["beta"])[inner], expected, atol=1e-9)
    # delta(eps) of the exact profile against the closed form of DRS Cor. 1 with mu = 1.
    eps = np.asarray(theory[first]["delta_curve"]["eps"])
    closed = stats.norm.cdf(-eps + 0.5) - np.exp(eps) * stats.norm.cdf(-eps - 0.5)
    np.testing.assert_allclose(theory[first]["delta_curve"]["delta"], closed, atol=1e-9)


def test_record_lower_bounds_stay_below_theory(consistent: dict) -> None:
    # Holds with probability >= 95% per bound; at seed 3 it is a fixed fact of this run.
    first = next(iter(consistent["theory"].values()))
    for key, lower in consistent["epsilon_lower_bounds"].items():
        assert 0.0 < lower <= first["epsilon"][key]
    assert 0.0 < consistent["mu_lower_bound"] <= 1.0


def test_consistent_claim(consistent: dict) -> None:
    assert consistent["verdict"] == "consistent"
    assert consistent["witness"] is None
    sentence = reports.verdict_sentence(consistent)
    assert sentence.startswith("Consistent")
    assert "1-GDP" in sentence


def test_violated_claim_and_its_witness(violated: dict) -> None:
    assert violated["verdict"] == "violated"
    witness = violated["witness"]
    alpha, beta = witness["alpha_upper"], witness["beta_upper"]
    if witness["order"] == "d_prime_d":  # the test refutes the claim with D and D' swapped
        alpha, beta = beta, alpha
    # The witnessing test's upper bounds beat the claimed curve G_0.5 (DRS Def. 4).
    assert beta < stats.norm.cdf(stats.norm.ppf(1 - alpha) - 0.5)
    sentence = reports.verdict_sentence(violated)
    assert sentence.startswith("Violated: the claim 0.5-GDP is refuted at 95% confidence")
    # upper bounds on the errors, rounded up
    alpha_text, beta_text = (format_probability(x, rounding="up") for x in (alpha, beta))
    assert alpha_text in sentence and beta_text in sentence
    assert format_probability(witness["claimed_beta"]) in sentence


def test_infinite_theory_values_are_written_as_strings(gaussian_run) -> None:
    mech, result = gaussian_run
    record = reports.build_record(result, mechanism=mech, deltas=(0.0,))
    first = next(iter(record["theory"].values()))
    assert first["epsilon"]["0.0"] == "inf"  # the Gaussian mechanism has no finite eps at delta 0
    assert first["tightness"]["0.0"] == 0.0
    json.dumps(record, allow_nan=False)
    table = reports.bounds_table(record)
    assert table[reports.tables.method_title(next(iter(record["theory"])))][0] == math.inf


def test_without_claim_or_theory(gaussian_run) -> None:
    # A result read back from JSON has no mechanism object: no theory, no claim, still a report.
    _, result = gaussian_run
    loaded = AuditResult.from_json(result.to_json())
    record = reports.build_record(loaded, deltas=DELTAS)
    assert record["theory"] == {} and record["claim"] is None
    assert record["verdict"] == "consistent" and record["witness"] is None
    family = result.verdict(None, record["deltas"])
    assert record["epsilon_lower_bounds"]["1e-05"] == family["epsilon_lower_bounds"]["1e-05"]
    assert reports.verdict_label(record) == "no claim tested"
    assert reports.verdict_sentence(record).startswith("No claim tested: ")
    assert set(reports.audit_figures(record)) == {"tradeoff", "profile", "histogram"}
    assert list(reports.bounds_table(record).columns) == ["quantity", "lower bound", "ceiling"]


class _GaussianWithBrokenTheory(mechanisms.Gaussian):
    """A Gaussian whose extra theory method cannot answer."""

    def _theories(self):
        def broken():
            raise ValueError("this method needs more memory than there is")

        return {**super()._theories(), "kov": broken}


def test_a_failing_theory_method_is_reported_not_fatal() -> None:
    mech = _GaussianWithBrokenTheory(1.0)
    result = audit_mechanism(mech, trials=2_000, seed=1)
    record = reports.build_record(result, claim=gdp(1.0), deltas=(1e-5,))
    assert "needs more memory" in record["theory"]["kov"]["error"]
    assert "epsilon" not in record["theory"]["kov"]
    assert record["theory"]["exact"]["epsilon"]["1e-05"] == pytest.approx(4.377178, rel=1e-6)
    rows = dict(reports.parameters_table(record))
    assert "needs more memory" in rows["theory KOV: not available"]
    assert set(reports.audit_figures(record)) == {"tradeoff", "profile", "histogram"}
    assert reports.bounds_table(record)["KOV"].isna().all()


def test_plots_draw_on_the_axes_given(consistent: dict, violated: dict) -> None:
    fig = Figure()
    left, middle, right, extra = fig.subplots(1, 4)
    assert reports.plot_tradeoff(violated, left) is left
    labels = [line.get_label() for line in left.get_lines()]
    n_theory = len(violated["theory"])
    assert sum(label.startswith("theory:") for label in labels) == n_theory
    assert any(label.startswith("claim:") for label in labels)
    assert any(label.startswith("measured") for label in labels)
    assert any(label.startswith("witness: test refuting the claim") for label in labels)
    assert any(label.startswith("test behind the ε bound") for label in labels)
    assert left.get_xlim() == (0.0, 1.0)

    assert reports.plot_tradeoff(consistent, middle, scale="log") is middle
    assert middle.get_xscale() == "log" and middle.get_yscale() == "log"
    assert reports.plot_privacy_profile(consistent, right) is right
    assert right.get_yscale() == "log"
    assert any("measured lower bound" in line.get_label() for line in right.get_lines())
    assert reports.plot_histogram(consistent, extra) is extra
    assert len(extra.patches) >= 2
    with pytest.raises(ValueError, match="scale"):
        reports.plot_tradeoff(consistent, scale="semilog")


def test_plots_leave_pyplot_alone(consistent: dict) -> None:
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    figures = reports.audit_figures(consistent)
    assert set(figures) == {"tradeoff", "profile", "histogram"}
    assert plt.get_fignums() == before
    png = reports.figure_png(figures["tradeoff"])
    assert png.startswith(b"\x89PNG")


def test_plots_accept_an_audit_result(gaussian_run) -> None:
    _, result = gaussian_run
    ax = reports.plot_tradeoff(result)
    assert any(line.get_label().startswith("measured") for line in ax.get_lines())


def test_tables(consistent: dict) -> None:
    table = reports.bounds_table(consistent)
    assert list(table["quantity"]) == ["ε at δ = 1e-05", "ε at δ = 0.001", "μ (GDP)"]
    assert list(table["lower bound"]) == [
        *(consistent["epsilon_lower_bounds"][delta_key(d)] for d in DELTAS),
        consistent["mu_lower_bound"],
    ]
    # The claim is 1-GDP: its mu is 1 and the mu tightness is the lower bound itself.
    assert table["claim"].iloc[-1] == 1.0
    assert table["tightness claim"].iloc[-1] == pytest.approx(consistent["mu_lower_bound"])
    index = reports.index_table([consistent, consistent])
    assert list(index["verdict"]) == ["consistent", "consistent"]
    params = dict(reports.parameters_table(consistent))
    assert params["trials per dataset"] == f"{TRIALS:,}"
    assert params["version: dpaudit"] == dpaudit.__version__


def test_theory_table_against_reference_values() -> None:
    exact = {r["query"]: r["value"] for r in rows(item="1", setting="sigma=1.0", quantity="eps")}
    delta_at = {
        r["query"]: r["value"] for r in rows(item="1", setting="sigma=1.0", quantity="delta")
    }
    mech = mechanisms.Gaussian(1.0)
    table = reports.theory_table(mech, deltas=[1e-5, 1e-3], eps=[1.0, 2.0])
    assert list(table["method"]) == list(mech.theory_methods)
    first = table.iloc[0]
    assert first["eps at delta=1e-05"] == pytest.approx(exact[1e-5], rel=1e-6)
    assert first["eps at delta=0.001"] == pytest.approx(exact[1e-3], rel=1e-6)
    assert first["delta at eps=1"] == pytest.approx(delta_at[1.0], rel=1e-6)
    assert first["delta at eps=2"] == pytest.approx(delta_at[2.0], rel=1e-6)
    with pytest.raises(ValueError, match="delta"):
        reports.theory_table(mech, deltas=[1.5])


def _report_files(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory, consistent, violated) -> Path:
    parent = tmp_path_factory.mktemp("written")
    out = reports.write([consistent, violated], parent / "r")
    assert out == parent / "r"
    return out


def test_write_produces_a_self_contained_report(written: Path, consistent, violated) -> None:
    out = written
    files = _report_files(out)
    assert {"index.html", "README.md", "results.json"} <= files
    assert sum(f.startswith("figures/") and f.endswith(".png") for f in files) == 6
    assert [p.name for p in out.parent.iterdir()] == ["r"]  # no temporary leftovers

    page = (out / "index.html").read_text()
    assert page.count('src="data:image/png;base64,') == 6
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)  # nothing from the network
    assert "<script" not in page  # the description's script tag is escaped, not run
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "gaussian &lt;b&gt;overclaimed&lt;/b&gt; &amp; co" in page
    assert "violated" in page and "consistent" in page

    markdown = (out / "README.md").read_text()
    for target in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", markdown):
        assert (out / target).is_file()
    assert "&lt;script&gt;" in markdown and "<script" not in markdown

    document = json.loads((out / "results.json").read_text())
    assert document["dpaudit_version"] == dpaudit.__version__
    assert [a["name"] for a in document["audits"]] == [consistent["name"], violated["name"]]
    assert document["audits"][1]["witness"] == violated["witness"]


def test_an_audit_without_a_claim_is_neutral_never_green(consistent: dict) -> None:
    """No claim, nothing tested: a grey "no claim tested" badge and sentence, in HTML, Markdown
    and the index table; the stored verdict stays what the engine found."""
    record = {**consistent, "claim": None, "name": "measured only"}
    assert record["verdict"] == "consistent"
    page = render_html([record, consistent], [{}, {}])
    sections = page.split('<h2 id="audit-measured-only">')[1].split("<h2")[0]
    assert '<span class="badge noclaim">no claim tested</span>' in sections
    assert '<p class="verdict noclaim">No claim tested: ' in sections
    assert "badge consistent" not in sections and "Consistent" not in sections
    assert "2 audits, 0 violated, 1 with no claim tested" in page
    # The index: grey badge for the audit without a claim, green for the claim that held.
    index = page.split("<body>")[1].split("</table>")[0]
    assert index.count("badge noclaim") == 1 and index.count("badge consistent") == 1
    assert "unexpected" not in index
    markdown = render_markdown([record, consistent], [{}, {}])
    assert "## measured only — no claim tested" in markdown
    assert "| measured only | " in markdown and "| no claim tested | consistent |" in markdown
    assert list(reports.index_table([record, consistent])["verdict"]) == [
        "no claim tested",
        "consistent",
    ]


_HOSTILE = ("<script>alert(1)</script>", '"><svg onload=alert(1)>', "[x](javascript:alert(1))")


@pytest.mark.parametrize("text", _HOSTILE)
def test_markdown_escapes_user_text_in_table_cells(consistent: dict, text: str) -> None:
    record = {**consistent, "name": text, "mechanism_name": text, "description": text}
    markdown = render_markdown([record], [{}])
    assert "<" not in markdown and ">" not in markdown  # no raw HTML at all
    assert not re.search(r"(?<!\\)\]\(", markdown)  # no link or image made of user text
    rows = [line for line in markdown.splitlines() if line.startswith("| ")]
    # Every row of the index table keeps its ten columns (user text cannot add cells).
    assert all(len(re.split(r"(?<!\\)\|", row)) == 12 for row in rows[:3])
    html_page = render_html([record], [{}])
    assert "<svg" not in html_page and "<script" not in html_page


def test_long_names_are_cut_in_the_summary_table(consistent: dict) -> None:
    """The summary table stays narrow: a long name shows its first characters, the full name is
    its tooltip and the heading of its section."""
    long = "BlackBox(" + "my_package.my_module.a_release_function_with_a_long_name:" * 4 + ")"
    record = {**consistent, "name": "n" * 120, "mechanism_name": long}
    page = render_html([record], [{}])
    index = page.split("<body>")[1].split("</table>")[0]
    assert long not in index.replace(f'title="{long}"', "")
    cut = re.search(rf'<span title="{re.escape(long)}">(.*?)…</span>', index)
    assert cut is not None and re.sub(r"<[^>]+>", "", cut.group(1)) == long[:89]
    assert "n" * 120 in page.split("</table>", 1)[1]  # the section's heading
    assert "overflow-wrap: anywhere" in page


def test_write_accepts_a_result(tmp_path: Path, gaussian_run) -> None:
    _, result = gaussian_run
    out = reports.write(result, tmp_path / "single")
    document = reports.load_results(out)
    assert len(document["audits"]) == 1
    family = result.verdict(None, document["audits"][0]["deltas"])
    assert document["audits"][0]["mu_lower_bound"] == family["mu_lower_bound"]


def test_report_redrawn_from_results_is_identical(tmp_path: Path, written: Path) -> None:
    first = written
    second = reports.write(reports.load_results(first / "results.json"), tmp_path / "b")
    for name in ("results.json", "index.html", "README.md"):
        assert (first / name).read_text() == (second / name).read_text(), name


def test_write_is_atomic(tmp_path: Path, consistent, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    # Figures are not what this test is about: leave them out to keep it fast.
    monkeypatch.setattr(reports.writer, "audit_figures", lambda record, keys=(): {})
    target = tmp_path / "r"
    with monkeypatch.context() as patch:
        patch.setattr(reports.writer, "render_markdown", broken)
        with pytest.raises(RuntimeError):
            reports.write(consistent, target)
    assert list(tmp_path.iterdir()) == []

    reports.write(consistent, target)
    before = (target / "results.json").read_text()
    with monkeypatch.context() as patch:
        patch.setattr(reports.writer, "render_markdown", broken)
        with pytest.raises(RuntimeError):
            reports.write({**consistent, "seed": 99}, target)
    assert (target / "results.json").read_text() == before  # the earlier report is untouched
    assert [p.name for p in tmp_path.iterdir()] == ["r"]


def test_write_refuses_a_foreign_directory(
    tmp_path: Path, consistent, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "mine"
    target.mkdir()
    (target / "notes.txt").write_text("keep me")
    with pytest.raises(ValueError, match="not a dpaudit report"):
        reports.write(consistent, target)
    assert _report_files(target) == {"notes.txt"}
    # A report directory that also holds a file of the user's is not replaced either.
    monkeypatch.setattr(reports.writer, "audit_figures", lambda record, keys=(): {})
    report = reports.write(consistent, tmp_path / "report")
    (report / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="holds other files"):
        reports.write(consistent, report)
    assert (report / "notes.txt").read_text() == "mine"


def test_atomic_directory_replaces_an_earlier_report(tmp_path: Path) -> None:
    target = tmp_path / "out"
    with atomic_directory(target) as tmp:
        (tmp / "results.json").write_text("{}")
    with atomic_directory(target) as tmp:
        (tmp / "results.json").write_text("[]")
    assert (target / "results.json").read_text() == "[]"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


_KILLED_WRITER = """
import sys, time
from pathlib import Path
from dpaudit.reports import writer

with writer.atomic_directory(Path(sys.argv[1])) as tmp:
    (tmp / "figures").mkdir()
    (tmp / "figures" / "a.png").write_bytes(b"half a report")
    print(tmp.name, flush=True)
    time.sleep(600)
"""


def test_killed_writers_leave_folders_that_the_next_check_removes(tmp_path: Path) -> None:
    """``kill -9`` during a report write leaves ``.r.<hex>.<host>-<pid>.tmp``; the next check
    of any output beside it (what every command that writes a report does before its work)
    removes it, and leaves alone what is not an abandoned dpaudit writer's."""
    target = tmp_path / "r"
    writer_process = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(target)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    left = writer_process.stdout.readline().strip()
    os.kill(writer_process.pid, signal.SIGKILL)
    writer_process.wait(timeout=60)
    writer_process.stdout.close()
    assert (tmp_path / left / "figures" / "a.png").exists()  # what kill -9 leaves behind
    host = left.split(".")[-2].split("-")[0]
    in_use = tmp_path / f".r.{'a' * 12}.{host}-{os.getppid()}.tmp"  # a running process's
    other_host = tmp_path / f".r.{'b' * 12}.{'0' * 6}-{writer_process.pid}.tmp"
    lookalike = tmp_path / ".r.user-notes.tmp"
    for folder in (in_use, other_host, lookalike):
        folder.mkdir()
    check_output_directory(tmp_path / "another-report")
    assert not (tmp_path / left).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [in_use.name, other_host.name, lookalike.name]
    )
    with atomic_directory(target) as tmp:
        (tmp / "results.json").write_text("{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["r", in_use.name, other_host.name, lookalike.name]
    )


def _debris(parent: Path, host: str, pid: int, hours_old: float = 0.0) -> Path:
    """A temporary directory as a writer ``host``-``pid`` leaves it when killed, last changed
    ``hours_old`` hours ago."""
    folder = parent / f".report.{'c' * 12}.{host}-{pid}.tmp"
    (folder / "figures").mkdir(parents=True)
    (folder / "figures" / "a.png").write_bytes(b"half a report")
    when = time.time() - 3600 * hours_old
    for path in (folder / "figures", folder):
        os.utime(path, (when, when))
    return folder


def test_debris_of_this_process_id_is_removed_unless_this_process_writes_it(
    tmp_path: Path,
) -> None:
    """A container runs every command under the same process id, so a killed writer's
    directory carries the id of the next command: removed unless that command is writing it."""
    own = _debris(tmp_path, writer._host(), os.getpid())
    check_output_directory(tmp_path / "out")
    assert not own.exists()
    with atomic_directory(tmp_path / "out") as tmp:
        check_output_directory(tmp_path / "other")  # a check during this process's own write
        assert tmp.is_dir()
        (tmp / "results.json").write_text("{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_debris_whose_writer_cannot_be_checked_is_removed_once_stale(tmp_path: Path) -> None:
    """Another host's directory (or one of a process id in use again) is removed when nothing
    in it has changed for ``STALE_SECONDS``, and kept while it may still be written."""
    recent = _debris(tmp_path / "recent", "0" * 6, 1, hours_old=0.5)
    stale = _debris(tmp_path / "stale", "0" * 6, 1, hours_old=2)
    reused = _debris(tmp_path / "reused", writer._host(), os.getppid(), hours_old=2)
    for folder in (recent, stale, reused):
        check_output_directory(folder.parent / "out")
    assert recent.exists() and not stale.exists() and not reused.exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "not found"),
        ("{not json", "not a readable results file"),
        ('{"audits": 3}', "not a dpaudit results file"),
        ('{"audits": [{"name": "x"}]}', "lacks verdict"),
    ],
)
def test_load_results_refuses_what_is_not_a_results_file(
    tmp_path: Path, content: str | None, message: str
) -> None:
    path = tmp_path / "results.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ValueError, match=message):
        reports.load_results(path)


def test_number_formatting() -> None:
    assert format_number(None) == "—"
    assert format_number("inf") == "∞"
    assert format_number(float("inf")) == "∞"
    assert format_number(0.123456) == "0.1235"
    assert format_number(12345.0) == "1.234e+04"
    assert format_probability(0.9999747859) == "0.9999748"
    assert format_probability(0.25) == "0.25"
    assert format_probability(1.0) == "1"


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed")
def test_html_renders_in_chromium(tmp_path: Path, written: Path) -> None:
    from matplotlib.image import imread

    out = written
    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--window-size=1280,4200",
            f"--screenshot={shot}",
            (out / "index.html").as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=180,
    )
    pixels = imread(shot)[..., :3]
    assert pixels.shape[:2] == (4200, 1280)

    def share(hex_colour: str) -> float:
        rgb = np.array([int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)])
        return float((np.abs(pixels - rgb).max(axis=-1) < 0.06).mean())

    # The figures are drawn: the measured curve's blue and the claim's red are on the page,
    # and the page is not blank.
    assert share(reports.figures.MEASURED_COLOR) > 1e-4
    assert share(reports.figures.CLAIM_STYLE["color"]) > 1e-4
    assert float((pixels.min(axis=-1) < 0.9).mean()) > 0.05


def test_an_earlier_report_set_aside_by_a_killed_writer_goes_back_to_its_place(
    tmp_path: Path,
) -> None:
    """A writer killed between its two renames (the earlier report moved to ``.old``, the new
    one not yet in place) loses neither: the next check puts the earlier report back and removes
    the unfinished new one; a report written since at that place is not overwritten."""
    target = tmp_path / "r"
    with atomic_directory(target) as tmp:
        (tmp / "results.json").write_text('{"earlier": true}')
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    pid = int(gone.stdout)
    aside = tmp_path / f".r.{'d' * 12}.{writer._host()}-{pid}.old"
    new = tmp_path / f".r.{'d' * 12}.{writer._host()}-{pid}.tmp"
    os.replace(target, aside)
    new.mkdir()
    (new / "results.json").write_text('{"new": true}')
    check_output_directory(tmp_path / "another-report")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]
    assert (target / "results.json").read_text() == '{"earlier": true}'
    os.replace(target, aside)
    with atomic_directory(target) as tmp:
        (tmp / "results.json").write_text('{"since": true}')
    check_output_directory(tmp_path / "another-report")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]
    assert (target / "results.json").read_text() == '{"since": true}'
