"""``dpaudit scores FILE -o DIR``: audit attack scores computed elsewhere.

Input: one table (CSV, Parquet when pyarrow is installed, ``.npz``) with a score column and a
membership column (1 = the run/canary was "in", ``D_prime``; 0 = "out", ``D``), or two files
(``--nonmembers FILE`` for the scores on ``D`` and ``FILE`` for those on ``D_prime``; CSV column,
``.npy`` or one-column tables; ``--out`` is the old, deprecated spelling of ``--nonmembers``).
Many-run scores give :func:`dpaudit.audit.scores.audit_scores` and a full report; ``--one-run``
treats the rows as canaries of one training run (:func:`dpaudit.audit.one_run.audit_one_run`) and
writes its report (:func:`dpaudit.reports.one_run.write_one_run`).
Exit codes as for ``run`` (:mod:`dpaudit.cli` decides them from what :func:`run` returns): 0, 1
(input error: one line naming the file or option, nothing written), 3 (a given claim
``--claim-mu`` is refuted).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import warnings
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dpaudit._core.heartbeat import doing
from dpaudit._core.numbers import format_number
from dpaudit._core.validation import (
    check_input_file,
    check_integer,
    check_probability,
    real_scores,
)
from dpaudit.bounds.pld import MAX_COMPOSITIONS

if TYPE_CHECKING:  # pandas is imported where a table is built
    import pandas as pd

__all__ = ["add_parser", "load_table", "membership_column"]

#: Each side of a many-run audit needs this many scores.
MIN_SCORES = 4

#: A one-run audit needs this many canaries (rows).
MIN_CANARIES = 2

#: From this many scores on, the command says on stderr what it is doing while it works (the
#: audit and its report then take seconds to a minute), as the other commands' stage lines do.
STAGED_SCORES = 100_000

#: Widest range of finite scores: the score grid adds half the range on each side, and its
#: width must stay a finite float.
MAX_SPREAD = float(np.finfo(float).max) / 4


def _read(path: Path) -> pd.DataFrame:
    """The table in ``path``; any failure to read it is one ``ValueError`` naming the file."""
    check_input_file(path, "scores file")
    try:
        return _read_table(path)
    except (ValueError, OSError, EOFError, KeyError, zipfile.BadZipFile, MemoryError) as exc:
        if str(exc).startswith(f"{path}: "):
            raise
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise ValueError(f"{path}: cannot be read as a {path.suffix} file ({reason})") from None


def _read_table(path: Path) -> pd.DataFrame:
    import pandas as pd

    suffix = path.suffix.lower()
    if suffix == ".csv":
        return pd.read_csv(path)
    if suffix == ".parquet":
        if importlib.util.find_spec("pyarrow") is None:
            raise ValueError(f"{path}: reading Parquet needs pyarrow (pip install pyarrow)")
        return pd.read_parquet(path)
    if suffix in (".npy", ".npz"):
        loaded = np.load(path, allow_pickle=False)
        if isinstance(loaded, np.lib.npyio.NpzFile):
            with loaded as data:
                if suffix == ".npy":
                    raise ValueError(f"{path}: an .npz archive, not an .npy array; name it .npz")
                return pd.DataFrame({k: _column_array(path, k, data[k]) for k in data.files})
        if suffix == ".npz":
            raise ValueError(f"{path}: a single .npy array, not an .npz archive; name it .npy")
        return pd.DataFrame({"score": _column_array(path, "score", loaded)})
    raise ValueError(f"{path}: unknown file type {suffix!r} (use .csv, .parquet, .npy or .npz)")


def _column_array(path: Path, name: str, array: np.ndarray) -> np.ndarray:
    """A stored array as a column: one number per row, shape ``(n,)`` or ``(n, 1)``. A table of
    several columns, a scalar, or values that are no numbers (dates, text, records) are refused
    rather than flattened or converted."""
    what = f"{path}: array {name!r}" if path.suffix.lower() == ".npz" else f"{path}: the array"
    if array.ndim == 2 and array.shape[1] == 1:
        array = array[:, 0]
    if array.ndim != 1:
        raise ValueError(
            f"{what} has shape {array.shape}; expected one number per row, shape (n,) or (n, 1)"
        )
    if array.dtype.kind not in "biufc":
        raise ValueError(f"{what} holds {array.dtype} values, not numbers")
    return array


def _column(frame: pd.DataFrame, name: str, path: Path) -> pd.Series:
    if name not in frame.columns:
        columns = ", ".join(map(str, frame.columns))
        raise ValueError(f"{path}: no column {name!r} (columns: {columns})")
    return frame[name]


def _numeric(series: pd.Series, what: str) -> pd.Series:
    """``series`` as numbers (``NaN`` where a value is no number); a number beyond the float
    range, such as a 400-digit integer in a CSV file, is a ``ValueError`` naming ``what``."""
    import pandas as pd

    try:
        return pd.to_numeric(series, errors="coerce")
    except OverflowError:
        raise ValueError(f"{what} holds a number beyond the float range (1.8e308)") from None


def _scores(series: pd.Series, name: str, path: Path) -> np.ndarray:
    values = real_scores(
        f"{path}: column {name!r}", _numeric(series, f"{path}: column {name!r}").to_numpy()
    )
    if np.isnan(values).any():
        raise ValueError(f"{path}: column {name!r} has missing or non-numeric scores")
    finite = values[np.isfinite(values)]
    with np.errstate(over="ignore"):
        spread = float(finite.max() - finite.min()) if finite.size else 0.0
    if not spread <= MAX_SPREAD:
        raise ValueError(
            f"{path}: column {name!r}: the scores span {finite.min():g} to {finite.max():g}, "
            f"a range wider than {MAX_SPREAD:.3g}; rescale them"
        )
    return values


def _enough(count: int, what: str, minimum: int = MIN_SCORES) -> None:
    if count < minimum:
        raise ValueError(f"{what}: needs at least {minimum} scores, got {count}")


def membership_column(series: pd.Series, name: str) -> np.ndarray:
    """The membership column as 0/1 integers; a one-line error naming it otherwise."""
    if series.isna().any():
        raise ValueError(f"membership column {name!r} has missing values")
    values = _numeric(series, f"membership column {name!r}")
    if values.isna().any() or not values.isin([0, 1]).all():
        raise ValueError(f"membership column {name!r} must contain only 0 and 1")
    return values.to_numpy().astype(np.int8)


def load_table(args: argparse.Namespace) -> tuple[np.ndarray, np.ndarray]:
    """``(scores, membership)`` from the command's files."""
    if args.out is not None:
        if args.nonmembers is not None:
            raise ValueError("--out is the old spelling of --nonmembers: give one of them")
        warnings.warn(
            "--out is deprecated (it names an input, not the output); use --nonmembers",
            FutureWarning,
            stacklevel=2,
        )
        args.nonmembers = args.out
    frame = _read(args.file)
    if args.nonmembers is None:
        scores = _scores(_column(frame, args.score_column, args.file), args.score_column, args.file)
        try:
            member = membership_column(
                _column(frame, args.member_column, args.file), args.member_column
            )
        except ValueError as exc:
            if str(exc).startswith(f"{args.file}: "):
                raise
            raise ValueError(f"{args.file}: {exc}") from None
        return scores, member
    other = _read(args.nonmembers)
    column = args.score_column
    s_in = _scores(_column(frame, column, args.file), column, args.file)
    s_out = _scores(_column(other, column, args.nonmembers), column, args.nonmembers)
    member = np.concatenate([np.zeros(s_out.size, np.int8), np.ones(s_in.size, np.int8)])
    return np.concatenate([s_out, s_in]), member


def add_parser(sub: Any, func: Any) -> argparse.ArgumentParser:
    """Add the ``scores`` sub-command to ``sub`` (an argparse sub-parsers object); return it."""
    p = sub.add_parser("scores", help="audit attack scores computed elsewhere")
    p.add_argument(
        "file",
        type=Path,
        help="scores table (.csv/.parquet/.npz/.npy); with --nonmembers, the members' scores",
    )
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        required=True,
        metavar="DIR",
        help="report directory (an earlier report there is replaced); the inputs are FILE and "
        "--nonmembers",
    )
    p.add_argument(
        "--nonmembers",
        type=Path,
        metavar="FILE",
        help="second input file: the scores on D (non-members, 'out'); FILE then holds those on "
        "D' (members, 'in')",
    )
    p.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--score-column", default="score", help="score column (default: score)")
    p.add_argument(
        "--member-column", default="member", help="membership column, 0/1 (default: member)"
    )
    p.add_argument("--one-run", action="store_true", help="rows are canaries of one run")
    p.add_argument("--method", choices=("fdp", "steinke"), help="one-run test (default fdp)")
    p.add_argument(
        "--family",
        choices=("gdp", "dpsgd"),
        help="one run, fdp: test a parametric family the mechanism is declared to belong to "
        "(its eps then assumes it); default: the (eps, delta) curves, valid for any mechanism",
    )
    p.add_argument(
        "--sample-rate",
        type=float,
        help="with --steps and --family dpsgd: the audited DP-SGD run's Poisson sampling rate",
    )
    p.add_argument("--steps", type=int, help="DP-SGD steps of the audited run (with --sample-rate)")
    p.add_argument(
        "--inclusion",
        type=float,
        default=0.5,
        help="one run: the probability of the coin that included each canary (default 0.5)",
    )
    p.add_argument("--confidence", type=float, default=0.95, help="level (default 0.95)")
    p.add_argument("--delta", type=float, default=1e-5, help="delta of eps (default 1e-5)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random splits")
    p.add_argument("--claim-mu", type=float, help="claimed Gaussian DP mu; exit 3 if refuted")
    p.add_argument(
        "--threshold",
        type=float,
        action="append",
        help="a threshold fixed before seeing the scores (repeatable; 0.5 for 0/1 scores): "
        "every score then evaluates",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no summary on stdout")
    p.set_defaults(func=func)
    return p


def run(args: argparse.Namespace) -> list[tuple[str, str, str]]:
    """Run the ``scores`` command; return its verdicts as :data:`dpaudit.cli.Verdicts` does:
    ``[(claim, "violated" | "consistent", "consistent")]`` with ``--claim-mu``, else ``[]``."""
    from dpaudit import reports
    from dpaudit.audit.one_run import audit_one_run
    from dpaudit.audit.scores import audit_scores
    from dpaudit.audit.strategies import FEW_VALUES
    from dpaudit.bounds.gaussian_dp import gdp
    from dpaudit.reports.one_run import write_one_run
    from dpaudit.reports.text import level_per_test

    down: dict[str, Any] = {"rounding": "down"}

    # Every option is checked before the files are read (they may be large).
    if args.claim_mu is not None and not (np.isfinite(args.claim_mu) and args.claim_mu > 0):
        raise ValueError(f"--claim-mu must be a positive number, got {args.claim_mu}")
    check_probability("--confidence", args.confidence, low_open=True, high_open=True)
    check_probability("--delta", args.delta, high_open=True)
    if args.one_run and args.threshold:
        raise ValueError("--threshold applies to scores of many models, not to --one-run")
    one_run_only = {
        "--method": args.method,
        "--family": args.family,
        "--sample-rate": args.sample_rate,
        "--steps": args.steps,
    }
    given = [name for name, value in one_run_only.items() if value is not None]
    if given and not args.one_run:
        raise ValueError(f"{', '.join(given)}: only with --one-run (the canaries of one run)")
    args.method = args.method or "fdp"
    if args.one_run:
        if (args.sample_rate is None) != (args.steps is None):
            raise ValueError("--sample-rate and --steps go together")
        if (args.steps is not None) != (args.family == "dpsgd"):
            raise ValueError("--family dpsgd needs --sample-rate and --steps, and they need it")
        if args.steps is not None:
            check_probability("--sample-rate", args.sample_rate, low_open=True)
            check_integer("--steps", args.steps, minimum=1, maximum=MAX_COMPOSITIONS)
        if args.claim_mu is not None and args.method != "fdp":
            raise ValueError("--claim-mu needs --method fdp (the steinke test refutes no mu)")
        check_probability("--inclusion", args.inclusion, low_open=True, high_open=True)
    elif args.inclusion != 0.5:
        raise ValueError("--inclusion applies to --one-run")
    with doing(f"reading {args.file}"):
        scores, member = load_table(args)

    def stage(what: str) -> None:
        if not args.quiet and scores.size >= STAGED_SCORES:
            # The stage line of the other commands: this command's one stage.
            line = f"dpaudit: [1/1] scores: {scores.size:,} scores: {what}"
            print(line, file=sys.stderr, flush=True)

    stage("auditing")
    if args.one_run:
        _enough(scores.size, f"{args.file}: canaries (rows)", MIN_CANARIES)
        with doing(f"auditing one run of {scores.size:,} canaries"):
            result = audit_one_run(
                scores,
                member,
                delta=args.delta,
                confidence=args.confidence,
                method=args.method,
                family=args.family,
                sample_rate=args.sample_rate,
                steps=args.steps,
                inclusion=args.inclusion,
                seed=args.seed,
            )
            refuted = args.claim_mu is not None and result.mu_lower_bound() > args.claim_mu
        stage("writing the report")
        with doing(f"writing the report to {args.output}"):
            write_one_run({f"one run: {args.file.name}": result}, args.output)
        if not args.quiet:
            mu = "" if result.mu is None else f", mu >= {format_number(result.mu, **down)}"
            print(
                f"one run ({result.method}, {result.label}, {result.confidence:.0%}): eps >= "
                f"{format_number(result.epsilon_lower_bound(), **down)} at "
                f"delta={result.delta:g}{mu} ({result.correct}/{result.guesses} correct guesses, "
                f"eps ceiling {format_number(result.epsilon_ceiling(), rounding='up')}); "
                f"report: {args.output / 'index.html'}"
            )
        if args.claim_mu is None:
            return []
        claim = f"one run: {args.file.name}: {args.claim_mu:g}-GDP"
        return [(claim, "violated" if refuted else "consistent", "consistent")]
    _enough(int((member == 0).sum()), f"{args.nonmembers or args.file}: non-members (D)")
    _enough(int((member == 1).sum()), f"{args.file}: members (D')")
    with doing(f"auditing {scores.size:,} scores"):
        result = audit_scores(
            scores[member == 0],
            scores[member == 1],
            confidence=args.confidence,
            seed=args.seed,
            thresholds=args.threshold,
        )
    claim = None if args.claim_mu is None else gdp(args.claim_mu)
    stage("writing the report")
    with doing(f"computing the report's bounds and curves ({scores.size:,} scores)"):
        record = reports.build_record(
            result,
            name=f"scores: {args.file.name}",
            claim=claim,
            claim_table=None if claim is None else {"kind": "gdp", "mu": args.claim_mu},
            deltas=(args.delta,),
        )
    with doing(f"writing the report to {args.output}"):
        reports.write(record, args.output)
    if not args.quiet:
        # The report's numbers: one family of tests sharing the confidence (build_record).
        eps = next(iter(record["epsilon_lower_bounds"].values()))
        each = level_per_test(record)
        together = (
            f"{record['confidence']:.0%} for the {record['family']['tests']} tests together, "
            f"each at {each}"
            if each
            else f"{record['confidence']:.0%}"
        )
        print(
            f"scores: eps >= {format_number(eps, **down)} at delta={args.delta:g}, mu >= "
            f"{format_number(record['mu_lower_bound'], **down)} ({together}; ceiling for this "
            f"n: mu {format_number(record['mu_ceiling'], rounding='up')}); "
            f"report: {args.output / 'index.html'}"
        )
        values = np.unique(scores).size
        if args.threshold is None and values <= FEW_VALUES:
            print(
                f"note: the scores take only {values} distinct values; if these were known "
                "before the scores were drawn, declaring the few thresholds that matter "
                "(--threshold) certifies more than testing every value"
            )
    if claim is None:
        return []
    return [(f"scores: {args.file.name}: {args.claim_mu:g}-GDP", record["verdict"], "consistent")]
