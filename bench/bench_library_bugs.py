"""Real bugs as a benchmark: does dpaudit find, from outputs alone, the publicly reported privacy
bugs of installable DP library versions, and does it stay quiet on the versions that fix them?

The corpus is ``library_bugs.toml`` beside this script (each bug: library, version with the bug,
version with the fix, public report, function, what makes it visible, which pair generators'
refutations are this bug, and whether it is detectable from outputs at all). Every version is
installed in a virtualenv of its own under the cache directory (``--cache``, default
``$DPAUDIT_BENCH_CACHE`` or ``~/.cache/dpaudit-bench/library-bugs``, never inside the
repository), together with this checkout of dpaudit (editable; a virtualenv made for another
checkout gets this one), and audited there with dpaudit's search as a user gets it, within
``--budget`` per audit:

- ``recipe = "battery"``: ``dpaudit library LIBRARY --function F --budget B --trials T``;
- any other recipe: a battery of one function written here with the Python API
  (:class:`dpaudit.libraries.battery.Library`, run by :func:`~dpaudit.libraries.battery.plan`
  and :func:`~dpaudit.libraries.battery.run` as ``dpaudit library`` runs one), the function
  declaring its input space as the library batteries declare theirs: the bounds, sizes,
  ``epsilon`` and special records its signature admits, nothing taken from a report.

A bug is found when its function's claim is refuted (a ``REFUTED:`` line) by a row of one of
the bug's ``shown_by`` generators (a refutation by another generator is another bug). It prints
one line per audit (the refuting generators, whether the refutation is this bug, seconds), then
recall over all bugs and over the bugs detectable from outputs (``detectable = false`` in the
corpus says why one is not, and is excluded from that denominator only), the time per bug, and
the refutations on fixed versions (the target is none). ``--guided`` pins the same search to
each bug's ``reported`` bounds and size at ``eps = 1``: a check that the bug shows in outputs
at all, which is not dpaudit finding it.

    python bench/bench_library_bugs.py                    # every bug, 2,000 trials, 10m budget
    python bench/bench_library_bugs.py --budget 5m --only opendp-sized-float-sum-sensitivity
    python bench/bench_library_bugs.py --guided           # pinned where each bug shows
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CORPUS = HERE / "library_bugs.toml"

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


def corpus() -> list[dict[str, Any]]:
    """The bugs of ``library_bugs.toml``."""
    return tomllib.loads(CORPUS.read_text(encoding="utf-8"))["bug"]


def _cache(path: str | None) -> Path:
    default = os.environ.get("DPAUDIT_BENCH_CACHE") or Path.home() / ".cache" / "dpaudit-bench"
    root = Path(path) if path else Path(default) / "library-bugs"
    if REPO in root.resolve().parents or root.resolve() == REPO:
        raise SystemExit(f"--cache {root}: keep the virtualenvs outside the repository")
    return root


def _environment(root: Path, bug: dict[str, Any], version: str) -> tuple[Path, float]:
    """The virtualenv of ``package==version`` (made once, then reused) and the seconds spent
    making it now (0 when it was there).

    When the bug needs nothing beyond dpaudit's own requirements and this script runs in a
    virtualenv that has dpaudit, that virtualenv is copied as hard links (fast, no disk) and the
    library's version installed into the copy; otherwise a fresh virtualenv gets this checkout
    of dpaudit (editable) and the bug's ``install`` requirements first. A virtualenv made for
    another checkout (or before this checkout's ``pyproject.toml`` changed) gets this checkout
    installed again, editable, so the audit runs this code.
    """
    extra = "-".join(sorted(bug["install"])).replace("<", "lt").replace(">", "gt")
    name = f"{bug['package']}-{version}" + (f"-{extra}" if extra else "")
    venv = root / name
    python = venv / "bin" / "python"
    started = time.perf_counter()
    requirement = f"{bug['package']}=={version}"
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    if (venv / ".ready").exists():
        if (venv / ".dpaudit").exists() and (venv / ".dpaudit").read_text() == _checkout():
            return python, 0.0
        # made for another checkout of dpaudit (or an older pyproject.toml): this one, editable
        _pip([*pip, "-e", str(REPO), *bug["install"]], requirement)
        (venv / ".dpaudit").write_text(_checkout())
        return python, time.perf_counter() - started
    here = Path(sys.prefix)
    if venv.exists():
        shutil.rmtree(venv)
    if not bug["install"] and here != Path(sys.base_prefix) and _has_dpaudit():
        shutil.copytree(here, venv, symlinks=True, copy_function=os.link)
        commands = [
            [*pip, *(["--no-deps"] if bug["no_deps"] else []), requirement],
            [*pip, "--no-deps", "-e", str(REPO)],
        ]
    else:
        commands = [
            [sys.executable, "-m", "venv", "--clear", str(venv)],
            [*pip, "-e", str(REPO), *bug["install"]],
            [*pip, *(["--no-deps"] if bug["no_deps"] else []), requirement],
        ]
    for command in commands:
        _pip(command, requirement)
    (venv / ".ready").write_text(requirement + "\n")
    (venv / ".dpaudit").write_text(_checkout())
    return python, time.perf_counter() - started


def _pip(command: list[str], requirement: str) -> None:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        tail = " ".join(done.stderr.split()[-60:])
        raise RuntimeError(f"installing {requirement} failed: {tail}")


def _checkout() -> str:
    """This checkout as a virtualenv's dpaudit must be: its path and its ``pyproject.toml``
    (whose entry points, e.g. the libraries of ``dpaudit library``, an editable install copies
    into the virtualenv)."""
    import hashlib

    digest = hashlib.sha256((REPO / "pyproject.toml").read_bytes()).hexdigest()
    return f"{REPO}\n{digest}\n"


def _has_dpaudit() -> bool:
    """Whether this interpreter imports this checkout's dpaudit."""
    import importlib.util

    spec = importlib.util.find_spec("dpaudit")
    return spec is not None and spec.origin is not None and REPO in Path(spec.origin).parents


# --------------------------------------------------------------------------- audits (workers)


def _claims(eps: float, relations: tuple[str, ...]) -> dict[str, Any]:
    """``(eps, 0)``-DP under each of ``relations``."""
    from dpaudit.libraries.battery import approx_dp_claim

    return {relation: approx_dp_claim(eps) for relation in relations}


def _no_pairs(relation: str) -> dict[str, Any]:
    """A searched function's pairs at its default setting: none beyond its space's."""
    return {}


def _searched(
    name: str,
    release_at: Callable[[Any], Any],
    claims_at: Callable[[Any], dict[str, Any]],
    space: Any,
    *,
    stated: bool = True,
) -> Any:
    """A function written here, searched over ``space`` as the library batteries search theirs:
    ``release_at(setting)`` is its release function at a setting of the space (its bounds,
    records, ``epsilon``), ``claims_at(setting)`` its claims there."""
    from dpaudit.libraries.battery import Function

    def at(setting: Any) -> Any:
        return Function(
            f"{name} at {setting.describe()}",
            lambda: release_at(setting),
            claims_at(setting),
            _no_pairs,
            stated=stated,
        )

    default = space.default
    return Function(
        name,
        lambda: release_at(default),
        claims_at(default),
        _no_pairs,
        stated=stated,
        space=space,
        at=at,
    )


def _space(
    *,
    relations: tuple[str, ...],
    generators: tuple[str, ...],
    specials: tuple[str, ...],
    sizes: tuple[int, ...],
    records_per_output: float,
    accumulate: Callable[[Any], Any] | None = None,
) -> Any:
    """The input space of a function of one bounded float column (records in ``bounds``), as
    the library batteries declare theirs: the default 10 records in ``(0, 1)`` at ``eps = 1``,
    bounds at the batteries' offsets (zero to ``2**1000``, both signs) and widths (1 and
    ``2**20``, and 4 and 1024 ulps of the offset), the ``sizes`` the function's cost allows,
    ``epsilon`` in 0.1, 1, 5, and the special records the function accepts without an error."""
    from dpaudit.libraries.battery import EPSILONS, OFFSETS, WIDTH_ULPS, WIDTHS
    from dpaudit.mechanisms.inputs import InputSpace, Setting

    return InputSpace(
        default=Setting((0.0, 1.0), 10, "float64", 1.0),
        offsets=OFFSETS,
        widths=WIDTHS,
        width_ulps=WIDTH_ULPS,
        sizes=sizes,
        epsilons=EPSILONS,
        specials=specials,
        relations=relations,
        generators=generators,
        accumulate=accumulate,
        records_per_output=records_per_output,
    )


#: Dataset sizes searched for a function whose cost grows with its records (a model fit, a
#: covariance through pandas), and for one of cheap records (a sum).
FEW, MANY = (1, 10, 100, 1_000), (1, 10, 100, 1_000, 10_000, 100_000, 1_000_000)
#: The specials every float function here is tried with when it accepts them.
ALL_SPECIALS = ("nan", "inf", "-inf", "-0", "subnormal", "outside")


def smartnoise_covariance() -> Any:
    """``DPcovariance(n, cols, rng, global_eps).release(data)`` of smartnoise-synth: the
    covariance of two columns (each record's value in both), replace-one neighbours (``n`` is
    given), searched over its bounds ``rng``, ``n``, ``global_eps`` and the special records it
    accepts (all of them: it raises on none)."""
    import importlib.util

    import numpy as np
    import pandas as pd

    from dpaudit.libraries.battery import Library

    # The package's own __init__ imports torch; the audited module needs only numpy and pandas.
    spec = importlib.util.find_spec("snsynth")
    path = Path(spec.submodule_search_locations[0]) / "models" / "dp_covariance.py"
    module_spec = importlib.util.spec_from_file_location("dp_covariance", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)

    def release_at(setting: Any) -> Callable[..., Any]:
        def fn(dataset: Any, size: int, rng: Any) -> Any:
            values = np.asarray(dataset, float)
            frame = pd.DataFrame({"a": values, "b": values})
            # the module draws from numpy's global state, which only a global seed reaches
            np.random.seed(int(rng.integers(2**31)))  # noqa: NPY002
            out = []
            for _ in range(size):
                bounds = pd.DataFrame({"a": setting.bounds, "b": setting.bounds})  # low, high
                model = module.DPcovariance(setting.size, ["a", "b"], bounds, setting.epsilon)
                out.append(model.release(frame.copy()))
            return np.asarray(out, dtype=float)

        return fn

    function = _searched(
        "DPcovariance.release(2 columns)",
        release_at,
        lambda setting: _claims(setting.epsilon, ("replace_one",)),
        _space(
            relations=("replace_one",),
            generators=("boundary", "special", "random"),
            specials=ALL_SPECIALS,
            sizes=FEW,
            records_per_output=200.0,
        ),
    )
    return Library("smartnoise-synth", "pandas", "smartnoise-synth", lambda: [function], True, True)


def diffprivlib_linear_regression() -> Any:
    """``LinearRegression(epsilon, bounds_X, bounds_y).fit(X, y)``: ``coef_`` and
    ``intercept_`` of one feature (each record's value as both ``x`` and ``y``, both bounded by
    the setting's bounds), searched over its bounds, records, ``epsilon`` and the special
    records it accepts; diffprivlib is silent about its relation."""
    import numpy as np

    from dpaudit.libraries.battery import Library

    def release_at(setting: Any) -> Callable[..., Any]:
        from diffprivlib.accountant import BudgetAccountant
        from diffprivlib.models import LinearRegression

        def fn(dataset: Any, size: int, rng: Any) -> Any:
            data = np.asarray(dataset, float)
            state = np.random.RandomState(int(rng.integers(2**31)))
            out = []
            for _ in range(size):
                model = LinearRegression(
                    epsilon=setting.epsilon,
                    bounds_X=setting.bounds,
                    bounds_y=setting.bounds,
                    random_state=state,
                    accountant=BudgetAccountant(),
                ).fit(data[:, None], data)
                out.append([model.coef_[0], model.intercept_])
            return np.asarray(out, dtype=float)

        return fn

    function = _searched(
        "models.LinearRegression(1 feature)",
        release_at,
        lambda setting: _claims(setting.epsilon, ("replace_one", "add_remove")),
        _space(
            relations=("replace_one", "add_remove"),
            generators=("boundary", "special", "random"),
            specials=ALL_SPECIALS,
            sizes=FEW,
            records_per_output=200.0,
        ),
        stated=False,
    )
    return Library("diffprivlib", "diffprivlib", "diffprivlib", lambda: [function], True, True)


def _opendp_claimed(measurement: Any, d_in: int) -> float:
    """The ``eps`` OpenDP states at ``d_in``: its privacy map, or (before maps, OpenDP 0.4) the
    smallest ``eps`` its relation accepts, by bisection."""
    if hasattr(measurement, "map"):
        return float(measurement.map(d_in))
    low, high = 0.0, 1.0
    while not measurement.check(d_in, high):
        high *= 2.0
    for _ in range(60):
        middle = (low + high) / 2.0
        low, high = (low, middle) if measurement.check(d_in, middle) else (middle, high)
    return high


def _opendp_library(name: str, build: Callable[[Any, float], Any]) -> Any:
    """A battery of one OpenDP measurement ``build(setting, scale)`` on sized float records
    (replace-one neighbours, ``d_in = 2``), searched over its bounds, records and ``epsilon``:
    at each setting its noise is scaled so that OpenDP states the setting's ``epsilon`` (as a
    user calibrates it), and the claim is what OpenDP states. Its domain admits no record
    outside its bounds (no special records); the rounding generator sums as ``numpy.sum``, as
    the OpenDP battery's does."""
    import numpy as np

    from dpaudit.libraries.battery import Library
    from dpaudit.libraries.opendp import RECORDS_PER_OUTPUT

    @functools.cache  # built once per setting, for its release and for its claim
    def measurement_at(setting: Any) -> Any:
        # The stated eps of a Laplace measurement is inversely proportional to its scale.
        scale = _opendp_claimed(build(setting, 1.0), 2) / setting.epsilon
        return build(setting, scale)

    def release_at(setting: Any) -> Callable[..., Any]:
        measurement = measurement_at(setting)

        def fn(dataset: Any, size: int, rng: Any) -> Any:
            data = [float(x) for x in np.asarray(dataset, float).ravel()]
            return np.asarray([measurement(data) for _ in range(size)], dtype=float)

        return fn

    def claims_at(setting: Any) -> dict[str, Any]:
        return _claims(_opendp_claimed(measurement_at(setting), 2), ("replace_one",))

    function = _searched(
        name,
        release_at,
        claims_at,
        _space(
            relations=("replace_one",),
            generators=("boundary", "rounding", "random"),
            specials=(),
            sizes=MANY,
            records_per_output=RECORDS_PER_OUTPUT,
            accumulate=np.sum,
        ),
    )
    return Library("opendp", "opendp", "opendp", lambda: [function], False, True)


def opendp_sized_float_sum() -> Any:
    """``make_sized_bounded_sum(n, bounds, T=float) >> make_base_laplace(scale)`` of OpenDP 0.4
    and 0.5 (their modules ``opendp.trans`` and ``opendp.meas``)."""

    def build(setting: Any, scale: float) -> Any:
        from opendp.meas import make_base_laplace
        from opendp.mod import enable_features
        from opendp.trans import make_sized_bounded_sum

        enable_features("contrib", "floating-point")
        bounds = tuple(float(b) for b in setting.bounds)
        return make_sized_bounded_sum(setting.size, bounds, T=float) >> make_base_laplace(
            scale=scale
        )

    return _opendp_library("make_sized_bounded_sum[float] >> make_base_laplace", build)


def opendp_sum_of_squared_deviations() -> Any:
    """``make_sum_of_squared_deviations`` on ``n`` records in ``bounds`` then ``then_laplace``."""

    def build(setting: Any, scale: float) -> Any:
        import opendp.prelude as dp

        dp.enable_features("contrib")
        bounds = tuple(float(b) for b in setting.bounds)
        domain = dp.vector_domain(dp.atom_domain(bounds=bounds, nan=False), size=setting.size)
        ssd = dp.t.make_sum_of_squared_deviations(domain, dp.symmetric_distance())
        return ssd >> dp.m.then_laplace(scale=scale)

    return _opendp_library("make_sum_of_squared_deviations >> laplace", build)


RECIPES: dict[str, Callable[[], Any]] = {
    "smartnoise_covariance": smartnoise_covariance,
    "diffprivlib_linear_regression": diffprivlib_linear_regression,
    "opendp_sized_float_sum": opendp_sized_float_sum,
    "opendp_sum_of_squared_deviations": opendp_sum_of_squared_deviations,
}


#: What a refuted row names: ``<generator> pairs: eps >= ...``.
REFUTING = re.compile(r"(\w+) pairs: eps >=")


def _pins(bug: dict[str, Any], guided: bool) -> dict[str, Any]:
    """What ``--guided`` pins the search to: the bug's ``reported`` bounds, size and ``eps = 1``
    (nothing without ``guided``)."""
    if not guided:
        return {}
    reported = bug["reported"]
    return {
        "bounds": [(float(reported["low"]), float(reported["high"]))],
        "sizes": [int(reported["n"])],
        "epsilons": [1.0],
    }


def _battery_section(
    bug: dict[str, Any], trials: int, budget: str, pins: dict[str, Any]
) -> dict[str, Any]:
    """``dpaudit library LIBRARY --function F --budget B`` (and the ``pins`` as ``--bounds``,
    ``--sizes``, ``--eps``): its report's battery section, or ``{"error": ...}``."""
    options = [*("--function", bug["battery_function"], "--trials", str(trials))]
    options += ["--budget", budget]
    if pins:
        (low, high), size, eps = pins["bounds"][0], pins["sizes"][0], pins["epsilons"][0]
        options += ["--bounds", f"{low!r},{high!r}", "--sizes", str(size), "--eps", f"{eps!r}"]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        command = ["library", bug["library"], "-o", str(out), *options, "--n-jobs", "1", "-q"]
        done = subprocess.run(
            [sys.executable, "-m", "dpaudit.cli", *command], capture_output=True, text=True
        )
        if done.returncode not in (0, 3):
            return {"error": (done.stderr.strip() or done.stdout.strip())[-300:]}
        return json.loads((out / "results.json").read_text(encoding="utf-8"))["battery"]


def _api_section(
    bug: dict[str, Any], trials: int, budget: str, pins: dict[str, Any]
) -> dict[str, Any]:
    """The bug's recipe (a battery of one function) planned and run as ``dpaudit library`` runs
    a battery: its battery section."""
    from dpaudit.libraries.battery import plan, run

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        library = RECIPES[bug["recipe"]]()
        battery = run(plan(library, trials=trials, budget=budget, **pins))
    return battery.document()["battery"]


def _worker(bug: dict[str, Any], trials: int, budget: str, guided: bool) -> dict[str, Any]:
    """Audit ``bug`` in this interpreter (its virtualenv) with dpaudit's search, within
    ``budget``; ``guided``: pinned to its ``reported`` settings. ``{"refuted", "by", "found",
    "lines"}``: whether the function's claim is refuted, the generators of the rows that refute
    it, whether one of them is among the bug's ``shown_by`` (the refutation is this bug, not
    another), and the report's lines."""
    from dpaudit.reports.batteries import refuted_lines, row_evidence, unrefuted_lines

    pins = _pins(bug, guided)
    audit = _battery_section if bug["recipe"] == "battery" else _api_section
    section = audit(bug, trials, budget, pins)
    if "error" in section:
        return {"refuted": False, "by": [], "found": False, "lines": [section["error"]], "error": 1}
    refuted = refuted_lines(section)
    by = sorted({g for line in refuted for g in REFUTING.findall(line)})
    violated = [
        f"violated: {row['relation']}, {row_evidence(row)}"
        + (f" at {row['setting']}" if row.get("setting") else "")
        + (f" ({row['pair']})" if row.get("pair") else "")
        for row in section["rows"]
        if row["verdict"] == "violated"
    ]
    errors = [row["error"] for row in section["rows"] if row["verdict"] == "error"]
    lines = refuted + unrefuted_lines(section) + violated
    if errors and not refuted:
        lines.append(f"error in {len(errors)} rows: {errors[0]}")
    return {
        "refuted": bool(refuted),
        "by": by,
        "found": bool(refuted) and bool(set(by) & set(bug["shown_by"])),
        "lines": lines,
    }


# --------------------------------------------------------------------------- the bench


def _audit(
    python: Path, bug: dict[str, Any], trials: int, budget: str, guided: bool
) -> dict[str, Any]:
    started = time.perf_counter()
    worker = [str(python), str(Path(__file__).resolve()), "--worker", bug["id"]]
    done = subprocess.run(
        [*worker, "--trials", str(trials), "--budget", budget, *(["--guided"] if guided else [])],
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        tail = (done.stderr.strip() or done.stdout.strip())[-300:]
        return {"refuted": False, "by": [], "found": False, "lines": [tail], "error": 1} | {
            "seconds": seconds
        }
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return {**result, "seconds": seconds}


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} = {100 * part / whole:.0f}%" if whole else "0/0"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", help="where the virtualenvs live (outside the repository)")
    parser.add_argument("--trials", type=int, default=2000, help="trials per dataset")
    parser.add_argument(
        "--budget",
        default="10m",
        help="what the search of each audit may spend, as `dpaudit library --budget` takes it "
        "(outputs, seconds such as 10m, or both; default 10m)",
    )
    parser.add_argument("--only", nargs="+", metavar="ID", help="bugs to run (their ids)")
    parser.add_argument(
        "--guided",
        action="store_true",
        help="pin the search to where each bug shows (its 'reported' settings): a check that "
        "the bug is detectable from outputs, not counted as found by dpaudit",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    bugs = {bug["id"]: bug for bug in corpus()}
    if args.worker:
        print(json.dumps(_worker(bugs[args.worker], args.trials, args.budget, args.guided)))
        return 0
    unknown = sorted(set(args.only or []) - set(bugs))
    if unknown:
        parser.error(f"--only: unknown bugs {unknown}; the corpus has {sorted(bugs)}")
    chosen = [bugs[name] for name in args.only] if args.only else list(bugs.values())
    root = _cache(args.cache)
    root.mkdir(parents=True, exist_ok=True)
    mode = "pinned where the bugs show (--guided)" if args.guided else "dpaudit's search"
    print(
        f"corpus {CORPUS.name}: {len(chosen)} bugs, {mode}; virtualenvs in {root}; "
        f"{args.trials:,} trials, budget {args.budget} per audit"
    )
    print(f"{'bug':<50} {'version':<14} {'verdict':<11} {'by':<26} {'this bug':<8} {'s':>7}")
    found, fixed_refuted, fixed_runs, seconds = [], [], 0, []
    for bug in chosen:
        for kind in ("buggy", "fixed"):
            version = bug[kind]
            if not version:
                continue
            try:
                python, installed = _environment(root, bug, version)
            except RuntimeError as exc:
                python, installed = None, 0.0
                result = {"refuted": False, "by": [], "found": False, "error": 1}
                result.update(lines=[str(exc)[:300]], seconds=0.0)
            if python is not None:
                result = _audit(python, bug, args.trials, args.budget, args.guided)
            verdict = "error" if result.get("error") else "REFUTED" if result["refuted"] else "-"
            this = "yes" if result["found"] else "-"
            print(
                f"{bug['id']:<50} {kind} {version:<8} {verdict:<11} "
                f"{','.join(result['by']) or '-':<26} {this:<8} {result['seconds']:>7.1f}"
            )
            for line in result["lines"][:4]:
                print(f"    {line[:240]}")
            if kind == "buggy":
                seconds.append(result["seconds"])
                if result["found"]:
                    found.append(bug["id"])
            else:
                fixed_runs += 1
                if result["refuted"]:
                    fixed_refuted.append(bug["id"])
            if installed:
                print(f"    (virtualenv made or updated in {installed:.0f} s)")
    detectable = [bug["id"] for bug in chosen if bug["detectable"]]
    hidden = [bug["id"] for bug in chosen if not bug["detectable"]]
    over_all = _share(len(found), len(chosen))
    over_detectable = _share(len(set(found) & set(detectable)), len(detectable))
    name = "found where the bugs show (not counted as dpaudit's)" if args.guided else "recall"
    print(f"{name}, over all bugs: {over_all}")
    print(f"{name}, over the bugs detectable from outputs: {over_detectable}")
    if hidden:
        print(f"not detectable from outputs (corpus: detectable = false): {', '.join(hidden)}")
    print(f"time per bug: median {statistics.median(seconds):.1f} s, max {max(seconds):.1f} s")
    print(f"refutations on fixed versions: {len(fixed_refuted)}/{fixed_runs}")
    if found:
        print(f"found: {', '.join(found)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
