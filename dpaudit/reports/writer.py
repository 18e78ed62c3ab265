"""Writing a report directory, atomically.

A report directory holds ``index.html`` (self-contained), ``README.md`` with its PNG figures in
``figures/``, and ``results.json``. It is built in a temporary sibling directory and renamed into
place only when complete, so an interrupted or failed write leaves nothing behind (and leaves an
earlier report at the same place untouched).

The temporary directory is ``.<name>.<random>.<host>-<pid>.tmp`` (and an earlier report being
replaced briefly ``... .old``; a writer killed between its two renames leaves the earlier report
there, and the next check puts it back). A process killed while writing (``kill -9``) cannot
remove it, so every check of an output directory (:func:`check_output_directory`: each command
that writes a report runs it before any work, and every write) removes such directories beside
it, whatever report they were for, once they are abandoned: written on this host by a process
that is gone, or by this very process id without this process writing them (a container runs
every command under the same process id), or, when their writer cannot be checked (another
host, or a process id in use again), untouched for :data:`STALE_SECONDS`. Directories of
running writers, recent ones of other hosts, and anything not named so are left alone.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from dpaudit._core.heartbeat import doing
from dpaudit._core.validation import (
    check_choice,
    check_integer,
    check_text,
    check_writable_directory,
)
from dpaudit.reports.figures import FIGURE_KEYS, audit_figures, battery_figure, figure_png
from dpaudit.reports.html import render_html
from dpaudit.reports.markdown import render_markdown
from dpaudit.reports.records import as_record, check_audits, results_document

__all__ = [
    "write",
    "atomic_directory",
    "check_output_directory",
    "FIGURES",
    "REPORT_FILES",
    "slug",
    "MIN_DPI",
    "MAX_DPI",
    "STALE_SECONDS",
]

#: The files of a report directory (figures go to ``figures/``).
REPORT_FILES = ("index.html", "README.md", "results.json")

#: Range of the figures' resolution (dots per inch) that :func:`write` draws at: below it text
#: cannot be rendered, above it a figure exceeds the image size a PNG may have.
MIN_DPI, MAX_DPI = 10, 1200

#: A writer's temporary directory whose process cannot be checked counts as abandoned when
#: nothing in it has changed for this many seconds (writing a report takes seconds to minutes).
STALE_SECONDS = 3600.0

#: The names of the temporary directories this process is writing now (:func:`atomic_directory`).
_WRITING: set[str] = set()

#: The name of a writer's temporary directory (:func:`_sibling`).
_TEMPORARY = re.compile(
    r"^\.(?P<name>.+)\.[0-9a-f]{12}\.(?P<host>[0-9a-f]{6})-(?P<pid>\d+)\.(?P<kind>tmp|old)$",
    re.DOTALL,
)


def _replaceable(path: Path) -> bool:
    """An existing directory may be replaced when it is empty or holds a dpaudit report and
    nothing else (so that replacing it never deletes anything a report did not write)."""
    if not path.is_dir():
        return False
    entries = {p.name for p in path.iterdir()}
    return not entries or ("results.json" in entries and entries <= {*REPORT_FILES, "figures"})


def check_output_directory(path: str | Path, *, name: str = "output directory") -> None:
    """Refuse (``ValueError`` naming ``name`` and ``path``) an output ``path`` that could not
    receive a report: one that exists and is not a dpaudit report, a file, a path under a file,
    or one whose parent directory cannot be written.

    A report directory holds only :data:`REPORT_FILES` and ``figures/``. Called before a long
    run so that a run is not wasted on a directory that cannot be written; the command line
    passes its option, ``name="-o"``. The temporary directories that killed writers left beside
    ``path`` are removed (see the module docstring).
    """
    path = check_writable_directory(name, path, replaced=True)
    _remove_abandoned(path.parent)
    if path.exists() and not _replaceable(path):
        raise ValueError(
            f"{name} {path}: exists and is not a dpaudit report (or holds other files too); "
            "choose another directory or remove it"
        )


def _host() -> str:
    """A short tag of this host, so that writers on other hosts sharing a directory are told
    apart (their process ids mean nothing here)."""
    return hashlib.sha256(socket.gethostname().encode("utf-8")).hexdigest()[:6]


def _sibling(path: Path, suffix: str) -> Path:
    """``.<name>.<random>.<host>-<pid>.<suffix>`` beside ``path``."""
    tag = f"{uuid.uuid4().hex[:12]}.{_host()}-{os.getpid()}"
    return path.parent / f".{path.name}.{tag}.{suffix}"


def _running(pid: int) -> bool:
    """Whether process ``pid`` of this host still exists (assumed so when that cannot be told)."""
    if os.name != "posix":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. another user's process
        return True
    return True


def _untouched_seconds(directory: Path) -> float:
    """Seconds since anything in ``directory`` or in its sub-directories (``figures/``) last
    changed; ``0`` when that cannot be told."""
    try:
        newest = max(
            [directory.lstat().st_mtime]
            + [p.lstat().st_mtime for p in directory.iterdir() if p.is_dir()]
        )
    except OSError:
        return 0.0
    return time.time() - newest


def _abandoned(entry: Path, host: str, pid: int) -> bool:
    """Whether the temporary directory ``entry`` of writer ``host``-``pid`` is abandoned (see
    the module docstring)."""
    if host == _host():
        if pid == os.getpid():
            return entry.name not in _WRITING
        if not _running(pid):
            return True
    return _untouched_seconds(entry) >= STALE_SECONDS


def _remove_abandoned(parent: Path) -> None:
    """Remove the abandoned temporary directories of report writers in ``parent``; an earlier
    report set aside (``.old``) by a writer killed before it renamed the new one into place goes
    back to its place, when nothing has taken that place since."""
    try:
        entries = list(parent.iterdir())
    except OSError:  # not there (yet), or not readable: nothing of ours to remove
        return
    for entry in entries:
        match = _TEMPORARY.match(entry.name)
        if match is None or entry.is_symlink() or not entry.is_dir():
            continue
        if _abandoned(entry, match["host"], int(match["pid"])):
            target = parent / match["name"]
            if match["kind"] == "old" and not os.path.lexists(target):
                # The only copy of an earlier report: put back, or else left where it is.
                with suppress(OSError):
                    os.replace(entry, target)
                continue
            shutil.rmtree(entry, ignore_errors=True)


@contextmanager
def atomic_directory(path: str | Path) -> Iterator[Path]:
    """Yield a fresh temporary directory beside ``path``; rename it to ``path`` on success.

    On an exception the temporary directory is removed and ``path`` is left as it was. An
    existing ``path`` is replaced only when it is empty or holds a dpaudit report
    (``results.json``); anything else raises ``ValueError`` before any work is done. Temporary
    directories left beside ``path`` by killed writers are removed first.
    """
    path = Path(path)
    check_output_directory(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp, old = _sibling(path, "tmp"), _sibling(path, "old")
    _WRITING.update((tmp.name, old.name))
    try:
        tmp.mkdir()
        yield tmp
        if path.exists():
            os.replace(path, old)
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    except OSError as exc:  # a full disk, say: named by the report, not its temporary files
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        _WRITING.difference_update((tmp.name, old.name))


def slug(name: str, taken: set[str]) -> str:
    """``name`` as a file name of a report's figures: letters, digits, ``.``, ``_`` and ``-``,
    made distinct from the names in ``taken`` (and added to them)."""
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "audit"
    out, i = base, 2
    while out in taken:
        out, i = f"{base}-{i}", i + 1
    taken.add(out)
    return out


def _document(results: Any) -> dict[str, Any]:
    """Normalise what :func:`write` accepts into a results document; refuse (``ValueError``)
    anything else, and a document without audits or with records that lack a key."""
    if isinstance(results, Mapping) and "audits" in results:
        audits = results["audits"]
        if not isinstance(audits, Sequence) or isinstance(audits, str | Mapping):
            raise ValueError("results: 'audits' must be a list of records")
        document = {**results, "audits": [as_record(r) for r in audits]}
    elif isinstance(results, Mapping) or not isinstance(results, Sequence):
        document = results_document([as_record(results)])
    elif isinstance(results, str):
        raise ValueError("results must be AuditResult objects or their records, got str")
    else:
        document = results_document([as_record(r) for r in results])
    check_audits(document["audits"], "results")
    return document


#: What ``figures`` of :func:`write` takes: every audit's figures, or the trade-off plane of
#: the violated ones only.
FIGURES = ("all", "violated")


def _drawn(
    records: Sequence[Mapping[str, Any]], figures: str | None, battery: bool
) -> list[tuple[str, ...]]:
    """The figures each record gets: all of them (``"all"``), or (``"violated"``, the default of
    a battery's report) the trade-off plane of a violated record, where the refutation shows."""
    chosen = figures if figures is not None else "violated" if battery else "all"
    check_choice("figures", chosen, FIGURES)
    if chosen == "all":
        return [FIGURE_KEYS for _ in records]
    return [("tradeoff",) if r.get("verdict") == "violated" else () for r in records]


def write(
    results: Any,
    path: str | Path,
    *,
    title: str | None = None,
    dpi: int = 110,
    figures: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> Path:
    """Write a report of one or more audits to the directory ``path`` and return it.

    Parameters
    ----------
    results:
        An ``AuditResult``, a record (:func:`dpaudit.reports.build_record`), a list of either,
        or a results document as read from ``results.json``
        (:func:`dpaudit.reports.load_results`).
    path:
        The report directory. It is written atomically; an existing report there is replaced.
    title:
        Heading of the HTML and Markdown pages (default: ``dpaudit report``, or for a library
        battery ``dpaudit: the <library> battery``).
    dpi:
        Resolution of the PNG figures.
    figures:
        ``"all"``: every audit's figures; ``"violated"``: the trade-off plane of the violated
        audits only. Default:
        ``"all"``, and ``"violated"`` for a library battery's document (one with a
        ``"battery"`` section), whose report also gets a summary figure of all its rows.
    progress:
        ``progress(line)`` hears of each figure drawn and each file written.

    Notes
    -----
    The directory receives ``index.html`` (self-contained: figures as base64 PNG),
    ``README.md`` with ``figures/<audit>-<figure>.png``, and ``results.json``
    (``{"dpaudit_version", "audits": [...]}``, every number of the report). A library
    battery's report opens with its verdict: the refuted claims
    (:func:`~dpaudit.reports.batteries.refuted_lines`, the lines ``dpaudit library`` prints),
    the violated rows that refute no claim, the summary figure and the table of rows.
    """
    if title is not None:
        title = check_text("title", title)
    dpi = check_integer("dpi", dpi, minimum=MIN_DPI, maximum=MAX_DPI)
    document = _document(results)
    records = document["audits"]
    battery = document.get("battery")
    drawn = _drawn(records, figures, battery is not None)
    if title is None:
        title = (
            "dpaudit report" if battery is None else f"dpaudit: the {battery['library']} battery"
        )
    check_output_directory(path)
    text = json.dumps(document, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    taken: set[str] = set()
    slugs = [slug(str(r.get("name", "audit")), taken) for r in records]
    tell = progress if progress is not None else (lambda line: None)
    count = sum(bool(keys) for keys in drawn) + (battery is not None)
    with atomic_directory(path) as tmp:
        (tmp / "figures").mkdir()
        pngs: list[dict[str, bytes]] = []
        paths: list[dict[str, str]] = []
        summary: tuple[bytes, str] | None = None
        if battery is not None:
            tell(f"figure 1/{count}: the summary of {len(battery.get('rows', []))} rows")
            with doing("drawing the report's summary figure"):
                summary = (figure_png(battery_figure(battery), dpi=dpi), "figures/summary.png")
            (tmp / summary[1]).write_bytes(summary[0])
        done = int(battery is not None)
        audits = sum(bool(keys) for keys in drawn)
        for record, stem, keys in zip(records, slugs, drawn, strict=True):
            pngs.append({})
            if keys:
                done += 1
                tell(f"figure {done}/{count}: {record.get('name', 'audit')}")
                index = done - int(battery is not None)
                with doing(f"drawing the report's figures: audit {index:,} of {audits:,}"):
                    drawn_now = audit_figures(record, keys)
                    pngs[-1] = {k: figure_png(f, dpi=dpi) for k, f in drawn_now.items()}
            paths.append({key: f"figures/{stem}-{key}.png" for key in pngs[-1]})
            for key, rel in paths[-1].items():
                (tmp / rel).write_bytes(pngs[-1][key])
        version = str(document.get("dpaudit_version", ""))
        tell("index.html")
        html_text = render_html(
            records,
            pngs,
            title=title,
            version=version,
            battery=battery,
            summary_png=None if summary is None else summary[0],
        )
        (tmp / "index.html").write_text(html_text, encoding="utf-8")
        tell("README.md")
        markdown_text = render_markdown(
            records,
            paths,
            title=title,
            battery=battery,
            summary_path=None if summary is None else summary[1],
        )
        (tmp / "README.md").write_text(markdown_text, encoding="utf-8")
        (tmp / "results.json").write_text(text + "\n", encoding="utf-8")
    return Path(path)
