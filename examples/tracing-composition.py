"""Tracing a noisy mean: with the noise per coordinate fixed, privacy is lost like sqrt(d).

Each coordinate of the release alone is 0.1-GDP (n = 100 records, sigma = 0.2); releasing d of
them composes to 0.1 sqrt(d)-GDP (Dong, Roth & Su 2022, Corollary 2). The tracing attack
``<y - p, z - p>`` in the fixed-dataset game measures this: its audited mu lower bound grows like
sqrt(d), along its analytic prediction, below the Neyman-Pearson mu of the game's pair and the
composed worst case. Every seed draws a new population, dataset, target z and replacement z';
the lines are the averages over those draws (p uniform on [-1, 1]^d), and bounds of zero (small
d, where the trials cannot resolve mu) fall off the log scale:
``E ||z - z'||^2 = 4d/3`` gives the Neyman-Pearson ``sqrt(4d/3) / (n sigma)``, and
``E <z - z', z - p> = E ||z - p||^2 = 2d/3`` gives the tracing ``sqrt(2d/3) / (n sigma)``.

    python examples/tracing-composition.py --output out/tracing-composition.png

Writes the figure (PNG) and prints the numbers behind it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from scipy.special import ndtr

import dpaudit as dpa
from dpaudit.attacks import Tracing
from dpaudit.mechanisms import NoisyMean

N_RECORDS = 100
SIGMA = 0.2  # each coordinate: shift 2/n = 0.02 against sigma 0.2, i.e. 0.1-GDP
DIMENSIONS = (4, 16, 64, 256, 1024, 4096)


def measure(dimensions: tuple[int, ...], seeds: int, trials: int, n_jobs: int) -> list[dict]:
    """Audit the tracing attack (fixed-dataset game) at every dimension and seed."""
    rows = []
    for d in dimensions:
        for seed in range(seeds):
            mech = NoisyMean(d, N_RECORDS, sigma=SIGMA, seed=seed)
            pair = mech.tracing_pair("fixed")
            attack = Tracing.for_game(mech, "fixed")
            result = dpa.audit_mechanism(
                mech, pair, attack, trials=trials, seed=seed, n_jobs=n_jobs
            )
            ev = result.tradeoff
            rows.append(
                {
                    "d": d,
                    "seed": seed,
                    "composed": mech.mu,
                    "neyman_pearson": mech.pair_mu(pair),
                    "predicted": attack.predicted_mu(mech, pair),
                    "mu_lower_bound": result.mu_lower_bound(),
                    "advantage": float(np.max(1.0 - ev.alpha - ev.beta)),
                }
            )
    return rows


def figure(rows: list[dict]) -> Figure:
    """mu against d (log-log) and the attack's advantage against d."""
    d = np.array([r["d"] for r in rows], dtype=float)
    grid = np.geomspace(d.min(), d.max(), 200)
    scale = 1.0 / (N_RECORDS * SIGMA)
    tracing = np.sqrt(2.0 * grid / 3.0) * scale
    fig = Figure(figsize=(11, 4.5), layout="constrained")
    ax_mu, ax_adv = fig.subplots(1, 2)
    ax_mu.plot(grid, 2.0 * np.sqrt(grid) * scale, "k-", label="composed worst case")
    ax_mu.plot(grid, np.sqrt(4.0 * grid / 3.0) * scale, "C0--", label="Neyman-Pearson, expected")
    ax_mu.plot(grid, tracing, "C1-", label="tracing, expected")
    ax_mu.plot(d, [r["predicted"] for r in rows], "C1o", mfc="none", label="tracing, predicted")
    ax_mu.plot(d, [r["mu_lower_bound"] for r in rows], "C3x", label="tracing, audited bound")
    ax_mu.set(xscale="log", yscale="log", xlabel="dimension d", ylabel="mu")
    ax_mu.set_title(f"GDP mu (n = {N_RECORDS}, sigma = {SIGMA} per coordinate)")
    ax_mu.legend(fontsize="small")
    ax_adv.plot(grid, 2.0 * ndtr(tracing / 2.0) - 1.0, "C1-", label="expected")
    ax_adv.plot(d, [r["advantage"] for r in rows], "C3x", label="measured")
    ax_adv.set(xscale="log", xlabel="dimension d", ylabel="max(1 - alpha - beta)", ylim=(0, 1))
    ax_adv.set_title("tracing advantage")
    ax_adv.legend(fontsize="small")
    return fig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default="out/tracing-composition.png")
    parser.add_argument("--trials", type=int, default=20_000)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--n-jobs", type=int, default=1)
    args = parser.parse_args()
    rows = measure(DIMENSIONS, args.seeds, args.trials, args.n_jobs)
    print(f"{'d':>6} {'seed':>4} {'composed':>9} {'NP':>7} {'pred':>7} {'mu_lb':>7} {'adv':>6}")
    for r in rows:
        print(
            f"{r['d']:>6} {r['seed']:>4} {r['composed']:9.3f} {r['neyman_pearson']:7.3f} "
            f"{r['predicted']:7.3f} {r['mu_lower_bound']:7.3f} {r['advantage']:6.3f}"
        )
    path = Path(args.output)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure(rows).savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
