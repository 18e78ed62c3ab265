"""The PLD accountant against Google's dp-accounting on DP-SGD (Poisson sampling, add/remove).

For sigma in {0.7, 1.1}, q = 256/60000, 60 epochs (T = 14063 steps) and delta = 1e-5, prints in
one run: eps from dpaudit (upper bound and the lower end of its bracket) and from dp-accounting
(pessimistic connect-the-dots PLD, ``from_gaussian_mechanism(...).self_compose(T)``) at each
value discretisation interval, the error of each against the pinned reference value
(tests/reference/reference_values.csv, item 5: dp-accounting with interval 1e-5), the seconds
each takes (building the one-step PLD plus composing plus reading eps) and the time ratio.
Without dp-accounting installed only dpaudit runs.

    python bench/bench_accountant.py [--intervals 1e-4 1e-5] [--repeats 1]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import time
from pathlib import Path

from dpaudit.bounds import pld

Q = 256 / 60000
STEPS = 14063
DELTA = 1e-5
SIGMAS = (0.7, 1.1)
REFERENCE = Path(__file__).resolve().parents[1] / "tests" / "reference" / "reference_values.csv"


def reference_eps() -> dict[float, float]:
    """eps of reference item 5 (dp-accounting PLD, interval 1e-5) for T = 14063, by sigma."""
    out = {}
    with open(REFERENCE, newline="") as fh:
        for row in csv.DictReader(fh):
            params = json.loads(row["params"])
            if (
                row["item"] == "5"
                and row["kind"] == "tight_upper"
                and row["library"] == "dp_accounting"
                and params.get("steps") == STEPS
            ):
                out[float(params["sigma"])] = float(row["value"])
    return out


def best_time(fn, repeats: int):
    """Smallest wall time over ``repeats`` runs and the last result."""
    best, result = math.inf, None
    for _ in range(repeats):
        started = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - started)
    return best, result


def run_dpaudit(sigma: float) -> tuple[float, float]:
    composed = pld.poisson_subsampled_gaussian(sigma, rate=Q).self_compose(STEPS)
    return composed.epsilon(DELTA), composed.epsilon(DELTA, "lower")


def run_dp_accounting(sigma: float, interval: float) -> float:
    from dp_accounting.pld import privacy_loss_distribution

    one = privacy_loss_distribution.from_gaussian_mechanism(
        sigma, sampling_prob=Q, value_discretization_interval=interval
    )
    return one.self_compose(STEPS).get_epsilon_for_delta(DELTA)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--intervals", type=float, nargs="+", default=[1e-4, 1e-5])
    parser.add_argument("--repeats", type=int, default=1, help="runs per timing (best is kept)")
    args = parser.parse_args()
    try:
        import dp_accounting  # noqa: F401

        have_dpa = True
    except ImportError:
        have_dpa = False
        print("dp-accounting is not installed: timing dpaudit only (pip install dp-accounting)")
    ref = reference_eps()
    print(f"DP-SGD q={Q:.6g}, T={STEPS}, delta={DELTA:g}; reference = dp-accounting, interval 1e-5")
    header = f"{'sigma':>5}  {'accountant':<28} {'eps':>10} {'rel. error':>11} {'seconds':>8}"
    print(header)
    print("-" * len(header))
    for sigma in SIGMAS:
        r = ref[sigma]
        seconds, (upper, lower) = best_time(lambda s=sigma: run_dpaudit(s), args.repeats)
        label = f"dpaudit (step {pld.poisson_subsampled_gaussian(sigma, rate=Q).step:.2g})"
        print(f"{sigma:>5}  {label:<28} {upper:>10.6f} {(upper - r) / r:>+11.2e} {seconds:>8.2f}")
        print(
            f"{'':>5}  {'  bracket [lower, upper]':<28} [{lower:.6f}, {upper:.6f}] "
            f"width {(upper - lower) / r:.2%}, contains reference: {lower <= r <= upper}"
        )
        for interval in args.intervals if have_dpa else []:
            t_dpa, eps = best_time(
                lambda s=sigma, i=interval: run_dp_accounting(s, i), args.repeats
            )
            label = f"dp-accounting (interval {interval:g})"
            print(
                f"{sigma:>5}  {label:<28} {eps:>10.6f} {(eps - r) / r:>+11.2e} {t_dpa:>8.2f}"
                f"   time ratio dp-accounting/dpaudit: {t_dpa / seconds:.2f}"
            )
        print(f"{'':>5}  {'reference':<28} {r:>10.6f}")


if __name__ == "__main__":
    main()
