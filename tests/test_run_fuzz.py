"""Fuzzing ``dpaudit run`` end to end: a few hundred seeded variants of a small spec, broken in
the ways users and foreign code break things, each run through the command line.

Every variant must end with exit code 0, 1 or 3 and never with an exception escaping the
command (a traceback). An input error (exit 1) prints exactly one line on stderr and writes no
report; a finished run (0 or 3) writes its report and prints nothing on stderr but one-line
warnings. The variants mix the failure classes of ``tests/test_bad_input.py`` (nesting a
thousand deep, trial counts and compositions beyond the machine, names of thousands of
characters, foreign code that raises, exits or returns strings, damaged store files) with
ordinary mistakes (wrong types, unknown keys and kinds, out-of-range numbers) and valid audits
that run with a few hundred trials. Figures are left out of the reports (they are tested in
``tests/test_reports.py``) to keep the whole fuzz run within seconds.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from dpaudit import cli, reports
from tests.toml_text import Raw, toml_document

#: Variants run; the seed makes the set (and so the test) the same on every run.
VARIANTS = 300
SEED = 20240611

_RELEASES = textwrap.dedent(
    """
    import sys

    import numpy as np

    def noisy(dataset, rng):
        return float(np.sum(dataset)) + rng.laplace(0.0, 1.0)

    def noisy_vector(dataset, size, rng):
        return float(np.sum(dataset)) + rng.normal(0.0, 1.0, (size, 2))

    def raises_runtime(dataset, rng):
        raise RuntimeError("boom")

    def raises_key(dataset, rng):
        raise KeyError("k")

    def exits(dataset, rng):
        sys.exit(4)

    def exits_later(dataset, rng):
        if rng.random() < 0.001:
            raise SystemExit("late")
        return rng.normal()

    def number_as_string(dataset, rng):
        return "1.5"

    def empty(dataset, rng):
        return np.array([])

    def nan_sometimes(dataset, rng):
        return float("nan") if rng.random() < 0.01 else rng.normal()

    def ragged(dataset, rng):
        return [1.0] * (1 + int(rng.random() < 0.5))

    def returns_none(dataset, rng):
        return None
    """
)

_HOSTILE_NAMES = [
    "",
    "   ",
    "<script>alert(1)</script>",
    '"><svg onload=alert(1)>',
    "[x](javascript:alert(1))",
    "a|b|c",
    "tab\there",
    "line\nbreak",
    "../../etc/passwd",
    "a/b\\c",
    ".",
    "ünïcødé ∑",
    "x" * 200,
    "x" * 201,
    "x" * 2_000,
    "x" * 100_000,
]

_TRIALS = [0, -1, 1, 2, 300, 1.5, 1e19, 2**63, 10**30, 1e300, "300", True, [300]]
_CLI_TRIALS = ["0", "-5", "1", "300", "9223372036854775808", "10" * 12, "1e19", "abc"]
_CALLABLES = [
    "sys:exit",
    "os:getcwd",
    "math:sqrt",
    "builtins:len",
    "json:dumps",
    "no.such.module:f",
    "os:no_such_function",
    "os",
    "os:path",
]
_RELEASE_FUNCTIONS = [
    "noisy",
    "noisy",
    "raises_runtime",
    "raises_key",
    "exits",
    "exits_later",
    "number_as_string",
    "empty",
    "nan_sometimes",
    "ragged",
    "returns_none",
]


def _deep(rng: random.Random) -> Raw:
    depth = rng.choice([65, 100, 400, 1000, 3000])
    if rng.random() < 0.5:
        return Raw("[" * depth + "]" * depth)
    return Raw("{ a = " * depth + "1" + " }" * depth)


def _mechanism(rng: random.Random, module: str) -> object:
    choice = rng.randrange(9)
    if choice == 0:
        return {"kind": "gaussian", "sigma": rng.choice([0.5, 1.0, 2.0, 0.0, -1.0, "1", 1e-300])}
    if choice == 1:
        return {"kind": "laplace", "scale": rng.choice([0.5, 1.0, 0.0, float("inf"), "auto"])}
    if choice == 2:
        return {"kind": "randomized_response", "eps": rng.choice([0.5, 1.0, -1.0]), "k": 2}
    if choice == 3:  # a composition nested shallow (runs) or 30+ deep (beyond memory)
        mechanism: object = {"kind": "laplace", "scale": 1.0}
        for _ in range(rng.choice([1, 2, 3, 30, 31, 40])):
            mechanism = {"kind": "composed", "base": mechanism, "times": rng.choice([2, 2, 3])}
        return mechanism
    if choice == 4:
        base = {"kind": "gaussian", "sigma": 1.0}
        return {"kind": "poisson_subsampled", "base": base, "rate": rng.choice([0.1, 0.0, 2.0])}
    if choice == 5:
        function = rng.choice(_RELEASE_FUNCTIONS)
        table = {
            "kind": "blackbox",
            "callable": f"{module}:{function}",
            "dataset": [0.0],
            "neighbour": [1.0],
        }
        if rng.random() < 0.3:
            table = {**table, "callable": f"{module}:noisy_vector", "vectorised": True}
        return table
    if choice == 6:
        return {
            "kind": "blackbox",
            "callable": rng.choice(_CALLABLES),
            "dataset": [0.0],
            "neighbour": [1.0],
        }
    if choice == 7:
        return {"kind": rng.choice(["gausian", "", "dpsgd2", 3]), "sigma": 1.0}
    return _deep(rng)


def _claim(rng: random.Random) -> object:
    return rng.choice(
        [
            {"kind": "gdp", "mu": 1.0},
            {"kind": "gdp", "mu": 0.05},  # refuted by any Gaussian or Laplace: exit 3
            {"kind": "approx_dp", "eps": 0.05, "delta": 0.0},
            {"kind": "approx_dp", "eps": -1.0},
            {"kind": "accountant", "method": rng.choice(["pld", "exact", "nope"])},
            {"kind": "nope"},
            "gdp",
            _deep(rng),
        ]
    )


def _variant(rng: random.Random, module: str) -> tuple[str, list[str], bool]:
    """A spec text, extra command-line arguments, and whether to use a store."""
    table: dict[str, object] = {
        "name": "fuzz",
        "mechanism": {"kind": "gaussian", "sigma": 1.0},
        "trials": 300,
        "seed": rng.randrange(100),
    }
    args: list[str] = ["--trials", "300"]
    for _ in range(rng.choice([0, 1, 2, 2, 3, 3])):
        what = rng.randrange(14)
        if what == 0:
            table["name"] = rng.choice(_HOSTILE_NAMES)
        elif what == 1:
            table["trials"] = rng.choice(_TRIALS)
        elif what == 2:
            args = ["--trials", rng.choice(_CLI_TRIALS)]
        elif what in (3, 4, 5):
            table["mechanism"] = _mechanism(rng, module)
            if rng.random() < 0.7:
                table["attack"] = {"kind": "threshold"}
        elif what == 6:
            table["claim"] = _claim(rng)
        elif what == 7:
            key = rng.choice(["deltas", "confidence", "seed", "expect", "strategy", "n_jobs"])
            table[key] = rng.choice(
                [[], [0.0], [1.0], [-1e-5], [float("nan")], 0.0, 1.0, 2, -3, 1.5, "x", "fixed"]
            )
        elif what == 8:
            table["selection_trials"] = rng.choice([0, 1, 2, 2**63, 1e19, "many"])
        elif what == 9:
            table[rng.choice(["nmae", "trails", "", "mechanism.sigma"])] = 1
        elif what == 10:
            table[rng.choice(["description", "pair", "attack", "name"])] = _deep(rng)
        elif what == 11:
            attack = {"kind": rng.choice(["threshold", "likelihood_ratio", "tracing", "nope"])}
            if rng.random() < 0.3:
                attack["projection"] = rng.choice([0, 5, -1, [1.0, 2.0]])
            table["attack"] = attack
        elif what == 12:
            table["description"] = rng.choice(["<b>bold</b> & co", "x" * 10_000, "a\nb"])
        else:
            table["pair"] = rng.choice(
                [{"d": [0.0], "d_prime": [1.0]}, {"d": [], "d_prime": []}, {"d": "x"}, []]
            )
    text = toml_document([table])
    if rng.random() < 0.05:
        text += text  # the same name twice
    if rng.random() < 0.03:
        text = rng.choice(["", "[[audit]", "audit = 3\n", "\x00\x01", "[audit]\nname = 'x'\n"])
    return text, args, rng.random() < 0.1


def _run(*args: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def _check(code: int, err: str, output: Path, what: str) -> None:
    assert code in (cli.EXIT_OK, cli.EXIT_USER_ERROR, cli.EXIT_VIOLATION), what
    lines = err.splitlines()
    if code == cli.EXIT_USER_ERROR:
        assert len(lines) == 1 and lines[0].startswith("dpaudit: error: "), what
        assert not output.exists(), what
    else:
        assert all(line.startswith("dpaudit: warning: ") for line in lines), what
        assert (output / "index.html").is_file() and (output / "README.md").is_file(), what


def test_run_fuzz(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    module = f"dpaudit_fuzz_releases_{os.getpid()}"
    (tmp_path / f"{module}.py").write_text(_RELEASES)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(reports.writer, "audit_figures", lambda record, keys=(): {})
    rng = random.Random(SEED)
    codes: Counter[int] = Counter()
    for i in range(VARIANTS):
        text, args, stored = _variant(rng, module)
        work = tmp_path / f"v{i}"
        work.mkdir()
        spec = work / "spec.toml"
        spec.write_text(text, encoding="utf-8", errors="surrogatepass")
        what = f"variant {i}: {' '.join(args)} {'--store ' if stored else ''}{text[:300]!r}"
        store = ["--store", str(work / "store")] if stored else []
        try:
            code, _, err = _run("run", spec, "-o", work / "out", "--quiet", *args, *store)
        except BaseException as exc:  # what would be a traceback at the command line
            pytest.fail(f"{what}: {type(exc).__name__}: {exc}")
        _check(code, err, work / "out", what + f"\nstderr: {err[:500]}")
        codes[code] += 1
        if stored and code != cli.EXIT_USER_ERROR:
            # Damage a stored file; the rerun reports it and reaches the same verdicts.
            files = sorted((work / "store").glob("*/*.npz"))
            damaged = files[rng.randrange(len(files))]
            damaged.write_bytes(damaged.read_bytes()[: rng.choice([0, 10, 100])])
            again, _, err = _run("run", spec, "-o", work / "again", "--quiet", *args, *store)
            assert again == code, what
            assert damaged.name in err and "drawn again" in err, what
            _check(again, err, work / "again", what)
    capfd.readouterr()  # foreign code may have printed
    # The variants exercise every outcome, input errors most.
    assert codes[cli.EXIT_USER_ERROR] > VARIANTS // 3, codes
    assert codes[cli.EXIT_OK] >= 10 and codes[cli.EXIT_VIOLATION] >= 3, codes
