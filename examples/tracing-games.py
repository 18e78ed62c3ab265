"""Tracing a 1-GDP noisy mean in the fixed- and the fresh-dataset game, and an under-noised one.

For d in {10, 100, 1000} and n = 100 records, Gaussian noise calibrated so that the whole release
is 1-GDP on the worst-case pair, the tracing attack is audited in both games. Printed per row:
the audited mu lower bound (confidence 0.95), the mu its statistic's analytic law predicts for
that pair (exact in the fixed game, a normal approximation in the fresh one), their ratio, the
Neyman-Pearson mu of the fixed game's pair (the best any attack can do there), the claim, and
whether the audit refutes it. The last row releases noise calibrated for one coordinate on all
d = 100 of them (really 10-GDP), which the audit must refute.

    python examples/tracing-games.py [--trials 100000] [--n-jobs 2]
"""

from __future__ import annotations

import argparse

import dpaudit as dpa
from dpaudit.attacks import Tracing
from dpaudit.bounds.gaussian_dp import gdp
from dpaudit.mechanisms import NoisyMean


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-jobs", type=int, default=1)
    args = parser.parse_args()
    claim = gdp(1.0)
    cases = [(d, game, "release") for d in (10, 100, 1000) for game in ("fixed", "fresh")]
    cases.append((100, "fixed", "coordinate"))
    header = f"{'d':>5} {'game':>6} {'calibration':>11} {'mu_lb':>7} {'pred':>7} {'ratio':>6}"
    print(header + f" {'NP':>6} {'claim':>6} {'true':>6}  refuted")
    for d, game, calibration in cases:
        mech = NoisyMean(d, 100, mu=1.0, calibration=calibration, seed=args.seed)
        pair = mech.tracing_pair(game)
        attack = Tracing.for_game(mech, game)
        result = dpa.audit_mechanism(
            mech, pair, attack, trials=args.trials, seed=args.seed, n_jobs=args.n_jobs
        )
        mu_lb = result.mu_lower_bound()
        predicted = attack.predicted_mu(mech, pair)
        np_mu = mech.pair_mu(mech.tracing_pair("fixed"))
        refuted = result.violates(claim) is not None
        print(
            f"{d:>5} {game:>6} {calibration:>11} {mu_lb:7.3f} {predicted:7.3f} "
            f"{mu_lb / predicted:6.3f} {np_mu:6.3f} {1.0:6.2f} {mech.mu:6.2f}  {refuted}"
        )


if __name__ == "__main__":
    main()
