"""What writing a library battery's report costs: wall time of the report stage against the run,
size on disk, and number of figure files.

Runs a battery (``dpaudit.libraries.run_battery``), then writes its report with
``Battery.write`` into a temporary directory, and prints the run's and the report's wall time,
their ratio, the report's size and its PNG count; ``--all-figures`` writes it a second time with
every row's figures (the report's option) and prints the same for that one.

    python bench/bench_library_report.py                        # diffprivlib, 10,000 trials
    python bench/bench_library_report.py --trials 2000 --quick  # a few minutes
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from dpaudit.libraries import run_battery


def _size(path: Path) -> tuple[int, int]:
    """Bytes of every file under ``path`` and the number of PNG files."""
    files = [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files), sum(p.suffix == ".png" for p in files)


def _write(battery, path: Path, **options) -> tuple[float, int, int]:
    started = time.perf_counter()
    battery.write(path, **options)
    seconds = time.perf_counter() - started
    return (seconds, *_size(path))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", default="diffprivlib")
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--quick", action="store_true", help="one pair per row, no pilots")
    parser.add_argument("--n-jobs", type=int, default=2, dest="n_jobs")
    parser.add_argument("--all-figures", action="store_true", help="also write every figure")
    args = parser.parse_args()
    started = time.perf_counter()
    battery = run_battery(args.library, trials=args.trials, quick=args.quick, n_jobs=args.n_jobs)
    run_seconds = time.perf_counter() - started
    violated = sum(r["verdict"] == "violated" for r in battery.table)
    print(f"battery                {args.library}, {len(battery.table)} rows, {violated} violated")
    print(f"run                    {run_seconds:,.1f} s ({args.trials:,} trials per dataset)")
    runs = [("report (default)", {})]
    if args.all_figures:
        runs.append(("report (all figures)", {"figures": "all"}))
    with tempfile.TemporaryDirectory() as tmp:
        for index, (label, options) in enumerate(runs):
            seconds, size, pngs = _write(battery, Path(tmp) / f"report{index}", **options)
            print(
                f"{label:<22} {seconds:,.1f} s = {100 * seconds / run_seconds:.1f}% of the run; "
                f"{size / 1e6:.2f} MB on disk, {pngs} PNG files"
            )


if __name__ == "__main__":
    main()
