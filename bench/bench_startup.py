"""How fast the command starts: ``import dpaudit.cli``, and the first progress line of the main job.

Printed, each measured in fresh interpreters ``--repeat`` times (best and median):

- the wall-clock and CPU seconds of ``import dpaudit.cli``, and which of the dependencies that
  only some commands need it loads (``dpaudit.cli.LAZY_IMPORTS``; none is expected: each is
  imported where it is used);
- the wall-clock seconds from starting the README's main job, ``python -m dpaudit.cli suite -o
  DIR``, with stderr redirected to a file, until its first progress line is in that file. The
  job is then stopped with ``SIGTERM``.

    python bench/bench_startup.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dpaudit.cli import LAZY_IMPORTS

_IMPORT = f"""
import sys, time
wall, cpu = time.perf_counter(), time.process_time()
import dpaudit.cli
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
print(wall, cpu, ",".join(m for m in {LAZY_IMPORTS!r} if m in sys.modules))
"""


def import_seconds() -> tuple[float, float, str]:
    """Wall-clock and CPU seconds of ``import dpaudit.cli`` in a fresh interpreter, and the
    modules of :data:`dpaudit.cli.LAZY_IMPORTS` it loaded."""
    out = subprocess.run(
        [sys.executable, "-c", _IMPORT],
        capture_output=True,
        text=True,
        check=True,
        cwd=tempfile.gettempdir(),  # the dpaudit of the environment, not of the working directory
    ).stdout.split(" ")
    return float(out[0]), float(out[1]), out[2].strip()


def first_line_seconds(directory: Path) -> float:
    """Seconds from starting ``dpaudit suite -o DIR`` until its first line is in its stderr
    file; the job is stopped then."""
    log = directory / "stderr.log"
    with log.open("w") as err:
        started = time.perf_counter()
        job = subprocess.Popen(
            [sys.executable, "-m", "dpaudit.cli", "suite", "-o", str(directory / "reports")],
            stdout=subprocess.DEVNULL,
            stderr=err,
            cwd=directory,
        )
        while b"\n" not in log.read_bytes() and job.poll() is None:
            time.sleep(0.005)
        seconds = time.perf_counter() - started
    job.send_signal(signal.SIGTERM)
    job.wait()
    if job.returncode not in (130, 0):
        raise RuntimeError(f"the main job failed: {log.read_text()}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    imports = [import_seconds() for _ in range(args.repeat)]
    walls, cpus = [w for w, _, _ in imports], [c for _, c, _ in imports]
    loaded = sorted({m for _, _, found in imports for m in found.split(",") if m})
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    print(
        f"import dpaudit.cli: wall best {min(walls):.2f} s, median {wall:.2f} s; "
        f"CPU best {min(cpus):.2f} s, median {cpu:.2f} s ({args.repeat} runs)"
    )
    print(f"  of {', '.join(LAZY_IMPORTS)} it loads: {', '.join(loaded) or 'none'}")
    firsts = []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as directory:
            firsts.append(first_line_seconds(Path(directory)))
    print(
        f"dpaudit suite -o DIR 2> file, first progress line: best {min(firsts):.2f} s, "
        f"median {statistics.median(firsts):.2f} s ({args.repeat} runs)"
    )


if __name__ == "__main__":
    main()
