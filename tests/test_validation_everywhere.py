"""Wrong input anywhere public raises ValueError naming the parameter, the value and the range;
at the command line it is one line on stderr and exit code 1."""

from __future__ import annotations

import contextlib
import io
import math
import os
import re

import numpy as np
import pytest

import dpaudit
from dpaudit import cli
from dpaudit import mechanisms as mech
from dpaudit._core.validation import WORKERS_PER_CORE
from dpaudit.attacks import LikelihoodRatio, Threshold
from dpaudit.audit.backends import backend, check_scheduler
from dpaudit.audit.confidence import clopper_pearson_upper
from dpaudit.audit.one_run import simulate_one_run
from dpaudit.audit.store import ChunkStore
from dpaudit.bounds.gaussian_dp import gdp, gdp_delta, gdp_epsilon
from dpaudit.bounds.pld import gaussian as gaussian_pld
from dpaudit.bounds.rdp import RDPCurve
from dpaudit.bounds.tradeoff import approx_dp, from_delta
from dpaudit.mechanisms.pairs import answer_pairs, record_pairs

NAN, INF = math.nan, math.inf
_S0, _S1 = np.linspace(0.0, 1.0, 8), np.linspace(0.5, 1.5, 8)
_ONE_RUN = simulate_one_run(100, 1.0, seed=0)
_RESULT = dpaudit.audit_mechanism(mech.Gaussian(1.0), trials=1000, seed=0)
#: One worker more than check_n_jobs allows (few enough to start should the check be missing).
_TOO_MANY_JOBS = WORKERS_PER_CORE * (os.cpu_count() or 1) + 1


def _gaussian_audit(**kwargs):
    return lambda: dpaudit.audit_mechanism(mech.Gaussian(1.0), **{"trials": 1000, **kwargs})


# (label, call, text the message must contain)
CASES = [
    ("Gaussian sigma 0", lambda: mech.Gaussian(0.0), "sigma must be in (0, inf), got 0.0"),
    ("Gaussian sigma nan", lambda: mech.Gaussian(NAN), "sigma must be a real number, got nan"),
    ("Gaussian sigma inf", lambda: mech.Gaussian(INF), "sigma must be finite, got inf"),
    ("Gaussian sigma str", lambda: mech.Gaussian("a"), "sigma must be a real number, got 'a'"),
    (
        "Gaussian sigma beyond floats",
        lambda: mech.Gaussian(10**400),
        "sigma must be a real number within the float range (below 1.8e308), got an integer of "
        "about 1e400",
    ),
    (
        "Gaussian sensitivity",
        lambda: mech.Gaussian(1.0, sensitivity=-1),
        "sensitivity must be in (0, inf), got -1",
    ),
    ("Laplace scale", lambda: mech.Laplace(-1.0), "scale must be in (0, inf), got -1.0"),
    ("Laplace scale None", lambda: mech.Laplace(None), "scale must be a real number, got None"),
    ("RR eps", lambda: mech.RandomizedResponse(-1.0), "eps must be in (0, inf), got -1.0"),
    ("RR k", lambda: mech.RandomizedResponse(1.0, k=1), "k must be an integer in [2, inf), got 1"),
    ("RR k float", lambda: mech.RandomizedResponse(1.0, k=2.5), "k must be an integer, got 2.5"),
    (
        "Poisson rate",
        lambda: mech.PoissonSubsampled(mech.Gaussian(1.0), 1.5),
        "rate must be in (0, 1], got 1.5",
    ),
    ("Poisson base", lambda: mech.PoissonSubsampled(3, 0.5), "base of PoissonSubsampled must be"),
    (
        "fixed-size size",
        lambda: mech.FixedSizeSubsampled(mech.Gaussian(1.0), 20, 10),
        "size must be an integer in [1, 10], got 20",
    ),
    (
        "Composed times",
        lambda: mech.Composed(mech.Gaussian(1.0), 0),
        "times must be an integer in [1, inf), got 0",
    ),
    ("Composed empty", lambda: mech.Composed([]), "must hold at least one mechanism"),
    (
        "pair relation",
        lambda: mech.NeighbouringPair(np.zeros(1), np.ones(1), relation="x"),
        "relation must be one of 'add_remove', 'replace_one'; got 'x'",
    ),
    ("gdp mu", lambda: gdp(-1.0), "mu must be in [0, inf), got -1.0"),
    ("gdp mu nan", lambda: gdp(NAN), "mu must be a real number, got nan"),
    ("approx_dp eps", lambda: approx_dp(-1.0, 0.0), "eps must be in [0, inf), got -1.0"),
    ("approx_dp delta", lambda: approx_dp(1.0, 2.0), "delta must be in [0, 1], got 2.0"),
    ("Threshold projection", lambda: Threshold(projection="x"), "projection must be None"),
    ("LikelihoodRatio", lambda: LikelihoodRatio(3, None), "mechanism must offer log_density"),
    ("audit trials", _gaussian_audit(trials=0), "trials must be an integer in [1, inf), got 0"),
    ("audit trials float", _gaussian_audit(trials=1.5), "trials must be an integer, got 1.5"),
    ("audit seed", _gaussian_audit(seed=-1), "seed must be an integer in [0, inf), got -1"),
    ("audit confidence", _gaussian_audit(confidence=1.0), "confidence must be in (0, 1), got 1.0"),
    ("audit strategy", _gaussian_audit(strategy="x"), "strategy must be one of 'holdout'"),
    ("audit n_jobs", _gaussian_audit(n_jobs=0), "n_jobs must be a non-zero integer"),
    (
        "audit n_jobs beyond the machine",
        _gaussian_audit(n_jobs=_TOO_MANY_JOBS),
        "n_jobs must be at most",
    ),
    ("audit chunk_size", _gaussian_audit(chunk_size=0), "chunk_size must be an integer in [1,"),
    ("audit bins", _gaussian_audit(bins=1), "bins must be an integer in [2, 1048576], got 1"),
    ("audit store", _gaussian_audit(store=3), "store must be None or a directory path, got 3"),
    # a FileNotFoundError traceback before
    ("audit store /proc", _gaussian_audit(store="/proc/x"), "store /proc/x: cannot create"),
    (
        "accountant audit of a string",
        lambda: dpaudit.audit_accountant("gaussian", gdp(1.0), trials=100),
        "mechanism must offer sample(dataset, size, rng) and log_density, got str",
    ),
    ("audit attack", _gaussian_audit(attack=3), "attack must be a dpaudit Attack, got int"),
    (
        "audit mechanism",
        lambda: dpaudit.audit_mechanism(3, trials=10),
        "mechanism must offer sample(dataset, size, rng)",
    ),
    (
        "audit NaN dataset",
        lambda: dpaudit.audit_mechanism(
            mech.Gaussian(1.0), mech.NeighbouringPair(np.zeros(0), np.array([NAN])), trials=100
        ),
        # The first stream to draw is the pilot's, or the timing step's on a slow machine.
        re.compile(
            r"dataset must contain only finite numbers, got NaN or inf "
            r"\((pilot|timing) chunk 0, dataset D_prime\)"
        ),
    ),
    ("ChunkStore directory", lambda: ChunkStore(None, {}), "store must be a directory path"),
    ("scheduler", lambda: check_scheduler("localhost"), "scheduler must be a Dask scheduler"),
    ("backend", lambda: backend("spark").__enter__(), "backend must be one of 'local', 'dask'"),
    (
        "gdp_epsilon delta",
        lambda: gdp_epsilon([1e-5, 2.0], 1.0),
        "delta must lie in [0, 1] (no NaN); got values outside it, such as 2.0",
    ),
    (
        "from_delta delta",
        lambda: from_delta([1.0], [NAN]),
        "delta must lie in [0, 1] (no NaN); got values outside it, such as nan",
    ),
    ("one-run mu", lambda: simulate_one_run(10, -1.0), "mu must be in [0, inf), got -1.0"),
    (
        "Clopper-Pearson gamma",
        lambda: clopper_pearson_upper(1, 10, [0.05, 1.0]),
        "gamma must lie in (0, 1) (no NaN); got values outside it, such as 1.0",
    ),
    (
        "spec n_jobs",
        lambda: dpaudit.specs.suite()[0].with_overrides(n_jobs=0.5),
        "n_jobs must be a non-zero integer (-1: all cores, -2: all but one), got 0.5",
    ),
    # Wrong calls that raised OverflowError, TypeError, MemoryError or RuntimeError, or a
    # ValueError that did not name the parameter:
    (
        "scores seed inf",
        lambda: dpaudit.audit_scores(_S0, _S1, seed=INF),
        "seed must be an integer (a seed, not a float), got inf",
    ),
    ("scores seed None", lambda: dpaudit.audit_scores(_S0, _S1, seed=None), "seed must be"),
    ("scores seed -1", lambda: dpaudit.audit_scores(_S0, _S1, seed=-1), "seed must be"),
    ("scores thresholds 3j", lambda: dpaudit.audit_scores(_S0, _S1, thresholds=3j), "thresholds"),
    ("scores text", lambda: dpaudit.audit_scores(["1"] * 8, _S1), "scores_d must be an array"),
    ("one-run seed", lambda: simulate_one_run(10, 1.0, seed="0"), "seed must be"),
    ("one-run m beyond memory", lambda: simulate_one_run(10**13, 1.0), "m = 10,000,000,000,000"),
    (
        "one-run steps beyond the float range",
        lambda: dpaudit.audit_one_run(*_ONE_RUN, family="dpsgd", sample_rate=0.1, steps=10**40),
        "steps must be an integer in [1, 9007199254740992]",
    ),
    (
        "PLD compositions",
        lambda: gaussian_pld(1.0).self_compose(10**40),
        "n must be an integer in [1, 9007199254740992]",
    ),
    ("gdp_epsilon mu 1e400", lambda: gdp_epsilon(1e-5, 10**400), "mu must be"),
    ("gdp_delta eps text", lambda: gdp_delta("0", 1.0), "eps must be"),
    ("record_pairs seed", lambda: record_pairs(np.zeros(3), [1.0], seed=1.5), "seed must be"),
    ("answer_pairs base", lambda: answer_pairs(3, base=None), "base must be a real number"),
    ("answer_pairs shift", lambda: answer_pairs(3, shift=0.0), "shift must be in (0, inf)"),
    ("RDP orders", lambda: RDPCurve("a", [0.1]), "orders must be an array of Renyi orders"),
    ("Clopper-Pearson k", lambda: clopper_pearson_upper("a", 10, 0.05), "k (count) must be"),
    ("pair ragged", lambda: mech.NeighbouringPair([0.0], [[1, 2], [3]]), "d_prime must be"),
    ("deltas None", lambda: _RESULT.to_frame(deltas=None), "deltas must be a non-empty"),
    ("deltas empty", lambda: dpaudit.reports.build_record(_RESULT, deltas=[]), "deltas must"),
    ("write path", lambda: dpaudit.reports.write(_RESULT, 3), "must be a directory path"),
    ("write dpi", lambda: dpaudit.reports.write(_RESULT, "out", dpi=1.5), "dpi must be"),
    ("load_results path", lambda: dpaudit.reports.load_results(3), "path must be the path"),
]


@pytest.mark.parametrize(("label", "call", "message"), CASES, ids=[c[0] for c in CASES])
def test_public_constructors_and_functions_name_the_problem(label, call, message):
    with pytest.raises(ValueError) as info:
        call()
    if isinstance(message, re.Pattern):
        assert message.search(str(info.value))
    else:
        assert message in str(info.value)


CLI_CASES = [
    (["run", "SPEC", "-o", "OUT", "--trials", "0"], "trials must be an integer in [1, inf), got 0"),
    (["run", "SPEC", "-o", "OUT", "--seed", "-1"], "seed must be an integer in [0, inf), got -1"),
    (["run", "SPEC", "-o", "OUT", "--n-jobs", "0"], "n_jobs must be a non-zero integer"),
    (["run", "SPEC", "-o", "OUT", "--n-jobs", str(_TOO_MANY_JOBS)], "n_jobs must be at most"),
    (["run", "SPEC", "-o", "OUT", "--trials", "abc"], "argument --trials: invalid int value"),
    (["run", "SPEC", "-o", "OUT", "--store", "FILE"], "exists and is not a directory"),
    (["run", "SPEC", "-o", "OUT", "--backend", "x"], "argument --backend: invalid choice"),
    (["run", "SPEC", "-o", "OUT", "--scheduler", "tcp://h:1"], "--scheduler needs --backend"),
    (["run", "MISSING", "-o", "OUT"], "spec file not found"),
    (["run", "SPEC"], "the following arguments are required: -o/--output"),
    (["suite", "-o", "OUT", "--trials", "-5"], "trials must be an integer in [1, inf), got -5"),
    (["report", "MISSING", "-o", "OUT"], "results file not found"),
    (["bounds", "gaussian", "--param", "sigma=1", "--delta", "2"], "delta must be in [0, 1]"),
    (["bounds", "gaussian", "--param", "sigma=1", "--delta", "nan"], "delta must be a real"),
    (["bounds", "gaussian", "--param", "sigma=1", "--eps", "-1"], "eps must be in [0, inf)"),
    (["bounds", "gaussian", "--param", "sigma=1", "--eps", "inf"], "eps must be finite"),
    (["bounds", "nokind"], "unknown kind 'nokind'"),
    (["bounds", "gaussian", "--param", "sigma"], "--param must look like key=value"),
    (["bounds", "gaussian", "--param", "sigma=-1"], "sigma must be in (0, inf), got -1.0"),
    (["bounds", "gaussian", "--param", "kind=x"], "--param kind=... is not allowed"),
    (["bounds", "gaussian", "--format", "xml"], "argument --format: invalid choice"),
    (["nocommand"], "invalid choice: 'nocommand'"),
]


@pytest.mark.parametrize(("argv", "message"), CLI_CASES, ids=[" ".join(c[0]) for c in CLI_CASES])
def test_cli_options_give_one_line_and_exit_1(tmp_path, argv, message):
    spec = tmp_path / "spec.toml"
    spec.write_text(
        '[[audit]]\nname = "g"\nmechanism = { kind = "gaussian", sigma = 1.0 }\ntrials = 1000\n'
    )
    (tmp_path / "FILE").write_text("")
    names = {
        "SPEC": spec,
        "OUT": tmp_path / "out",
        "MISSING": tmp_path / "missing",
        "FILE": tmp_path / "FILE",
    }
    argv = [str(names.get(a, a)) for a in argv]
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(argv)
    lines = err.getvalue().splitlines()
    assert code == cli.EXIT_USER_ERROR
    assert len(lines) == 1 and lines[0].startswith("dpaudit: error: "), lines
    assert message in lines[0], lines[0]
    assert not (tmp_path / "out").exists()
