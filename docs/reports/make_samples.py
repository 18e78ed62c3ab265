"""Write the sample reports under docs/reports/ again, with the code of this checkout.

Each sample is the command that docs/reports/gallery/README.md and the README name for it, run
with the trials and seeds of its spec (the suite's built-in spec, or the spec in examples/):

    python docs/reports/make_samples.py              # every sample
    python docs/reports/make_samples.py --only suite gallery/dp-auditorium

A sample's report directory is replaced as every report directory is (``dpaudit run -o``
replaces an earlier report). The OpenDP samples differ slightly from run to run (OpenDP's
generator cannot be seeded); the accountants sample needs the ``accountants`` extra and the
library samples the ``libraries`` extra. A command that fails stops the script with its exit
code, and the samples written before it stay.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]

#: Each sample (its path under docs/reports/) and the command that writes it, without the
#: option that names where it goes (``-o`` for the command line, ``--output`` for a script).
SAMPLES: dict[str, list[str]] = {
    "suite": ["dpaudit", "suite"],
    "gallery/accountants": ["dpaudit", "audit-accountant", "examples/accountant-battery.toml"],
    "gallery/dpsgd-clt-not-a-bound": ["dpaudit", "run", "examples/dpsgd-clt-not-a-bound.toml"],
    "gallery/blackbox-diffprivlib-laplace": [
        "dpaudit",
        "run",
        "examples/blackbox-diffprivlib-laplace.toml",
    ],
    "gallery/blackbox-diffprivlib-gaussian": [
        "dpaudit",
        "run",
        "examples/blackbox-diffprivlib-gaussian.toml",
    ],
    "gallery/blackbox-opendp-laplace": ["dpaudit", "run", "examples/blackbox-opendp-laplace.toml"],
    "gallery/blackbox-opendp-gaussian": [
        "dpaudit",
        "run",
        "examples/blackbox-opendp-gaussian.toml",
    ],
    "gallery/tracing-composition.png": ["examples/tracing-composition.py"],
    "gallery/dp-auditorium": ["dpaudit", "run", "examples/dp-auditorium.toml"],
}


def command(sample: str) -> list[str]:
    """The command line that writes ``sample``, run by this interpreter."""
    program, *args = SAMPLES[sample]
    target = str(HERE / sample)
    if program == "dpaudit":
        return [sys.executable, "-m", "dpaudit.cli", *args, "-o", target]
    return [sys.executable, program, *args, "--output", target]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only", nargs="+", choices=sorted(SAMPLES), help="write these samples only"
    )
    args = parser.parse_args(argv)
    # The code of this checkout, whatever dpaudit the interpreter has installed.
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path}
    for sample in args.only or SAMPLES:
        cmd = command(sample)
        print(f"docs/reports/{sample}: {' '.join(cmd[1:])}", flush=True)
        code = subprocess.run(cmd, cwd=REPO, env=env, check=False).returncode
        if code != 0:
            print(f"docs/reports/{sample}: the command exited with {code}", file=sys.stderr)
            return code
    return 0


if __name__ == "__main__":
    sys.exit(main())
