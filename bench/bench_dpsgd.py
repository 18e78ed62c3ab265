"""DP-SGD: training runs per second, where the time goes, and the cost of the white-box audit.

Sections (all by default, or pick some with ``--only``):

- ``throughput``: logistic regression, d = 20 features, n = 1000, T = 100, q = 0.01; runs per
  second with 1 and 2 worker processes of one warm pool (wall clock), and the share of one step
  spent drawing batches, computing clipped per-example gradient sums and drawing the noise.
- ``whitebox``: the Dirac-canary audit of ``examples/dpsgd-dirac-whitebox.toml`` (sigma = 1,
  q = 0.01, T = 1000, likelihood-ratio attack, ``--trials`` per dataset) for Poisson sampling
  (add/remove) and fixed-size batches (replace-one, m = 10 of n), on ``--dataset`` (synthetic,
  n = 1000, or goog, n = 1041): wall-clock cost, the mu lower bound beside the PLD curve's mu
  at the witness, and whether the PLD curves lie inside the 95% band wherever the band is
  informative; then the same pair in the other order (``--swapped-trials``, 0 to skip).
- ``blackbox``: the input canary on the final model (membership inference on its loss; T = 100,
  ``--blackbox-trials`` per dataset) beside the white-box Dirac canary of the same run length.
  Its mu is only about 0.09, so the holdout needs a few 10^5 trials to certify anything.

    python bench/bench_dpsgd.py [--only throughput whitebox blackbox] [--trials 100000]
        [--swapped-trials 100000] [--blackbox-trials 200000] [--dataset synthetic]
        [--samplings poisson fixed] [--save DIR]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from joblib import Parallel, delayed
from scipy import special

import dpaudit
from dpaudit.attacks import MembershipInference
from dpaudit.bounds.pld import PLD
from dpaudit.bounds.tradeoff import from_points
from dpaudit.mechanisms.dpsgd import _BLOCK_ENTRIES, DPSGD

#: Runs per ``sample`` call in the throughput section and per engine chunk in the audits.
CHUNK = 1024


def _train(mechanism: DPSGD, dataset: np.ndarray, runs: int, seed: int) -> int:
    rng = np.random.default_rng(seed)
    for first in range(0, runs, CHUNK):
        mechanism.sample(dataset, min(CHUNK, runs - first), rng)
    return runs


def throughput(runs: int) -> None:
    """Runs per second and the split of one step's time."""
    mechanism = DPSGD(sigma=1.0, rate=0.01, steps=100, canary="input")
    dataset = mechanism.worst_case_pair().d_prime
    print("throughput: logistic regression, d = 20, n = 1000, T = 100, q = 0.01")
    print(f"  cores available            {os.cpu_count()}")
    # Both settings run in the same pool of 2 worker processes (started once, warmed up), whose
    # BLAS/OpenMP pools joblib limits to cpu_count // 2 threads each: "1 worker" is one task on
    # one of them, so the ratio measures processes, not threads.
    with Parallel(n_jobs=2) as parallel:
        parallel(delayed(_train)(mechanism, dataset, CHUNK, s) for s in range(2))
        for n_jobs in (1, 2):
            started = time.perf_counter()
            done = sum(
                parallel(
                    delayed(_train)(mechanism, dataset, runs // n_jobs, s) for s in range(n_jobs)
                )
            )
            seconds = time.perf_counter() - started
            rate = done / seconds
            print(f"  {n_jobs} worker(s)                {rate:10,.0f} runs/s (wall clock)")
    _breakdown(mechanism, dataset)


def _breakdown(mechanism: DPSGD, dataset: np.ndarray) -> None:
    """CPU seconds per step for CHUNK runs, by part, from the training loop's building blocks
    (CPU time, so that other processes on the machine do not distort the split)."""
    rng = np.random.default_rng(0)
    x, y, c = mechanism._records(dataset)
    design = mechanism._model.design(x)
    sq = np.einsum("ij,ij->i", x, x) + 1.0
    theta = np.tile(mechanism.initial_params(), (CHUNK, 1))
    steps = mechanism.steps
    block = max(1, int(_BLOCK_ENTRIES // (CHUNK * x.shape[0] * mechanism.rate)))
    started = time.process_time()
    batches = []
    for first in range(0, steps, block):
        batches += mechanism._batches(rng, min(block, steps - first), CHUNK, x.shape[0], c)
    sampling = (time.process_time() - started) / steps
    started = time.process_time()
    for run, rec, canary in batches:
        mechanism._sum_gradients(theta, run[~canary], rec[~canary], design, y, sq)
    gradients = (time.process_time() - started) / steps
    started = time.process_time()
    for _ in range(steps):
        rng.standard_normal((CHUNK, mechanism.n_params))
    noise = (time.process_time() - started) / steps
    started = time.process_time()
    mechanism.sample(dataset, CHUNK, rng)
    total = (time.process_time() - started) / steps
    print(f"  one step of {CHUNK} runs (CPU)  {total * 1e3:8.3f} ms")
    parts = {"batch sampling": sampling, "gradient sums": gradients, "noise": noise}
    for name, seconds in parts.items():
        print(f"    {name:24s} {seconds * 1e3:8.3f} ms  {seconds / total:6.1%}")
    rest = total - sum(parts.values())
    print(f"    {'rest (masks, updates)':24s} {rest * 1e3:8.3f} ms  {rest / total:6.1%}")
    print(f"  bottleneck                 {max(parts, key=parts.get)}")
    print(f"  one worker, CPU time       {CHUNK / (total * steps):10,.0f} runs/s")


def _mu_at(curve, alpha: float) -> float:
    return float(-special.ndtri(alpha) - special.ndtri(curve(alpha)))


def _band_check(result, curve) -> str:
    """How many alphas of a grid, among those where the band is informative (upper band below
    ``1 - alpha``), have ``curve`` inside the band (lower band - 1e-3 <= curve <= upper band)."""
    band = result.tradeoff
    alpha = np.linspace(1e-3, 0.999, 999)
    lower, upper = band.lower_band_curve()(alpha), band.upper_band_curve()(alpha)
    theory = curve(alpha)
    informative = upper < 1 - alpha - 1e-9
    inside = (theory <= upper + 1e-9) & (theory >= lower - 1e-3)
    return f"{int(inside[informative].sum())} of {int(informative.sum())} informative alphas"


def _both_orders_check(forward, swapped, curve) -> str:
    """The accountant's curve ``conv(min(T(P, Q), T(Q, P)))`` against the same operation on the
    two bands: between ``conv(min(lower bands)) - 1e-3`` and ``conv(min(upper bands))``."""
    lower = from_points(
        np.concatenate([r.tradeoff.band_alpha_lower for r in (forward, swapped)]),
        np.concatenate([r.tradeoff.band_beta_lower for r in (forward, swapped)]),
    )
    upper = from_points(
        np.concatenate([r.tradeoff.band_alpha_upper for r in (forward, swapped)]),
        np.concatenate([r.tradeoff.band_beta_upper for r in (forward, swapped)]),
    )
    alpha = np.linspace(1e-3, 0.999, 999)
    theory, low, up = curve(alpha), lower(alpha), upper(alpha)
    informative = up < 1 - alpha - 1e-9
    inside = (theory <= up + 1e-9) & (theory >= low - 1e-3)
    return f"{int(inside[informative].sum())} of {int(informative.sum())} informative alphas"


def _audit(mechanism, pair, trials: int, n_jobs: int, save: str | None, label: str):
    started = time.perf_counter()
    result = dpaudit.audit_mechanism(
        mechanism, pair, trials=trials, seed=0, n_jobs=n_jobs, chunk_size=CHUNK, progress=False
    )
    seconds = time.perf_counter() - started
    if save:
        os.makedirs(save, exist_ok=True)
        with open(os.path.join(save, f"whitebox-{label}.json"), "w") as fh:
            fh.write(result.to_json())
    return result, seconds


def whitebox(
    trials: int,
    swapped_trials: int,
    n_jobs: int,
    save: str | None,
    dataset: str,
    samplings: tuple[str, ...],
) -> None:
    """The acceptance audit of the white-box Dirac canary, Poisson and fixed-size batches.

    The accountant's curve holds in both orders, ``conv(min(T(P, Q), T(Q, P)))``; an audit
    measures one order. The order ``(D, D_prime)`` is compared with ``T(P, Q)`` (the PLD of
    ``P || Q`` alone) and with the accountant's curve; with ``swapped_trials > 0`` the order
    ``(D_prime, D)`` is audited too, compared with ``T(Q, P)``, and the accountant's curve with
    the lower envelope of the two bands.
    """
    settings = {
        "poisson": {"rate": 0.01},
        "fixed": {"batch_size": 10, "sampling": "fixed"},
    }
    print(
        f"white box ({dataset}): Dirac canary, sigma = 1, T = 1000, {trials:,} trials per dataset"
    )
    for label in samplings:
        kwargs = settings[label]
        mechanism = DPSGD(dataset=dataset, sigma=1.0, steps=1000, observe="updates", **kwargs)
        pair = mechanism.worst_case_pair()
        result, seconds = _audit(mechanism, pair, trials, n_jobs, save, f"{dataset}-{label}")
        runs = 2 * (result.trials + result.selection_trials + result.pilot_trials)
        curve = mechanism.tradeoff("pld")
        pld = mechanism.theory("pld")
        witness = result.mu_witness()
        theory = _mu_at(curve, witness["alpha_upper"])
        print(f"  {mechanism.name}")
        print(f"    cost                     {seconds:8.1f} s for {runs:,} runs of T = 1000")
        print(
            f"    mu lower bound           {witness['mu']:.4f}  PLD mu at alpha+ = "
            f"{witness['alpha_upper']:.4f}: {theory:.4f}  ratio {witness['mu'] / theory:.3f}"
        )
        print(
            f"    eps lower bound (1e-5)   {result.epsilon_lower_bound(1e-5):.4f}  "
            f"PLD eps {mechanism.epsilon(1e-5, 'pld'):.4f}"
        )
        print(f"    PLD curve inside band    {_band_check(result, curve)}")
        print(f"    T(P, Q) inside band      {_band_check(result, PLD(pld.pq).tradeoff())}")
        print(f"    GDP estimate (estimate)  {result.gdp_estimate()['mu']:.4f}")
        if swapped_trials > 0:
            back, seconds = _audit(
                mechanism,
                pair.swapped(),
                swapped_trials,
                n_jobs,
                save,
                f"{dataset}-{label}-swapped",
            )
            print(f"    swapped order, {swapped_trials:,} trials per dataset ({seconds:.0f} s)")
            print(f"      mu lower bound         {back.mu_lower_bound():.4f}")
            print(f"      T(Q, P) inside band    {_band_check(back, PLD(pld.qp).tradeoff())}")
            print(f"      PLD curve, both bands  {_both_orders_check(result, back, curve)}")


def blackbox(trials: int, n_jobs: int) -> None:
    """Input canary on the final model against the Dirac canary's updates, T = 100."""
    print(f"black box vs white box: sigma = 1, q = 0.01, T = 100, {trials:,} trials per dataset")
    black = DPSGD(sigma=1.0, rate=0.01, steps=100, canary="input")
    pair = black.worst_case_pair()
    white = DPSGD(sigma=1.0, rate=0.01, steps=100, observe="updates")
    attacks = {
        "input canary, final model, loss": (black, MembershipInference.for_mechanism(black, pair)),
        "Dirac canary, updates, likelihood ratio": (white, None),
    }
    for label, (mechanism, attack) in attacks.items():
        started = time.perf_counter()
        result = dpaudit.audit_mechanism(
            mechanism, None, attack, trials=trials, seed=0, n_jobs=n_jobs, progress=False
        )
        seconds = time.perf_counter() - started
        print(
            f"  {label:40s} mu >= {result.mu_lower_bound():.4f}  eps(1e-5) >= "
            f"{result.epsilon_lower_bound(1e-5):.4f}  ({seconds:.0f} s)"
        )
    print(
        f"  theory: eps(1e-5) = {white.epsilon(1e-5, 'pld'):.4f} (PLD), "
        f"mu = {white.tradeoff('gdp_clt').mu:.4f} (GDP CLT, an approximation)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only",
        nargs="+",
        choices=("throughput", "whitebox", "blackbox"),
        default=("throughput", "whitebox", "blackbox"),
    )
    parser.add_argument("--runs", type=int, default=40_960, help="runs in the throughput test")
    parser.add_argument("--trials", type=int, default=100_000, help="white-box trials")
    parser.add_argument(
        "--swapped-trials", type=int, default=100_000, help="white-box trials, other order"
    )
    parser.add_argument("--blackbox-trials", type=int, default=200_000, help="black-box trials")
    parser.add_argument("--n-jobs", type=int, default=2, help="workers of the audits")
    parser.add_argument("--save", help="directory for the white-box results (JSON)")
    parser.add_argument(
        "--dataset", choices=("synthetic", "goog"), default="synthetic", help="white-box data"
    )
    parser.add_argument(
        "--samplings",
        nargs="+",
        choices=("poisson", "fixed"),
        default=("poisson", "fixed"),
        help="white-box batch sampling schemes",
    )
    args = parser.parse_args()
    if "throughput" in args.only:
        throughput(args.runs)
    if "whitebox" in args.only:
        whitebox(
            args.trials, args.swapped_trials, args.n_jobs, args.save, args.dataset, args.samplings
        )
    if "blackbox" in args.only:
        blackbox(args.blackbox_trials, args.n_jobs)


if __name__ == "__main__":
    main()
