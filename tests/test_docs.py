"""Every document the code, tests, benchmarks and examples refer to is in the repository.

References look like ``docs/theory.md#pld`` (a path from the repository root, optionally with an
anchor) or a bare ``README.md`` (next to the referring file, or at the root). Each path must exist,
and each anchor must be an ``<a id="...">`` or a heading of the target page. The API reference
itself is built by ``mkdocs build --strict`` in CI, which fails on broken links and references.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("dpaudit", "tests", "bench", "examples")
SUFFIXES = {".py", ".toml", ".md", ".txt", ".cfg", ".ini"}

# Documents that live outside the repository and must never be named in it. Spelled in two
# pieces so that this file does not name them itself.
FORBIDDEN = ("THEORY" + ".md", "DESIGN" + ".md", "../" + "shared", "refvalues" + "/")

MD_REFERENCE = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.md)(#[\w-]+)?")
DOCS_REFERENCE = re.compile(r"(?<![\w/.-])(docs/[\w./-]*[\w/])(#[\w-]+)?")


def _files() -> list[Path]:
    out = [ROOT / "README.md"]
    for folder in SCANNED:
        out += sorted(p for p in (ROOT / folder).rglob("*") if p.is_file() and p.suffix in SUFFIXES)
    return out


def _slug(heading: str) -> str:
    """The anchor Python-Markdown's toc extension gives a heading (its default slugify)."""
    text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _anchors(page: Path) -> set[str]:
    text = page.read_text(encoding="utf-8")
    ids = set(re.findall(r'<a id="([\w-]+)"></a>', text))
    ids |= {_slug(h) for h in re.findall(r"^#{1,6}\s+(.+?)\s*$", text, flags=re.MULTILINE)}
    return ids


def _references() -> list[tuple[Path, int, str, str | None]]:
    found: set[tuple[Path, int, str, str | None]] = set()
    for path in _files():
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for pattern in (MD_REFERENCE, DOCS_REFERENCE):
                for match in pattern.finditer(line):
                    anchor = match.group(2)[1:] if match.group(2) else None
                    found.add((path, lineno, match.group(1), anchor))
    return sorted(found, key=str)


def _resolve(source: Path, target: str) -> Path | None:
    candidates = [ROOT / target, source.parent / target]
    if "/" not in target:
        candidates.append(ROOT / target)
    for candidate in candidates:
        if candidate.exists():
            return candidate
    return None


def test_the_scan_finds_the_references_it_is_meant_to_check():
    targets = {target for _, _, target, _ in _references()}
    assert {"docs/theory.md", "docs/architecture.md"} <= targets


def test_every_referenced_document_exists_with_its_anchor():
    problems = []
    for source, lineno, target, anchor in _references():
        where = f"{source.relative_to(ROOT)}:{lineno}"
        page = _resolve(source, target)
        if page is None:
            problems.append(f"{where}: {target} is not in the repository")
        elif anchor is not None and page.suffix == ".md" and anchor not in _anchors(page):
            problems.append(f"{where}: {target} has no section #{anchor}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", FORBIDDEN)
def test_nothing_names_a_document_outside_the_repository(name):
    hits = [
        f"{path.relative_to(ROOT)}:{lineno}"
        for path in _files()
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if name in line
    ]
    assert not hits, f"{name} is named in: {', '.join(hits)}"


def test_anchor_check_rejects_a_missing_section():
    # The check above must be able to fail: a made-up anchor is not among the page's anchors.
    anchors = _anchors(ROOT / "docs/theory.md")
    assert {"pld", "conventions", "empirical", "strategies"} <= anchors
    assert "no-such-section" not in anchors


def test_every_public_module_is_in_the_api_reference():
    modules = set()
    for path in (ROOT / "dpaudit").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if not any(part.startswith("_") for part in parts):
            modules.add(".".join(parts))
    documented = set()
    for page in (ROOT / "docs" / "api").glob("*.md"):
        documented |= set(re.findall(r"^::: ([\w.]+)", page.read_text(encoding="utf-8"), re.M))
    missing = sorted(modules - documented - {"dpaudit"})
    assert not missing, f"add '::: <module>' to a page of docs/api/ for: {', '.join(missing)}"


def _code_blocks(text: str, language: str = r"\w*") -> list[str]:
    """The code blocks of a Markdown text, optionally only those of one ``language``."""
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.DOTALL)


def test_the_docs_home_page_shows_the_readmes_install_and_quick_start():
    """The documentation site opens with how to install and run dpaudit: the README's commands
    (install and run the main job, install and run the tests) and its Python example, verbatim."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    home = (ROOT / "docs/index.md").read_text(encoding="utf-8")
    two_commands = readme.split("## Two commands")[1].split("\n## ")[0]
    in_python = readme.split("## In Python")[1].split("\n## ")[0]
    wanted = [b.strip() for b in _code_blocks(two_commands) + _code_blocks(in_python)[:1]]
    assert len(wanted) == 3
    shown = [b.strip() for b in _code_blocks(home)]
    for block in wanted:
        assert block in shown, block


def test_the_accountant_guide_shows_its_example_script_and_how_to_install_what_it_needs():
    """The guide's code is the script's code (so the output it shows is that script's), it names
    the command that prints that output, and its install command brings every package the
    script's accountants need, without PyTorch."""
    guide = ROOT / "docs/guide/accountant.md"
    script = (ROOT / "examples" / "accountant-dpsgd.py").read_text(encoding="utf-8")
    (code,) = _code_blocks(guide.read_text(encoding="utf-8"), "python")[:1]
    assert script.endswith("\n" + code)
    text = guide.read_text(encoding="utf-8")
    assert "`python examples/accountant-dpsgd.py`" in text
    assert 'pip install ".[accountants]"' in text

    from dpaudit.accountants import PACKAGES

    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    extra = re.search(r"^accountants = \[(.*)\]$", pyproject, flags=re.M)
    assert extra is not None
    brought = {name.strip('" ').split(">")[0].replace("-", "_") for name in extra[1].split(",")}
    named = set(re.findall(r'"(\w+:?\w*)"', code))
    assert {PACKAGES[n] for n in named} - {None} <= brought
    assert "opacus" not in brought and "torch" not in brought


def test_every_sample_report_is_written_by_the_script_the_docs_name():
    """docs/reports/make_samples.py, named by the README and the guide, writes every sample
    under docs/reports/ (a report directory, or a figure of the gallery) from files that
    exist, so that the samples can be made again with the current code."""
    import importlib.util

    samples_dir = ROOT / "docs/reports"
    spec = importlib.util.spec_from_file_location("make_samples", samples_dir / "make_samples.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    written = {p.parent for p in samples_dir.rglob("results.json")}
    written |= set(samples_dir.rglob("*.png")) - {p for d in written for p in d.rglob("*.png")}
    assert {samples_dir / name for name in module.SAMPLES} == written
    for name in module.SAMPLES:
        command = module.command(name)
        assert command[-1] == str(samples_dir / name)
        assert all((ROOT / a).exists() for a in command if a.endswith((".toml", ".py"))), command
    for page in ("README.md", "docs/guide/reports.md", "docs/reports/gallery/README.md"):
        assert "python docs/reports/make_samples.py" in (ROOT / page).read_text(encoding="utf-8")


def test_the_readme_says_how_long_the_tests_take_on_a_busy_machine_too():
    """The tests' duration the README gives for idle cores holds only there; it also gives the
    one measured with both cores busy with other work, what a shared machine sees."""
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert re.search(r"tests about \d+ minutes after theirs", readme)
    busy = re.search(
        r"both cores busy with other work[^.]*?the tests took about (\d+) minutes", readme
    )
    assert busy is not None and int(busy[1]) > 4
