"""DP-SGD's final model: the last-iterate curve against the composition, the final-model Dirac
audit at scale, and shuffled batches against the Poisson accountant.

Sections (all by default, or pick some with ``--only``):

- ``theory``: ``eps(1e-5)`` of the last iterate (:func:`dpaudit.bounds.pld.last_iterate`) and
  of the composition of every step (the PLD accountant), certified lower and upper values, at
  ``q = 0.01`` with ``sigma = 1, T = 1000`` and ``sigma = 0.8, T = 2500``.
- ``speed``: final canary coordinates per second drawn directly from their exact law
  (``observe="final_canary"``) against trained models (``observe="final"``, logistic regression,
  ``n = 1000``, ``d = 20``, ``T = 1000``), measured in one run; their ratio.
- ``audit``: the final-model Dirac audit at ``q = 0.01, sigma = 1, T = 1000`` with ``--trials``
  per dataset (default ``10^8``) on ``--n-jobs`` workers: the certified ``eps(1e-5)``, its ratio
  to the last iterate's and the composition's, and the wall-clock time.
- ``mismatch``: DP-SGD with shuffled batches (``n = 1000``, ``m = 10``, ``sigma = 1``,
  ``T = 1000``, white box) audited against the Poisson accountant at ``q = m/n``, which such
  implementations report (``--mismatch-trials`` per dataset); and, for the same claim, the
  Poisson twin.

    python bench/bench_dpsgd_final.py [--only theory speed audit mismatch] [--trials 1e8]
        [--n-jobs 2] [--mismatch-trials 20000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import dpaudit
from dpaudit.mechanisms import Composed, Gaussian, PoissonSubsampled
from dpaudit.mechanisms.dpsgd import DPSGD

DELTA = 1e-5


def theory() -> None:
    """The two settings of the DP-SGD guide: last iterate against composition."""
    print("theory: eps(1e-5), certified [lower, upper], q = 0.01")
    for sigma, steps in ((1.0, 1000), (0.8, 2500)):
        mech = DPSGD(sigma=sigma, rate=0.01, steps=steps)
        last, composed = mech.theory("last_iterate"), mech.theory("pld")
        li = (last.epsilon(DELTA, "lower"), last.epsilon(DELTA, "upper"))
        co = (composed.epsilon(DELTA, "lower"), composed.epsilon(DELTA, "upper"))
        print(
            f"  sigma = {sigma:g}, T = {steps}: last iterate [{li[0]:.4f}, {li[1]:.4f}], "
            f"composition [{co[0]:.4f}, {co[1]:.4f}], ratio {co[1] / li[1]:.2f}"
        )


def speed() -> None:
    """Direct draws of the final canary coordinate against trained models."""
    direct = DPSGD(sigma=1.0, rate=0.01, steps=1000, observe="final_canary")
    trained = DPSGD(sigma=1.0, rate=0.01, steps=1000)
    dataset = trained.worst_case_pair().d_prime
    rng = np.random.default_rng(0)
    rates = []
    for mech, runs in ((direct, 2**22), (trained, 256)):
        mech.sample(dataset, 2, rng)
        started = time.perf_counter()
        mech.sample(dataset, runs, rng)
        rates.append(runs / (time.perf_counter() - started))
    print("speed: final canary coordinates per second, one core, T = 1000, q = 0.01")
    print(f"  drawn from the exact law    {rates[0]:,.0f}/s")
    print(f"  trained (logistic, n=1000)  {rates[1]:,.0f}/s")
    print(f"  ratio                       {rates[0] / rates[1]:,.0f}")


def audit(trials: int, n_jobs: int) -> None:
    """The acceptance audit: 10^8 trials per dataset of the final canary coordinate."""
    mech = DPSGD(sigma=1.0, rate=0.01, steps=1000, observe="final_canary")
    started = time.perf_counter()
    result = dpaudit.audit_mechanism(mech, trials=trials, seed=0, n_jobs=n_jobs)
    seconds = time.perf_counter() - started
    certified = result.epsilon_lower_bound(DELTA)
    last = mech.theory("last_iterate")
    composed = mech.epsilon(DELTA, "pld")
    print(f"audit: final canary coordinate, q = 0.01, sigma = 1, T = 1000, {trials:,} trials")
    print(f"  attack                      {result.attack.name}")
    print(f"  certified eps(1e-5)         {certified:.4f} (95%)")
    print(
        f"  last iterate eps(1e-5)      [{last.epsilon(DELTA, 'lower'):.4f}, "
        f"{last.epsilon(DELTA, 'upper'):.4f}]; ratio {certified / last.epsilon(DELTA):.3f}"
    )
    print(f"  composition eps(1e-5)       {composed:.4f}; ratio {certified / composed:.3f}")
    print(f"  wall clock                  {seconds:.0f} s on {n_jobs} worker(s)")


def mismatch(trials: int, n_jobs: int) -> None:
    """Shuffled batches against the Poisson accountant's claim, and the Poisson twin."""
    claim = Composed(PoissonSubsampled(Gaussian(1.0, 1.0), 0.01), 1000).tradeoff("pld")
    print(
        f"mismatch: white box, n = 1000, m = 10 (q = 0.01), sigma = 1, T = 1000, "
        f"{trials:,} trials; claim: Poisson accountant, eps(1e-5) = {claim.epsilon(DELTA):.4f}"
    )
    twins = {
        "shuffled": DPSGD(
            sigma=1.0, batch_size=10, steps=1000, sampling="shuffled", observe="updates"
        ),
        "poisson": DPSGD(sigma=1.0, rate=0.01, steps=1000, observe="updates"),
    }
    for name, mech in twins.items():
        started = time.perf_counter()
        result = dpaudit.audit_mechanism(mech, trials=trials, seed=0, n_jobs=n_jobs)
        verdict = result.verdict(claim, [DELTA])
        print(
            f"  {name:<9} {verdict['verdict']:<10} certified eps(1e-5) "
            f"{verdict['epsilon_lower_bounds'][repr(DELTA)]:.4f}, refuted by "
            f"{verdict['refuted_by'] or 'nothing'}, {time.perf_counter() - started:.0f} s"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only",
        nargs="*",
        default=["theory", "speed", "audit", "mismatch"],
        choices=["theory", "speed", "audit", "mismatch"],
    )
    parser.add_argument("--trials", type=float, default=1e8, help="audit: trials per dataset")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--mismatch-trials", type=float, default=20_000)
    args = parser.parse_args()
    if "theory" in args.only:
        theory()
    if "speed" in args.only:
        speed()
    if "audit" in args.only:
        audit(int(args.trials), args.n_jobs)
    if "mismatch" in args.only:
        mismatch(int(args.mismatch_trials), args.n_jobs)


if __name__ == "__main__":
    main()
