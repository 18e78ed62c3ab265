"""Run every benchmark script of this directory and write the figures to bench/RESULTS.md.

Each ``bench_*.py`` script runs in its own subprocess with the arguments of :data:`ARGUMENTS`
(scripts not listed there run with their defaults); its output, exit code, wall-clock time and
peak resident memory (``ru_maxrss`` of the child, through :func:`os.wait4`) are recorded. Two
measurements are made here as well, each in a fresh subprocess:

- peak memory of a likelihood-ratio audit of the Gaussian mechanism that is exactly
  ``(1, 1e-5)``-DP, ``10^8`` trials per dataset (the engine
  keeps counts per bin, never per trial, so this stays near the interpreter's own footprint);
- with ``--billion``: the wall-clock time of the same audit with ``10^9`` trials per dataset.

The Markdown file starts with a table of the headline figures (engine throughput against raw
numpy normals, the 1 -> 2 worker speed-up, accountant time against dp-accounting, DP-SGD runs
per second, peak memory), then one section per script with its full output.

    python bench/run_all.py [--quick] [--billion] [--only engine accountant ...] [--output PATH]
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

#: Arguments per script (name without ``bench_`` and ``.py``): the full run, and ``--quick``.
ARGUMENTS: dict[str, tuple[list[str], list[str]]] = {
    "engine": (
        ["--trials", "100000000", "--repeat", "2"],
        ["--trials", "4000000", "--repeat", "1"],
    ),
    "accountant": (["--repeats", "1"], ["--intervals", "1e-4", "--repeats", "1"]),
    "dpsgd": (["--only", "throughput"], ["--only", "throughput", "--runs", "4096"]),
    "dpsgd_final": ([], ["--trials", "1e6", "--mismatch-trials", "2000"]),
    "flawed": (["--trials", "1000000"], ["--trials", "100000"]),
    "parallel": (["--repeat", "5"], ["--repeat", "2"]),
    "strategies": ([], ["--quick"]),
    "one_run": (["--seeds", "8"], ["--quick"]),
    "scores": (["--seeds", "200"], ["--seeds", "20"]),
    "peers": (["--seeds", "20"], ["--quick"]),
    "testing": (["--seeds", "10"], ["--seeds", "3"]),
    "sequential": (
        ["--seeds", "3"],
        ["--seeds", "1", "--names", "laplace_float", "noisy_prefix_sums", "--cap", "65536"],
    ),
    # The GPU run is its own: python bench/bench_device.py --device cuda
    "device": (["--device", "cpu", "--quick"], ["--device", "cpu", "--quick"]),
    "library_report": ([], ["--trials", "2000", "--quick"]),
    "library_bugs": (
        ["--trials", "2000", "--budget", "5m"],
        ["--trials", "2000", "--budget", "2m"],
    ),
}

#: Headline figures read off a script's output: (script, label, pattern, template); every line
#: matching ``pattern`` gives ``template.format(*groups)``, joined by "; ".
HEADLINES: list[tuple[str, str, str, str]] = [
    ("engine", "engine, 1 worker", r"^audit, 1 worker\s+(.*)$", "{0}"),
    ("engine", "engine, 2 workers", r"^audit, 2 workers\s+(.*)$", "{0}"),
    ("engine", "raw numpy normals", r"^raw numpy normals\s+(.*)$", "{0}"),
    ("engine", "engine / raw numpy (1 worker)", r"^engine / raw \(1 worker\)\s+(.*)$", "{0}"),
    ("engine", "speed-up 1 -> 2 workers", r"^speed-up 1 -> 2 workers\s+(.*)$", "{0}"),
    ("engine", "identical counts, 1 vs 2 workers", r"^identical counts 1 vs 2\s+(.*)$", "{0}"),
    (
        "accountant",
        "accountant time, dp-accounting / dpaudit",
        r"^([\d.]+)\s+dp-accounting \(interval ([^)]+)\).*dp-accounting/dpaudit: ([\d.]+)",
        "sigma {0}, interval {1}: {2}x",
    ),
    (
        "dpsgd",
        "DP-SGD training runs",
        r"^(\d+) worker\(s\)\s+([\d,]+) runs/s",
        "{0} worker(s) {1}/s",
    ),
    (
        "parallel",
        "default n_jobs / n_jobs=1, largest ratio",
        r"^largest ratio default / 1 worker\s+(.*)$",
        "{0}",
    ),
    (
        "strategies",
        "strategy rows below 0.97 x best earlier strategy",
        r"^rows below 0.97 or zero where Bonferroni is positive: (\d+)",
        "{0}",
    ),
    (
        "strategies",
        "Gaussian eps = 1, 1e6 trials: default / holdout / h. 1e-3 / Bonferroni",
        r"^gaussian\s+1e\+06\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)",
        "{0} / {1} / {2} / {3}",
    ),
    (
        "library_report",
        "library battery report: share of the run, size",
        r"^report \(default\)\s+(.*)$",
        "{0}",
    ),
    ("library_bugs", "real-bug corpus: recall", r"^recall, over all bugs: (.*)$", "{0}"),
    (
        "library_bugs",
        "real-bug corpus: recall over the bugs detectable from outputs",
        r"^recall, over the bugs detectable from outputs: (.*)$",
        "{0}",
    ),
    (
        "library_bugs",
        "real-bug corpus: refutations on fixed versions",
        r"^refutations on fixed versions: (.*)$",
        "{0}",
    ),
    (
        "testing",
        "assert_private at false_alarm 1e-6, slowest check",
        r"^slowest check, (.*): ([\d.]+) s$",
        "{0} {1} s",
    ),
]

_AUDIT = """
import sys, time
import dpaudit
from dpaudit.mechanisms import Gaussian
sys.path.insert(0, "bench")
from bench_strategies import gaussian_sigma
trials = int(sys.argv[1])
mechanism = Gaussian(gaussian_sigma(1.0, 1e-5))
started = time.perf_counter()
result = dpaudit.audit_mechanism(mechanism, trials=trials, seed=0, n_jobs=int(sys.argv[2]))
seconds = time.perf_counter() - started
print(
    f"{seconds:.1f} s, eps(1e-5) lower bound {result.epsilon_lower_bound(1e-5):.4f} "
    f"(true eps 1, oracle single threshold {result.epsilon_ceiling(1e-5, 'oracle'):.4f}), "
    f"mu lower bound {result.mu_lower_bound():.4f} (true mu {mechanism.mu:.4f})"
)
"""


@dataclass
class Run:
    """One subprocess: what ran, its output, exit code, seconds and peak memory (MiB)."""

    title: str
    command: list[str]
    output: str
    returncode: int
    seconds: float
    peak_mib: float


def _run(title: str, command: list[str]) -> Run:
    """Run ``command`` from the repository root; peak RSS from the child's resource usage."""
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    started = time.perf_counter()
    with subprocess.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as child:
        output = child.stdout.read() if child.stdout else ""
        child.stdout.close()
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    # ru_maxrss is in KiB on Linux and in bytes on macOS.
    scale = 1 / 1024**2 if sys.platform == "darwin" else 1 / 1024
    return Run(title, command, output, child.returncode, seconds, usage.ru_maxrss * scale)


def _headlines(runs: dict[str, Run]) -> list[tuple[str, str]]:
    rows = []
    for script, label, pattern, template in HEADLINES:
        run = runs.get(script)
        if run is None:
            continue
        matches = [re.search(pattern, line.strip()) for line in run.output.splitlines()]
        values = [" ".join(template.format(*m.groups()).split()) for m in matches if m]
        if values:
            rows.append((label, "; ".join(values)))
    return rows


def _markdown(runs: dict[str, Run], extra: list[Run], quick: bool) -> str:
    lines = [
        "# dpaudit benchmarks",
        "",
        f"Written by `python bench/run_all.py{' --quick' if quick else ''}` on "
        f"{time.strftime('%Y-%m-%d %H:%M %Z')}: {platform.platform()}, Python "
        f"{platform.python_version()}, {os.cpu_count()} cores.",
        "",
        "## Headline figures",
        "",
        "| figure | value |",
        "|---|---|",
    ]
    lines += [f"| {label} | {value} |" for label, value in _headlines(runs)]
    for run in extra:
        value = run.output.strip().splitlines()[-1] if run.returncode == 0 else "failed"
        lines.append(f"| {run.title} | {value}; peak RSS {run.peak_mib:,.0f} MiB |")
    lines += [
        "",
        "## Scripts",
        "",
        "| script | exit | seconds | peak RSS (MiB) |",
        "|---|---|---|---|",
    ]
    for run in [*runs.values(), *extra]:
        lines.append(
            f"| {run.title} | {run.returncode} | {run.seconds:,.1f} | {run.peak_mib:,.0f} |"
        )
    for run in [*runs.values(), *extra]:
        if run.command[1] == "-c":  # the audit script of this file, with its arguments
            shown = " ".join(["-c '<audit script of run_all.py>'", *run.command[3:]])
        else:
            shown = " ".join(Path(c).name if c.endswith(".py") else c for c in run.command[1:])
        lines += ["", f"### {run.title}", "", f"`python {shown}`", "", "```", run.output.rstrip()]
        lines += ["```"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks; returns 1 if any of them failed, else 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller runs (a few minutes)")
    parser.add_argument("--billion", action="store_true", help="also time 10^9 trials (2 cores)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="scripts to run, e.g. engine")
    parser.add_argument("--output", type=Path, default=HERE / "RESULTS.md", help="Markdown file")
    args = parser.parse_args(argv)
    scripts = sorted(HERE.glob("bench_*.py"))
    names = [p.stem.removeprefix("bench_") for p in scripts]
    if args.only:
        unknown = sorted(set(args.only) - set(names))
        if unknown:
            parser.error(f"--only: unknown scripts {unknown}; available: {names}")
        scripts = [p for p, n in zip(scripts, names, strict=True) if n in args.only]
    runs: dict[str, Run] = {}
    for path in scripts:
        name = path.stem.removeprefix("bench_")
        full, quick = ARGUMENTS.get(name, ([], []))
        command = [sys.executable, str(path), *(quick if args.quick else full)]
        print(f"running {path.name} ...", file=sys.stderr, flush=True)
        runs[name] = _run(path.name, command)
    extra = []
    memory_trials = 10**7 if args.quick else 10**8
    print(f"peak memory at {memory_trials:.0e} trials ...", file=sys.stderr, flush=True)
    extra.append(
        _run(
            f"Gaussian (eps = 1) audit, {memory_trials:.0e} trials per dataset, 1 worker",
            [sys.executable, "-c", _AUDIT, str(memory_trials), "1"],
        )
    )
    if args.billion:
        print("10^9 trials ...", file=sys.stderr, flush=True)
        extra.append(
            _run(
                "Gaussian (eps = 1) audit, 1e+09 trials per dataset, 2 workers",
                [sys.executable, "-c", _AUDIT, str(10**9), "2"],
            )
        )
    args.output.write_text(_markdown(runs, extra, args.quick), encoding="utf-8")
    print(f"wrote {args.output}", file=sys.stderr)
    return int(any(run.returncode != 0 for run in [*runs.values(), *extra]))


if __name__ == "__main__":
    sys.exit(main())
