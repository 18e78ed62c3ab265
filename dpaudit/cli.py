"""The ``dpaudit`` command.

Sub-commands::

    dpaudit run SPEC -o DIR        run the audits of a TOML spec, write results.json and a report
    dpaudit report RESULTS -o DIR  draw the report again from a results.json (runs no trial)
    dpaudit suite [-o DIR]         audit the battery of reference mechanisms (default: reports/)
    dpaudit library NAME -o DIR    audit a DP library's functions against its own claims
    dpaudit list                   kinds of mechanisms, attacks and claims; methods; spec keys
    dpaudit bounds KIND --param k=v ...   theory table: eps at delta and delta at eps, every method
    dpaudit audit-accountant SPEC -o DIR  check accountants' delta(eps) ([[accountant_audit]])

``--trials``, ``--seed`` and ``--n-jobs`` override the spec. Progress goes to stderr: a line as
each audit starts (its trials and, for a black box, the most calls into the foreign code, or
outputs from it when it is vectorised) and ends, and a progress bar, which on a terminal updates
in place and elsewhere (a log file, a pipe) is written as whole lines, at most one per
:data:`PROGRESS_INTERVAL` seconds; ``-q/--quiet`` silences it.

``--store DIR`` saves every finished batch of trials under ``DIR/<audit name>``; the same command
run again (after a crash or a kill) resumes from there with identical results. ``--backend dask``
runs the batches on a Dask cluster: the one at ``--scheduler tcp://HOST:PORT``, or a local one of
``--n-jobs`` worker processes started and stopped by dpaudit (results are identical).

Exit codes, one rule for every command that tests claims (``run``, ``suite``, ``scores``,
``audit-accountant``, ``bench-flawed``): 0 every claim reached its expected verdict; 1 a usage or
input error (one line on stderr, nothing written); 3 some claim did not, which for an ordinary
claim means it was refuted. A refutation the spec declares (``expect = "violated"``, as the
suite's deliberately over-claimed mechanism does; ``expect."NAME"`` with its reason in an
``[[accountant_audit]]``) is expected and exits 0. Each unexpected
verdict is named on a ``REFUTED:`` line of stdout (``-q`` keeps these lines); when every verdict
was the expected one, the last line says ``all verdicts as expected``.
``--no-fail-on-violation`` makes a refutation exit 0 (the report still shows it).
``library`` exits 3 when some claim of the library was refuted (each named on a ``REFUTED:``
line with its relation and the rows that refute it, the same lines that head its report): a
function's under its stated relation, or under every relation it could mean when the library is
silent, or the claims of its silent functions under any one common relation. Violated rows that
refute no claim on their own (a silent function violated under some relations only) are named
on a ``VIOLATED, NO REFUTATION ON ITS OWN:`` line with the reason. Writing the report prints a
line per figure; ``--all-figures`` draws every row's figures, not only the violated rows'.

Output directories are written atomically: a failed run leaves nothing behind.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import math
import re
import signal
import sys
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

from dpaudit import reports, scores_command, specs
from dpaudit._core.device import torch_device
from dpaudit._core.files import os_error_text, write_atomic
from dpaudit._core.heartbeat import beating
from dpaudit._core.validation import (
    check_n_jobs,
    check_nonnegative,
    check_probability,
    check_seed,
    check_writable_directory,
)
from dpaudit.audit import backends
from dpaudit.audit.device import check_support
from dpaudit.audit.limits import check_output_size, check_trials
from dpaudit.mechanisms.base import METHOD_KINDS, RELATIONS
from dpaudit.mechanisms.blackbox import BlackBox
from dpaudit.reports.batteries import REFUTED, finding_text, unrefuted_lines
from dpaudit.reports.text import claim_label

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = ["main", "build_parser", "EXIT_OK", "EXIT_USER_ERROR", "EXIT_VIOLATION", "LAZY_IMPORTS"]

#: Slow imports that ``import dpaudit.cli`` (and ``import dpaudit``) leave to the commands and
#: functions that use them: each is imported where it is used, so that commands start quickly.
LAZY_IMPORTS = (
    "matplotlib",
    "pandas",
    "scipy.stats",
    "scipy.optimize",
    "scipy.integrate",
    "joblib",
    "tqdm",
    "dask",
    "torch",
    "sklearn",
    "jinja2",
)

EXIT_OK = 0
EXIT_USER_ERROR = 1
EXIT_VIOLATION = 3

#: What every command returns: one ``(claim, verdict, expected verdict)`` per claim it tested,
#: the verdicts being ``"violated"`` or ``"consistent"``; ``[]`` from a command that tests none.
#: :func:`_exit_code` turns it into the exit code.
Verdicts = list[tuple[str, str, str]]

#: What ``-o`` receives, in the help of every command that writes a report.
_OUTPUT_HELP = (
    "report directory: receives index.html, README.md with figures/, and results.json; created, "
    "or replaced when it holds an earlier report (a directory with other files is refused)"
)

#: Seconds between two progress lines of a bar when stderr is not a terminal.
PROGRESS_INTERVAL = 5.0


class _UsageError(Exception):
    """A command-line mistake; reported as one line with exit code 1."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{message} (see '{self.prog} --help')")


def _parse_param(text: str) -> tuple[str, Any]:
    """``key=value`` with ``value`` read as a TOML value (``1``, ``0.5``, ``"x"``, ``{...}``);
    a value that is no TOML is taken as a string."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ValueError(f"--param must look like key=value, got {text!r}")
    try:
        return key, tomllib.loads(f"v = {value}")["v"]
    except tomllib.TOMLDecodeError:
        return key, value.strip()
    except RecursionError:
        raise ValueError(f"--param {key}: the value is nested too deeply") from None


def _relation(text: str) -> str:
    """``--relation``: one of the neighbouring relations."""
    if text not in RELATIONS:
        raise argparse.ArgumentTypeError(f"must be one of {', '.join(RELATIONS)}, got {text!r}")
    return text


def _number(text: str) -> float | int:
    """A number of the command line: an integer when it is written as one (exact beyond
    ``2**53``), else a float."""
    try:
        return int(text)
    except ValueError:
        return float(text)


def _bounds(text: str) -> tuple[float, float]:
    """``--bounds LOWER,UPPER``: two finite numbers, lower below upper."""
    parts = text.split(",")
    try:
        lower, upper = (_number(p.strip()) for p in parts) if len(parts) == 2 else (0, 0)
    except ValueError:
        lower = upper = 0
    if not (len(parts) == 2 and math.isfinite(lower) and math.isfinite(upper) and lower < upper):
        raise argparse.ArgumentTypeError(
            f"must be LOWER,UPPER, two finite numbers with lower < upper, got {text!r}"
        )
    return lower, upper


def _numbers(text: str, what: str) -> list[float | int]:
    try:
        values = [_number(p.strip()) for p in text.split(",")]
    except ValueError:
        values = []
    if not values or not all(math.isfinite(v) and v > 0 for v in values):
        raise argparse.ArgumentTypeError(f"must be {what}, comma-separated, got {text!r}")
    return values


def _sizes(text: str) -> list[int]:
    """``--sizes N[,N...]``: whole numbers of records, 1 to ``MAX_SIZE``."""
    from dpaudit.libraries.battery import MAX_SIZE

    what = f"whole numbers of records from 1 to {MAX_SIZE:.0e}"
    values = _numbers(text, what)
    if not all(float(v).is_integer() and v <= MAX_SIZE for v in values):
        raise argparse.ArgumentTypeError(f"must be {what}, comma-separated, got {text!r}")
    return [int(v) for v in values]


def _epsilons(text: str) -> list[float]:
    """``--eps EPS[,EPS...]``: positive finite numbers."""
    return [float(v) for v in _numbers(text, "positive numbers")]


def _budget(text: str) -> Any:
    """``--budget``: a :class:`~dpaudit.audit.pair_search.SearchBudget` in words."""
    from dpaudit.audit.pair_search import SearchBudget

    try:
        return SearchBudget.parse(text, "it")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("it ")) from None


def _add_overrides(p: argparse.ArgumentParser) -> None:
    p.add_argument("--trials", type=int, help="trials per dataset (overrides the spec)")
    p.add_argument("--seed", type=int, help="root seed (overrides the spec)")
    p.add_argument("--n-jobs", type=int, dest="n_jobs", help="parallel workers, -1 = all cores")
    _add_quiet(p)


def _add_quiet(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress, no summary (a refuted claim's REFUTED: line is still printed)",
    )


def _add_scale_out(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--store",
        type=Path,
        help="directory that keeps finished batches; rerunning resumes from it",
    )
    p.add_argument(
        "--backend",
        choices=backends.BACKENDS,
        default="local",
        help="where trials run: this machine's processes, or a Dask cluster (default: local)",
    )
    p.add_argument(
        "--scheduler",
        help="Dask scheduler address tcp://HOST:PORT (--backend dask; default: a local cluster)",
    )
    p.add_argument(
        "--device",
        help="where trials run: numpy (default), or a PyTorch device cpu, cuda, cuda:N "
        "(overrides the spec; reference mechanisms only)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``dpaudit`` command."""
    parser = _Parser(
        prog="dpaudit",
        description="Empirical privacy auditing by Monte Carlo: measured trade-off curves "
        "against f-DP, Renyi DP and (eps, delta) theory.",
        epilog="Exit codes: 0 as expected, 1 input error, 3 a claim was violated.",
    )
    from dpaudit._core.provenance import __version__

    parser.add_argument("--version", action="version", version=f"dpaudit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser("run", help="run the audits of a TOML spec and write a report")
    run.add_argument("spec", type=Path, help="TOML spec with [[audit]] tables")
    run.add_argument("-o", "--output", type=Path, required=True, metavar="DIR", help=_OUTPUT_HELP)
    _add_overrides(run)
    _add_scale_out(run)
    run.add_argument(
        "--until-decided",
        action="store_true",
        dest="until_decided",
        help="audit each claim sequentially and stop as soon as an anytime-valid test decides "
        "it; an audit's trials become the cap (the last phase's trials per dataset)",
    )
    _add_fail_on_violation(run)
    run.set_defaults(func=_cmd_run)

    scores = scores_command.add_parser(sub, scores_command.run)
    _add_fail_on_violation(scores)

    report = sub.add_parser("report", help="draw a report again from results.json")
    report.add_argument("results", type=Path, help="results.json, or a report directory")
    report.add_argument(
        "-o", "--output", type=Path, required=True, metavar="DIR", help=_OUTPUT_HELP
    )
    _add_quiet(report)
    report.set_defaults(func=_cmd_report)

    suite = sub.add_parser("suite", help="audit the battery of reference mechanisms")
    suite.add_argument(
        "-o",
        "--output",
        type=Path,
        default=Path("reports"),
        metavar="DIR",
        help=_OUTPUT_HELP + " (default: reports)",
    )
    _add_overrides(suite)
    _add_scale_out(suite)
    _add_fail_on_violation(suite)
    suite.add_argument(
        "--print-spec", action="store_true", help="print the suite's TOML spec and exit"
    )
    suite.set_defaults(func=_cmd_suite)

    library = sub.add_parser(
        "library", help="audit the covered functions of a DP library against its own claims"
    )
    library.add_argument(
        "name",
        help="the library: diffprivlib, opendp, python-dp, pipeline-dp, smartnoise-sql, or one "
        "a plugin registers",
    )
    library.add_argument(
        "-o", "--output", type=Path, required=True, metavar="DIR", help=_OUTPUT_HELP
    )
    library.add_argument(
        "--trials", type=int, default=10_000, help="trials per dataset of each audit"
    )
    library.add_argument(
        "--quick", action="store_true", help="one candidate pair per row, no pilot audits"
    )
    library.add_argument(
        "--function",
        action="append",
        dest="functions",
        metavar="NAME",
        help="audit only this function (repeatable; names as in the table)",
    )
    library.add_argument(
        "--relation",
        action="append",
        dest="relations",
        type=_relation,
        metavar="RELATION",
        help="audit only this neighbouring relation: replace_one or add_remove (repeatable)",
    )
    library.add_argument(
        "--bounds",
        action="append",
        type=_bounds,
        metavar="LOWER,UPPER",
        help="search only these bounds (repeatable; functions without bounds keep their own)",
    )
    library.add_argument(
        "--sizes",
        type=_sizes,
        metavar="N[,N...]",
        help="search only these dataset sizes (records)",
    )
    library.add_argument(
        "--eps",
        type=_epsilons,
        dest="epsilons",
        metavar="EPS[,EPS...]",
        help="search only these epsilon values",
    )
    library.add_argument(
        "--budget",
        type=_budget,
        metavar="OUTPUTS|SECONDS",
        help="what the whole search may spend: outputs weighted by their cost (2e6), seconds "
        "(600s, 20m, 1h) or both (2e6,20m); default 120,000 outputs a row and 25m in all",
    )
    library.add_argument("--seed", type=int, default=0, help="root seed")
    library.add_argument(
        "--n-jobs",
        type=int,
        dest="n_jobs",
        default=-1,
        help="audits run at once, -1 = all cores (default; results are the same)",
    )
    library.add_argument(
        "--confidence", type=float, default=0.95, help="family-wise confidence (default 0.95)"
    )
    library.add_argument(
        "--all-figures",
        action="store_true",
        help="draw every row's figures in the report (default: the violated rows' and a "
        "summary figure)",
    )
    library.add_argument(
        "--until-decided",
        action="store_true",
        dest="until_decided",
        help="audit each row sequentially and stop it as soon as it is decided; --trials is "
        "then the cap",
    )
    _add_quiet(library)
    library.set_defaults(func=_cmd_library)

    lst = sub.add_parser("list", help="mechanism kinds, attack kinds, claim kinds, methods")
    lst.set_defaults(func=_cmd_list)

    bounds = sub.add_parser("bounds", help="theory table of a mechanism")
    bounds.add_argument("kind", help="mechanism kind, e.g. gaussian (see 'dpaudit list')")
    bounds.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="mechanism parameter; the value is read as TOML, e.g. sigma=1 or "
        "base='{kind=\"gaussian\", sigma=1}'",
    )
    bounds.add_argument(
        "--delta", type=float, action="append", help="delta at which to give eps (repeatable)"
    )
    bounds.add_argument(
        "--eps", type=float, action="append", help="eps at which to give delta (repeatable)"
    )
    bounds.add_argument(
        "--format",
        choices=("text", "csv", "json"),
        default="text",
        help="table on stdout: aligned text, CSV, or JSON {mechanism, rows} (default: text)",
    )
    bounds.set_defaults(func=_cmd_bounds)

    accountant = sub.add_parser(
        "audit-accountant",
        help="check accountants' delta(eps) against the sampled privacy loss",
    )
    accountant.add_argument("spec", type=Path, help="TOML spec with [[accountant_audit]] tables")
    accountant.add_argument(
        "-o", "--output", type=Path, required=True, metavar="DIR", help=_OUTPUT_HELP
    )
    _add_overrides(accountant)
    _add_fail_on_violation(accountant)
    accountant.set_defaults(func=_cmd_audit_accountant)

    flawed = sub.add_parser(
        "bench-flawed",
        help="audit every flawed mechanism: claimed eps, known true eps, certified bound",
    )
    flawed.add_argument("--trials", type=int, default=10**6, help="trials per dataset")
    flawed.add_argument("--seed", type=int, default=0, help="root seed")
    flawed.add_argument("--n-jobs", type=int, default=1, help="parallel workers (-1: all cores)")
    flawed.add_argument(
        "-o",
        "--csv",
        type=Path,
        default=None,
        dest="csv",
        metavar="FILE",
        help="also write the table as CSV to FILE",
    )
    _add_quiet(flawed)
    _add_fail_on_violation(flawed)
    flawed.set_defaults(func=_cmd_bench_flawed)
    return parser


def _add_fail_on_violation(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fail-on-violation",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="exit 3 when a claim does not reach its expected verdict, e.g. is refuted without "
        "the spec expecting it (default: on; --no-fail-on-violation exits 0, the report still "
        "shows the refutation)",
    )


def _store_directory(root: Path | None, name: str) -> Path | None:
    """``root/<name>``, the name made safe as a directory name (and kept distinct)."""
    if root is None:
        return None
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "audit"
    if safe != name:
        safe += "-" + hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
    return root / safe


def _check_outputs(args: argparse.Namespace) -> None:
    """Refuse, before any trial, an ``-o`` directory, a ``--store`` or a ``--csv`` file that
    cannot be written, a store inside the report directory (replacing a report replaces all of
    its directory) and a report directory inside the store (whose directories are the audits')."""
    csv = getattr(args, "csv", None)
    if csv is not None:
        if csv.is_dir() or not csv.parent.is_dir():
            raise ValueError(f"-o/--csv {csv}: not a file in an existing directory")
        check_writable_directory(f"-o/--csv {csv}: directory", csv.parent)
    output, store = getattr(args, "output", None), getattr(args, "store", None)
    if output is not None:
        reports.writer.check_output_directory(output, name="-o")
    if store is not None:
        check_writable_directory("--store", store)
        if output is not None:
            inner, outer = store.resolve(), output.resolve()
            if inner == outer or outer in inner.parents:
                raise ValueError(
                    f"--store {store} is inside -o {output}, which a report replaces as a "
                    "whole; keep the store elsewhere"
                )
            if inner in outer.parents:
                raise ValueError(
                    f"-o {output} is inside --store {store}, which holds a directory for each "
                    "audit's batches (an audit named like the report's directory would share "
                    "it); keep the report elsewhere"
                )


def _run_audits(
    audits: Sequence[specs.AuditSpec], output: Path, args: argparse.Namespace
) -> Verdicts:
    if args.scheduler is not None and args.backend != "dask":
        raise _UsageError("--scheduler needs --backend dask (see 'dpaudit run --help')")
    if args.scheduler is not None:
        backends.check_scheduler(args.scheduler)
    n_jobs = args.n_jobs
    n_workers = None
    if args.backend == "dask":
        # The cluster's workers do the work; --n-jobs sizes a local cluster.
        if n_jobs is not None:
            check_n_jobs("--n-jobs", n_jobs)
        if args.scheduler is None and n_jobs is not None and n_jobs > 0:
            n_workers = n_jobs
        n_jobs = -1
    audits = [
        a.with_overrides(trials=args.trials, seed=args.seed, n_jobs=n_jobs, device=args.device)
        for a in audits
    ]
    until_decided = bool(getattr(args, "until_decided", False))
    if until_decided and args.store is not None:
        raise _UsageError("--store does not apply to --until-decided (a sequential audit)")
    for spec in audits:  # before any audit runs, so that none is run in vain
        conflicts = spec.sequential_conflicts() if until_decided and spec.tested_claim() else []
        if conflicts:
            raise ValueError(
                f"{spec.origin}: --until-decided chooses thresholds, selection and device "
                f"itself; remove {', '.join(conflicts)}"
            )
        try:
            check_output_size(spec.mechanism, spec.pair)
            if spec.device is not None:
                check_support(spec.mechanism, spec.attack, spec.device)
                torch_device(spec.device)  # PyTorch there, and the GPU: before any progress
        except ValueError as exc:
            raise ValueError(f"{spec.origin}: {exc}") from None
    with backends.backend(args.backend, scheduler=args.scheduler, n_workers=n_workers):
        records = _audit_records(audits, args, until_decided)
    _writing(args, output, len(records))
    reports.write(records, output)
    if not args.quiet:
        _summary(records, output)
    return [
        (f"{r['name']}: {claim_label(r)}", str(r["verdict"]), str(r.get("expect", "consistent")))
        for r in records
        if r.get("claim")
    ]


class _ProgressLines(io.TextIOBase):
    """stderr for progress bars when it is not a terminal: the carriage-return updates of a bar
    become whole lines, the first at once and then at most one per ``interval`` seconds (and the
    bar's last one); text written as lines passes unchanged."""

    def __init__(self, stream: TextIO, interval: float) -> None:
        self._stream, self._interval = stream, interval
        self._line, self._bar, self._shown = "", False, True
        self._last = -math.inf

    def writable(self) -> bool:
        return True

    def flush(self) -> None:
        self._stream.flush()

    def write(self, text: str) -> int:
        for part in re.split(r"([\r\n])", text):
            if part == "\r":
                self._line, self._bar, self._shown = "", True, True
            elif part == "\n":
                if not self._shown:
                    self._emit()
                self._line, self._bar, self._shown = "", False, True
            elif part:
                self._line, self._shown = self._line + part, False
        due = time.monotonic() - self._last >= self._interval
        if self._bar and not self._shown and self._line.strip() and due:
            self._emit()
            self._last = time.monotonic()
        return len(text)

    def _emit(self) -> None:
        self._stream.write(self._line.rstrip() + "\n")
        self._stream.flush()
        self._shown = True


@contextlib.contextmanager
def _progress(args: argparse.Namespace) -> Iterator[bool]:
    """Whether to show progress (not with ``--quiet``); when stderr is not a terminal, it is
    meanwhile a :class:`_ProgressLines`, so that a log file gets lines, not a stream of
    carriage-return updates."""
    if args.quiet:
        yield False
    elif sys.stderr.isatty():
        yield True
    else:
        with contextlib.redirect_stderr(_ProgressLines(sys.stderr, PROGRESS_INTERVAL)):
            yield True


def _stage(index: int, count: int, name: str, what: str) -> None:
    print(f"dpaudit: [{index}/{count}] {name}: {what}", file=sys.stderr, flush=True)


def _size_text(spec: specs.AuditSpec) -> str:
    """The trials of an audit and, for a black box, the most outputs it draws from the foreign
    code, in words (calls, when each output costs one)."""
    text = f"{spec.trials:,} trials per dataset"
    if isinstance(spec.mechanism, BlackBox):
        text += f"; {spec.mechanism.cost(spec.most_outputs())}"
    return text


@contextlib.contextmanager
def _named(origin: str) -> Iterator[None]:
    """A ``ValueError`` raised while an audit runs names the audit, as one raised while its
    spec is read does (``file.toml: audit 2 (name): ...``)."""
    try:
        yield
    except specs.SpecError:
        raise
    except ValueError as exc:
        if not origin or str(exc).startswith(origin):
            raise
        raise ValueError(f"{origin}: {exc}") from None


def _audit_records(
    audits: Sequence[specs.AuditSpec], args: argparse.Namespace, until_decided: bool = False
) -> list[dict]:
    records = []
    for index, spec in enumerate(audits, 1):
        sequential = until_decided and spec.tested_claim() is not None
        if not args.quiet:
            what = _size_text(spec)
            if sequential:
                what = f"until decided, at most {what}"
            elif until_decided:
                what += " (no claim to decide: the full budget)"
            _stage(index, len(audits), spec.name, what)
        with _progress(args) as progress, _named(spec.origin):
            result = spec.run(
                progress=progress,
                store=_store_directory(args.store, spec.name),
                until_decided=sequential,
            )
        records.append(
            reports.build_record(
                result,
                name=spec.name,
                mechanism=spec.mechanism,
                claim=spec.claim,
                claim_table=spec.claim_table(),
                deltas=spec.deltas,
                expect=spec.expect,
                description=spec.description,
                spec=spec.table,
            )
        )
        if not args.quiet:
            _stage(index, len(audits), spec.name, reports.verdict_label(records[-1]))
    return records


def _writing(args: argparse.Namespace, output: Path, audits: int) -> None:
    """The progress line before a report is drawn (a figure per audit takes a while)."""
    if not args.quiet:
        plural = "s" if audits != 1 else ""
        print(
            f"dpaudit: writing the report of {audits:,} audit{plural} to {output}",
            file=sys.stderr,
            flush=True,
        )


def _summary(records: Sequence[dict[str, Any]], output: Path) -> None:
    for record in records:
        print(f"{record['name']}: {reports.verdict_sentence(record)}")
    print(f"report: {output / 'index.html'}")


def _cmd_run(args: argparse.Namespace) -> Verdicts:
    return _run_audits(specs.load(args.spec), args.output, args)


def _cmd_suite(args: argparse.Namespace) -> Verdicts:
    if args.print_spec:
        print(specs.SUITE_TOML, end="")
        return []
    return _run_audits(specs.suite(), args.output, args)


def _cmd_library(args: argparse.Namespace) -> Verdicts:
    from dpaudit import libraries

    check_n_jobs("--n-jobs", args.n_jobs)  # before the library is imported and planned
    plan = libraries.plan_battery(
        args.name,
        trials=args.trials,
        quick=args.quick,
        functions=args.functions,
        relations=args.relations,
        bounds=args.bounds,
        sizes=args.sizes,
        epsilons=args.epsilons,
        budget=args.budget,
        confidence=args.confidence,
        seed=args.seed,
        until_decided=args.until_decided,
    )
    lib = plan.library
    seeded = "" if lib.seeded else f"; {lib.name} cannot be seeded: {libraries.NOT_REPRODUCIBLE}"
    print(
        f"{lib.name} {lib.version()}: {len(plan.rows)} audits, {lib.cost(plan.draws)}, "
        f"budget {plan.budget.describe()}{seeded}",
        file=sys.stderr,
    )
    progress = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    battery = libraries.run_battery(plan, progress=progress, n_jobs=args.n_jobs)
    figures = "all" if args.all_figures else "violated"
    if not args.quiet:
        print(f"dpaudit: writing the report ({figures} figures)", file=sys.stderr, flush=True)
    writing = (
        None
        if args.quiet
        else (lambda line: print(f"dpaudit: report: {line}", file=sys.stderr, flush=True))
    )
    battery.write(args.output, figures=figures, progress=writing)
    findings, _ = battery.explained()
    section = battery.document()["battery"]
    if not args.quiet:
        print(battery.markdown())
        print(f"report: {args.output / 'index.html'}")
    for line in unrefuted_lines(section):
        print(line)
    return [(finding_text(f), f["verdict"], "consistent") for f in findings]


def _cmd_report(args: argparse.Namespace) -> Verdicts:
    document = reports.load_results(args.results)
    _writing(args, args.output, len(document["audits"]))
    reports.write(document, args.output)
    if not args.quiet:
        print(f"report: {args.output / 'index.html'}")
    return []


def _params_text(kind: specs.Kind) -> str:
    parts = []
    for name, param in kind.params.items():
        text = f"{name} ({param.expected}"
        if not param.required and param.default is not None:
            text += f", default {param.default}"
        elif not param.required:
            text += ", optional"
        parts.append(text + ")")
    return ", ".join(parts) or "no parameters"


def _cmd_list(args: argparse.Namespace) -> Verdicts:
    sections = (
        ("mechanism kinds", specs.MECHANISM_KINDS),
        ("attack kinds", specs.ATTACK_KINDS),
        ("claim kinds", specs.CLAIM_KINDS),
    )
    for title, registry in sections:
        print(f"{title}:")
        for name, kind in registry.items():
            print(f"  {name:<24}{kind.summary}")
            print(f"  {'':<24}{_params_text(kind)}")
        print()
    print("theory methods:")
    for method, kind in METHOD_KINDS.items():
        print(f"  {method:<24}{kind}")
    print()
    for table, keys in (
        ("audit", specs.AUDIT_KEYS),
        ("accountant_audit", specs.ACCOUNTANT_AUDIT_KEYS),
    ):
        print(f"keys of an [[{table}]] table:")
        for key, param in keys.items():
            if param.required:
                need = "required"
            elif param.default is None:
                need = "optional"
            else:
                default = list(param.default) if isinstance(param.default, tuple) else param.default
                need = f"default {default!r}"
            print(f"  {key:<24}{param.help} ({param.expected}; {need})")
        print()
    return []


def _cmd_bounds(args: argparse.Namespace) -> Verdicts:
    table: dict[str, Any] = {"kind": args.kind}
    for text in args.param:
        key, value = _parse_param(text)
        if key == "kind":
            raise ValueError("--param kind=... is not allowed: the kind is the first argument")
        table[key] = value
    mechanism = specs.build_mechanism(table, source="dpaudit bounds")
    deltas = [check_probability("--delta", d) for d in args.delta or [1e-5, 1e-6]]
    eps = [check_nonnegative("--eps", e) for e in args.eps or [0.5, 1.0, 2.0]]
    frame = reports.theory_table(mechanism, deltas=deltas, eps=eps)
    if args.format == "csv":
        print(frame.to_csv(index=False), end="")
    elif args.format == "json":
        rows = reports.records.to_json_value(frame.to_dict(orient="records"))
        print(json.dumps({"mechanism": mechanism.name, "rows": rows}, indent=1))
    else:
        if not frame["note"].astype(bool).any():
            frame = frame.drop(columns="note")
        print(mechanism.name)
        print(reports.tables.format_frame(frame))
    return []


def _cmd_audit_accountant(args: argparse.Namespace) -> Verdicts:
    import dataclasses

    from dpaudit.audit.accountant import run_accountant_spec
    from dpaudit.reports.accountants import expected_verdict, write_accountant_report

    audits = specs.load_accountant_audits(args.spec)
    if args.trials is not None:  # every override before the first audit runs
        check_trials("--trials", args.trials, minimum=2)
    if args.seed is not None:
        check_seed("--seed", args.seed)
    if args.n_jobs is not None:
        check_n_jobs("--n-jobs", args.n_jobs)
    overrides = {"trials": args.trials, "seed": args.seed, "n_jobs": args.n_jobs}
    records = []
    for index, spec in enumerate(audits, 1):
        spec = dataclasses.replace(spec, **{k: v for k, v in overrides.items() if v is not None})
        if not args.quiet:
            _stage(index, len(audits), spec.name, f"{spec.trials:,} trials")
        with _progress(args) as progress, _named(spec.origin):
            record = run_accountant_spec(spec, progress=progress)
        records.append(record)
        if not args.quiet:
            for name, sentence in record["summary"].items():
                print(f"{spec.name}: {name}: {sentence}")
    _writing(args, args.output, len(records))
    write_accountant_report(records, args.output)
    if not args.quiet:
        print(f"report: {args.output / 'index.html'}")
    return [
        (f"{r['name']}: {name}", c["status"], expected_verdict(r, name))
        for r in records
        for name, c in r["claims"].items()
        if c["status"] in ("violated", "consistent")
    ]


def _cmd_bench_flawed(args: argparse.Namespace) -> Verdicts:
    from dpaudit.audit.benchmark import run_benchmark
    from dpaudit.reports.tables import format_benchmark

    frame = run_benchmark(args.trials, seed=args.seed, n_jobs=args.n_jobs, progress=not args.quiet)
    if not args.quiet:
        print(format_benchmark(frame))
    if args.csv is not None:
        table = frame.to_csv(index=False).encode("utf-8")
        write_atomic(args.csv, lambda handle: handle.write(table))
    # A flawed mechanism left unflagged is a miss of the attack (its power), not a verdict.
    return [
        (
            f"{row.name}: eps = {row.claimed_epsilon:g}",
            "violated" if row.flagged else "consistent",
            "consistent" if row.correct else "violated",
        )
        for row in frame.itertuples()
        if row.correct or row.flagged
    ]


def _exit_code(verdicts: Verdicts, args: argparse.Namespace) -> int:
    """The exit code of every command (the rule of the module docstring). Names each claim
    whose verdict was not the expected one on a ``REFUTED:`` (or ``NOT REFUTED:``) line of
    stdout, also with ``--quiet``; unless ``--quiet``, says ``all verdicts as expected`` when
    every verdict was."""
    unexpected = [(claim, verdict) for claim, verdict, expected in verdicts if verdict != expected]
    for claim, verdict in unexpected:  # the verdict itself: printed with --quiet too
        if verdict == "violated":
            print(f"{REFUTED}{claim}")
        else:
            print(f"NOT REFUTED: {claim} (its refutation was expected)")
    if verdicts and not unexpected and not getattr(args, "quiet", False):
        print("all verdicts as expected")
    fail = getattr(args, "fail_on_violation", True)
    return EXIT_VIOLATION if unexpected and fail else EXIT_OK


def _run(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = None
    try:
        args = parser.parse_args(argv)
        with contextlib.nullcontext() if getattr(args, "quiet", False) else beating():
            _check_outputs(args)
            return _exit_code(args.func(args), args)
    except (_UsageError, ValueError, OSError) as exc:
        text = os_error_text(exc) if isinstance(exc, OSError) else str(exc)
        message = " ".join(text.split())
        print(f"dpaudit: error: {message}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        store = getattr(args, "store", None)
        kept = (
            f"; finished work is kept in {store}: the same command resumes from it"
            if store is not None
            else ""
        )
        print(f"dpaudit: interrupted; no report written{kept}", file=sys.stderr)
        return 130


def _interrupt(signum: int, frame: Any) -> None:
    """A ``SIGTERM`` handler: stop as an interrupt does."""
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``dpaudit`` with ``argv`` (default: ``sys.argv[1:]``); return the exit code.

    Warnings (e.g. a damaged file in a ``--store``, drawn again) are shown after a command that
    succeeds, as ``dpaudit: warning: ...``, one line each; after an error only the error's one
    line is shown. Floating-point notices of numpy (``overflow encountered in ...``) are not
    shown: results are checked for what they could mean.

    ``SIGTERM`` (what ``kill``, a CI runner or a job scheduler sends) stops a command as Ctrl-C
    does: no report is written, nothing is left half-written (temporary files are removed on
    the way out), finished batches stay in a ``--store``, and the exit code is 130.
    """
    # Signal handlers belong to the main thread (main() called from another thread keeps its).
    handle = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGTERM)
    if handle:
        signal.signal(signal.SIGTERM, _interrupt)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.filterwarnings("ignore", message=".* encountered in ", category=RuntimeWarning)
            code = _run(argv)
    finally:
        if handle:
            signal.signal(signal.SIGTERM, previous)
    if code in (EXIT_OK, EXIT_VIOLATION):
        for shown in dict.fromkeys(" ".join(str(w.message).split()) for w in caught):
            print(f"dpaudit: warning: {shown}", file=sys.stderr)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
