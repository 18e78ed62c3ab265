"""Real bugs as a benchmark: does dpaudit find, from outputs alone, the publicly reported privacy
bugs of installable DP library versions, and does it stay quiet on the versions that fix them?

The corpus is ``library_bugs.toml`` beside this script (each bug: library, version with the bug,
version with the fix, public report, function and settings, what makes it visible). Every
version is installed in a virtualenv of its own under the cache directory (``--cache``, default
``$DPAUDIT_BENCH_CACHE`` or ``~/.cache/dpaudit-bench/library-bugs``, never inside the
repository), together with this checkout of dpaudit (editable), and audited there:

- ``recipe = "battery"``: ``dpaudit library LIBRARY --function F --quick --trials T``; the bug is
  found when the command exits 3 with a ``REFUTED:`` line naming ``F``;
- any other recipe: a battery of one function written here with the Python API
  (:class:`dpaudit.libraries.battery.Library`), its pairs drawn by dpaudit's generators on the
  function's declared settings (no pair written for a known bug), found when a claim is refuted.

It prints one line per audit, then recall on the corpus (bugs found in their buggy version), the
time per bug, and the refutations on fixed versions (the target is none). Every audit starts
from the settings the library batteries use (10 records in ``(0, 1)``, ``eps = 1``); ``--guided``
audits where each bug shows instead (``reported`` in the corpus: its report's settings, or
settings chosen by hand): a check that the bug shows in outputs at all, which is not dpaudit
finding it.

    python bench/bench_library_bugs.py                    # every bug, 2,000 trials per dataset
    python bench/bench_library_bugs.py --only opendp-sized-float-sum-sensitivity
    python bench/bench_library_bugs.py --guided           # where each bug shows
"""

from __future__ import annotations

import argparse
import json
import os
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
    of dpaudit (editable) and the bug's ``install`` requirements first.
    """
    extra = "-".join(sorted(bug["install"])).replace("<", "lt").replace(">", "gt")
    name = f"{bug['package']}-{version}" + (f"-{extra}" if extra else "")
    venv = root / name
    python = venv / "bin" / "python"
    if (venv / ".ready").exists():
        return python, 0.0
    started = time.perf_counter()
    requirement = f"{bug['package']}=={version}"
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    here = Path(sys.prefix)
    if venv.exists():
        shutil.rmtree(venv)
    if not bug["install"] and here != Path(sys.base_prefix) and _has_dpaudit():
        shutil.copytree(here, venv, symlinks=True, copy_function=os.link)
        commands = [[*pip, *(["--no-deps"] if bug["no_deps"] else []), requirement]]
    else:
        commands = [
            [sys.executable, "-m", "venv", "--clear", str(venv)],
            [*pip, "-e", str(REPO), *bug["install"]],
            [*pip, *(["--no-deps"] if bug["no_deps"] else []), requirement],
        ]
    for command in commands:
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            tail = " ".join(done.stderr.split()[-60:])
            raise RuntimeError(f"installing {requirement} failed: {tail}")
    (venv / ".ready").write_text(requirement + "\n")
    return python, time.perf_counter() - started


def _has_dpaudit() -> bool:
    """Whether this interpreter imports this checkout's dpaudit."""
    import importlib.util

    spec = importlib.util.find_spec("dpaudit")
    return spec is not None and spec.origin is not None and REPO in Path(spec.origin).parents


# --------------------------------------------------------------------------- audits (workers)


def _claims(eps: float, relations: tuple[str, ...], delta: float = 0.0) -> dict[str, Any]:
    from dpaudit.bounds.tradeoff import approx_dp
    from dpaudit.libraries.battery import Claimed

    text = f"({eps:g}, {delta:g})-DP"
    table = {"kind": "approx_dp", "eps": eps, "delta": delta}
    return {r: Claimed(approx_dp(eps, delta), table, (delta,), text) for r in relations}


def _scalar_pairs(columns: int = 1, rounding: bool = False) -> Callable[[str], Any]:
    """Boundary and random pairs (and, with ``rounding``, the rounding search on ``numpy.sum``)
    of ``N`` records in ``RECORDS``, each record repeated over ``columns`` columns: dpaudit's
    generators on the settings."""
    import numpy as np

    from dpaudit.mechanisms.base import NeighbouringPair
    from dpaudit.mechanisms.pairs import boundary_pairs, random_pairs, rounding_pairs

    low, high = RECORDS

    def widen(pair: NeighbouringPair) -> NeighbouringPair:
        if columns == 1:
            return pair
        d, d_prime = (np.repeat(np.asarray(x)[:, None], columns, 1) for x in (pair.d, pair.d_prime))
        return NeighbouringPair(d, d_prime, pair.relation, pair.description)

    def pairs(relation: str) -> dict[str, Any]:
        out = {
            "boundary": [widen(p) for p in boundary_pairs(N, low, high, relation=relation)],
            "random": [widen(p) for p in random_pairs(N, low, high, relation=relation, budget=4)],
        }
        if rounding:
            out["rounding"] = rounding_pairs(N, low, high, relation=relation, accumulate=np.sum)
        return out

    return pairs


#: The settings every audit written here starts from, as the library batteries do: datasets of
#: ``N`` records in ``RECORDS``, the function told the bounds ``BOUNDS``, claims at ``EPSILON``.
#: ``--guided`` replaces them with a bug's ``reported`` settings (where it shows).
N, BOUNDS, RECORDS, EPSILON = 10, (0.0, 1.0), (0.0, 1.0), 1.0


def _configure(reported: dict[str, Any]) -> None:
    """Audit at a bug's ``reported`` settings: ``n``, the declared ``low`` and ``high``, and
    the records' range (``records_low``, ``records_high``; default the declared bounds)."""
    global N, BOUNDS, RECORDS
    N = int(reported["n"])
    BOUNDS = (float(reported["low"]), float(reported["high"]))
    RECORDS = (
        float(reported.get("records_low", BOUNDS[0])),
        float(reported.get("records_high", BOUNDS[1])),
    )


def _diffprivlib_tool(name: str) -> Any:
    """``diffprivlib.tools.<name>(records, epsilon, bounds)``, as the diffprivlib battery calls
    it, with the rounding search among its pairs; diffprivlib is silent about its relation."""
    import numpy as np

    from dpaudit.libraries.battery import Function, Library

    def release() -> Callable[..., Any]:
        from diffprivlib import tools
        from diffprivlib.accountant import BudgetAccountant

        tool = getattr(tools, name)

        def fn(dataset: Any, size: int, rng: Any) -> Any:
            data = np.asarray(dataset, float)
            state = np.random.RandomState(int(rng.integers(2**31)))
            out = [
                tool(
                    data,
                    epsilon=EPSILON,
                    bounds=BOUNDS,
                    random_state=state,
                    accountant=BudgetAccountant(),
                )
                for _ in range(size)
            ]
            return np.asarray(out, dtype=float)

        return fn

    function = Function(
        f"tools.{name}(epsilon=1, bounds={BOUNDS})",
        release,
        _claims(EPSILON, ("replace_one", "add_remove")),
        _scalar_pairs(rounding=True),
        stated=False,
    )
    return Library("diffprivlib", "diffprivlib", "diffprivlib", lambda: [function], True, True)


def diffprivlib_sum() -> Any:
    """``diffprivlib.tools.sum`` (:func:`_diffprivlib_tool`)."""
    return _diffprivlib_tool("sum")


def diffprivlib_mean() -> Any:
    """``diffprivlib.tools.mean`` (:func:`_diffprivlib_tool`)."""
    return _diffprivlib_tool("mean")


def smartnoise_covariance() -> Any:
    """``DPcovariance(n, cols, rng, global_eps).release(data)`` of smartnoise-synth: the
    covariance of two columns, replace-one neighbours (``n`` is given)."""
    import importlib.util

    import numpy as np
    import pandas as pd

    from dpaudit.libraries.battery import Function, Library

    # The package's own __init__ imports torch; the audited module needs only numpy and pandas.
    spec = importlib.util.find_spec("snsynth")
    path = Path(spec.submodule_search_locations[0]) / "models" / "dp_covariance.py"
    module_spec = importlib.util.spec_from_file_location("dp_covariance", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)

    def release() -> Callable[..., Any]:
        def fn(dataset: Any, size: int, rng: Any) -> Any:
            frame = pd.DataFrame(np.asarray(dataset, float).reshape(-1, 2), columns=["a", "b"])
            # the module draws from numpy's global state, which only a global seed reaches
            np.random.seed(int(rng.integers(2**31)))  # noqa: NPY002
            out = []
            for _ in range(size):
                bounds = pd.DataFrame({"a": BOUNDS, "b": BOUNDS})  # rows: low, high
                model = module.DPcovariance(N, ["a", "b"], bounds, EPSILON)
                out.append(model.release(frame.copy()))
            return np.asarray(out, dtype=float)

        return fn

    function = Function(
        "DPcovariance.release(2 columns)",
        release,
        _claims(EPSILON, ("replace_one",)),
        _scalar_pairs(columns=2),
    )
    return Library("smartnoise-synth", "pandas", "smartnoise-synth", lambda: [function], True, True)


def diffprivlib_linear_regression() -> Any:
    """``LinearRegression(epsilon, bounds_X, bounds_y).fit(X, y)``: ``coef_`` and
    ``intercept_`` of one feature; diffprivlib is silent about its relation."""
    import numpy as np

    from dpaudit.libraries.battery import Function, Library

    def release() -> Callable[..., Any]:
        from diffprivlib.accountant import BudgetAccountant
        from diffprivlib.models import LinearRegression

        def fn(dataset: Any, size: int, rng: Any) -> Any:
            data = np.asarray(dataset, float).reshape(-1, 2)
            state = np.random.RandomState(int(rng.integers(2**31)))
            out = []
            for _ in range(size):
                model = LinearRegression(
                    epsilon=EPSILON,
                    bounds_X=BOUNDS,
                    bounds_y=BOUNDS,
                    random_state=state,
                    accountant=BudgetAccountant(),
                ).fit(data[:, :1], data[:, 1])
                out.append([model.coef_[0], model.intercept_])
            return np.asarray(out, dtype=float)

        return fn

    function = Function(
        "models.LinearRegression(epsilon=1, bounds=(0, 1))",
        release,
        _claims(EPSILON, ("replace_one", "add_remove")),
        _scalar_pairs(columns=2),
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


def _opendp_library(name: str, build: Callable[[float], Any]) -> Any:
    """A battery of one OpenDP measurement ``build(scale)`` on ``N`` sized float records in
    ``BOUNDS``, replace-one neighbours (``d_in = 2``), its noise scaled so that OpenDP states
    ``EPSILON`` for it (as a user calibrates it), claiming what OpenDP states."""
    import numpy as np

    from dpaudit.libraries.battery import Function, Library

    # The stated eps of a Laplace measurement is inversely proportional to its scale.
    measurement = build(_opendp_claimed(build(1.0), 2) / EPSILON)
    eps = _opendp_claimed(measurement, 2)

    def release() -> Callable[..., Any]:
        def fn(dataset: Any, size: int, rng: Any) -> Any:
            data = [float(x) for x in np.asarray(dataset, float).ravel()]
            return np.asarray([measurement(data) for _ in range(size)], dtype=float)

        return fn

    function = Function(name, release, _claims(eps, ("replace_one",)), _scalar_pairs())
    return Library("opendp", "opendp", "opendp", lambda: [function], False, True)


def opendp_sized_float_sum() -> Any:
    """``make_sized_bounded_sum(N, BOUNDS, T=float) >> make_base_laplace(scale)`` of OpenDP 0.4
    and 0.5 (their modules ``opendp.trans`` and ``opendp.meas``)."""

    def build(scale: float) -> Any:
        from opendp.meas import make_base_laplace
        from opendp.mod import enable_features
        from opendp.trans import make_sized_bounded_sum

        enable_features("contrib", "floating-point")
        return make_sized_bounded_sum(N, BOUNDS, T=float) >> make_base_laplace(scale=scale)

    return _opendp_library("make_sized_bounded_sum[float] >> make_base_laplace", build)


def opendp_sum_of_squared_deviations() -> Any:
    """``make_sum_of_squared_deviations`` on ``N`` records in ``BOUNDS`` then ``make_laplace``."""

    def build(scale: float) -> Any:
        import opendp.prelude as dp

        dp.enable_features("contrib")
        domain = dp.vector_domain(dp.atom_domain(bounds=BOUNDS, nan=False), size=N)
        ssd = dp.t.make_sum_of_squared_deviations(domain, dp.symmetric_distance())
        return ssd >> dp.m.then_laplace(scale=scale)

    return _opendp_library("make_sum_of_squared_deviations >> laplace", build)


def python_dp_bounded_sum() -> Any:
    """``BoundedSum(epsilon, lower_bound, upper_bound, dtype="float").quick_result(records)`` of
    Google's library: its privacy unit is a record added or removed."""
    import numpy as np

    from dpaudit.libraries.battery import Function, Library

    def release() -> Callable[..., Any]:
        from pydp.algorithms.laplacian import BoundedSum

        def fn(dataset: Any, size: int, rng: Any) -> Any:
            data = [float(x) for x in np.asarray(dataset, float).ravel()]
            out = []
            for _ in range(size):
                algorithm = BoundedSum(
                    epsilon=EPSILON, lower_bound=BOUNDS[0], upper_bound=BOUNDS[1], dtype="float"
                )
                out.append(algorithm.quick_result(data))
            return np.asarray(out, dtype=float)

        return fn

    function = Function(
        "BoundedSum(epsilon=1, bounds=(0, 1), dtype=float)",
        release,
        _claims(EPSILON, ("add_remove",)),
        _scalar_pairs(),
    )
    return Library("python-dp", "pydp", "python-dp", lambda: [function], False, True)


RECIPES: dict[str, Callable[[], Any]] = {
    "diffprivlib_sum": diffprivlib_sum,
    "diffprivlib_mean": diffprivlib_mean,
    "smartnoise_covariance": smartnoise_covariance,
    "diffprivlib_linear_regression": diffprivlib_linear_regression,
    "opendp_sized_float_sum": opendp_sized_float_sum,
    "opendp_sum_of_squared_deviations": opendp_sum_of_squared_deviations,
    "python_dp_bounded_sum": python_dp_bounded_sum,
}


def _worker(bug: dict[str, Any], trials: int, guided: bool) -> dict[str, Any]:
    """Audit ``bug`` in this interpreter (its virtualenv): ``{"refuted", "lines"}``; ``guided``:
    at its ``reported`` settings, with the Python API."""
    recipe = bug.get("guided_recipe", bug["recipe"]) if guided else bug["recipe"]
    if guided:
        _configure(bug["reported"])
    if recipe == "battery":
        with tempfile.TemporaryDirectory() as tmp:
            command = [
                *("library", bug["library"], "-o", str(Path(tmp) / "out")),
                *("--function", bug["battery_function"], "--quick", "--trials", str(trials)),
                *("--n-jobs", "1", "-q"),
            ]
            done = subprocess.run(
                [sys.executable, "-m", "dpaudit.cli", *command],
                capture_output=True,
                text=True,
            )
        lines = [line for line in done.stdout.splitlines() if line.startswith(("REFUTED:", "VIOL"))]
        refuted = done.returncode == 3 and any(
            line.startswith("REFUTED:") and bug["battery_function"] in line for line in lines
        )
        if done.returncode not in (0, 3):
            return {"refuted": False, "lines": [done.stderr.strip()[-300:]], "error": True}
        return {"refuted": refuted, "lines": lines}
    from dpaudit.libraries.battery import plan, run
    from dpaudit.reports.batteries import refuted_lines, unrefuted_lines

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        library = RECIPES[recipe]()
        battery = run(plan(library, trials=trials, quick=True))
    section = battery.document()["battery"]
    lines = refuted_lines(section) + unrefuted_lines(section)
    errors = [row["error"] for row in battery.table if row["verdict"] == "error"]
    if errors and not battery.refuted:
        return {"refuted": False, "lines": [f"error: {errors[0]}"], "error": True}
    return {"refuted": battery.refuted, "lines": lines}


# --------------------------------------------------------------------------- the bench


def _audit(python: Path, bug: dict[str, Any], trials: int, guided: bool) -> dict[str, Any]:
    started = time.perf_counter()
    worker = [str(python), str(Path(__file__).resolve()), "--worker", bug["id"]]
    done = subprocess.run(
        [*worker, "--trials", str(trials), *(["--guided"] if guided else [])],
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        tail = (done.stderr.strip() or done.stdout.strip())[-300:]
        return {"refuted": False, "lines": [tail], "error": True, "seconds": seconds}
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return {**result, "seconds": seconds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", help="where the virtualenvs live (outside the repository)")
    parser.add_argument("--trials", type=int, default=2000, help="trials per dataset")
    parser.add_argument("--only", nargs="+", metavar="ID", help="bugs to run (their ids)")
    parser.add_argument(
        "--guided",
        action="store_true",
        help="audit where each bug shows (its 'reported' settings) instead of the default ones "
        "(a check that the corpus is detectable from outputs, not counted as found by dpaudit)",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    bugs = {bug["id"]: bug for bug in corpus()}
    if args.worker:
        print(json.dumps(_worker(bugs[args.worker], args.trials, args.guided)))
        return 0
    unknown = sorted(set(args.only or []) - set(bugs))
    if unknown:
        parser.error(f"--only: unknown bugs {unknown}; the corpus has {sorted(bugs)}")
    chosen = [bugs[name] for name in args.only] if args.only else list(bugs.values())
    root = _cache(args.cache)
    root.mkdir(parents=True, exist_ok=True)
    mode = "where the bugs show (--guided)" if args.guided else "at dpaudit's own settings"
    print(
        f"corpus {CORPUS.name}: {len(chosen)} bugs, {mode}; virtualenvs in {root}; "
        f"{args.trials:,} trials"
    )
    print(f"{'bug':<50} {'version':<14} {'verdict':<13} {'s':>7}")
    found, fixed_refuted, fixed_runs, seconds = [], [], 0, []
    for bug in chosen:
        for kind in ("buggy", "fixed"):
            version = bug[kind]
            if not version:
                continue
            try:
                python, installed = _environment(root, bug, version)
            except RuntimeError as exc:
                python, installed, result = None, 0.0, {"refuted": False, "error": True}
                result.update(lines=[str(exc)[:300]], seconds=0.0)
            if python is not None:
                result = _audit(python, bug, args.trials, args.guided)
            verdict = (
                "error"
                if result.get("error")
                else "REFUTED"
                if result["refuted"]
                else "not refuted"
            )
            print(f"{bug['id']:<50} {kind} {version:<8} {verdict:<13} {result['seconds']:>7.1f}")
            for line in result["lines"][:3]:
                print(f"    {line[:220]}")
            if kind == "buggy":
                seconds.append(result["seconds"])
                if result["refuted"]:
                    found.append(bug["id"])
                elif bug["needs"]:
                    print(f"    needs: {bug['needs']}")
            else:
                fixed_runs += 1
                if result["refuted"]:
                    fixed_refuted.append(bug["id"])
            if installed:
                print(f"    (virtualenv made in {installed:.0f} s)")
    share = f"{len(found)}/{len(chosen)} = {100 * len(found) / len(chosen):.0f}%"
    if args.guided:
        print(f"refuted where the bugs show (not dpaudit's own finding): {share}")
    else:
        print(f"recall on the corpus: {share}")
    print(f"time per bug: median {statistics.median(seconds):.1f} s, max {max(seconds):.1f} s")
    print(f"refutations on fixed versions: {len(fixed_refuted)}/{fixed_runs}")
    if found:
        print(f"found: {', '.join(found)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
