"""Trials to a refutation: sequential audits against fixed budgets on the flawed mechanisms.

Every broken mechanism of ``dpaudit.mechanisms.flawed`` (each claims ``(0.1, delta)``-DP) is
audited on its worst-case pair with the benchmark's attack
(:func:`dpaudit.audit.benchmark.benchmark_attack`), at level 0.05 (95% confidence), on seeds
``0 .. S-1``, by three designs:

- **fixed**: the fixed-budget audit of ``bench_flawed.py`` (``--fixed-trials`` evaluation trials
  per dataset, default ``10^6``), refuted when its ``eps`` lower bound at the claimed ``delta``
  exceeds the claimed ``eps``;
- **looks**: the fixed looks ``assert_private`` made before it became sequential: fresh audits of
  ``4096 * 4^(k-1)`` trials per dataset at level ``0.05 * 6 / (pi^2 k^2)`` (the same test as
  fixed), until one refutes or a look would exceed the cap;
- **sequential**: :func:`dpaudit.audit.engine.audit_sequential` (phases of ``4096 * 4^r`` trials
  per dataset up to the cap, looks within each phase), until it refutes or the cap.

The cost of a run is every output it drew per dataset: shape probe, attack fit and training
outputs, pilot, selection and evaluation trials, over all looks or phases up to the stop. A run
that refutes nothing costs its whole budget and counts as not refuted. Printed per mechanism:
the seeds refuted and the median cost of each design, and the ratio of the fixed audit's median
cost to the sequential one's (equal power where both refute every seed); the last lines give the
median of that ratio over the mechanisms and how many mechanisms reach 5x.

    python bench/bench_sequential.py --seeds 5                 # about two hours on 2 cores
    python bench/bench_sequential.py --seeds 2 --names laplace_float svt
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from joblib import Parallel, delayed

from dpaudit.audit.benchmark import benchmark_attack
from dpaudit.audit.engine import audit_mechanism, audit_sequential
from dpaudit.mechanisms.flawed import FLAWED, flawed

LEVEL = 0.05
FIRST = 4096
GROWTH = 4


def _outputs(result) -> int:
    """Outputs per dataset an audit drew (probe, fit, training, pilot, selection, evaluation)."""
    return int(sum(result.metadata["random"]["outputs_per_dataset"].values()))


def _refutes(result, mechanism) -> bool:
    delta = mechanism.claimed_delta
    return result.epsilon_lower_bound(delta) > mechanism.claimed_epsilon


def fixed(name: str, seed: int, trials: int) -> tuple[bool, int]:
    m = flawed(name, 0.1)
    result = audit_mechanism(
        m,
        m.worst_case_pair(),
        benchmark_attack(m, seed),
        trials=trials,
        seed=seed,
        confidence=1 - LEVEL,
        n_jobs=1,
        progress=False,
    )
    return _refutes(result, m), _outputs(result)


def looks(name: str, seed: int, cap: int) -> tuple[bool, int]:
    m = flawed(name, 0.1)
    spent, k, size = 0, 1, FIRST
    while size <= cap:
        level = LEVEL * 6 / (math.pi**2 * k**2)
        result = audit_mechanism(
            m,
            m.worst_case_pair(),
            benchmark_attack(m, seed),
            trials=size,
            seed=seed * 1000 + k,
            confidence=1 - level,
            n_jobs=1,
            progress=False,
        )
        spent += _outputs(result)
        if _refutes(result, m):
            return True, spent
        k, size = k + 1, size * GROWTH
    return False, spent


def sequential(name: str, seed: int, cap: int) -> tuple[bool, int]:
    m = flawed(name, 0.1)
    audit = audit_sequential(
        m,
        m.tradeoff("claim"),
        m.worst_case_pair(),
        benchmark_attack(m, seed),
        level=LEVEL,
        trials=FIRST,
        growth=GROWTH,
        max_trials=cap,
        seed=seed,
    )
    return audit.stopped == "refuted", int(audit.outputs_per_dataset[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="runs per mechanism and design")
    parser.add_argument("--fixed-trials", type=int, default=10**6, dest="fixed_trials")
    parser.add_argument("--cap", type=int, default=2**20, help="last look / phase (trials)")
    parser.add_argument("--names", nargs="*", default=None, choices=list(FLAWED))
    parser.add_argument("--n-jobs", type=int, default=2, dest="n_jobs", help="runs at once")
    args = parser.parse_args()
    names = args.names or [n for n in FLAWED if not flawed(n, 0.1).correct]
    started = time.perf_counter()
    tasks = [
        (design, name, seed)
        for name in names
        for seed in range(args.seeds)
        for design in ("fixed", "looks", "sequential")
    ]
    runs = {"fixed": fixed, "looks": looks, "sequential": sequential}
    sizes = {"fixed": args.fixed_trials, "looks": args.cap, "sequential": args.cap}
    done = Parallel(n_jobs=args.n_jobs)(
        delayed(runs[design])(name, seed, sizes[design]) for design, name, seed in tasks
    )
    table: dict[tuple[str, str], list[tuple[bool, int]]] = {}
    for (design, name, _), outcome in zip(tasks, done, strict=True):
        table.setdefault((name, design), []).append(outcome)
    print(
        f"level {LEVEL}, {args.seeds} seeds; cost = outputs per dataset (median); fixed: "
        f"{args.fixed_trials:,} trials; looks and sequential: cap {args.cap:,} trials"
    )
    print(
        "| mechanism | fixed: refuted, cost | looks: refuted, cost | sequential: refuted, cost "
        "| fixed / sequential |"
    )
    print("|---|---|---|---|---|")
    ratios = []
    for name in names:
        cells, medians = [], {}
        for design in ("fixed", "looks", "sequential"):
            outcomes = table[(name, design)]
            hits = sum(r for r, _ in outcomes)
            medians[design] = float(np.median([c for _, c in outcomes]))
            cells.append(f"{hits}/{len(outcomes)}, {medians[design]:,.0f}")
        ratio = medians["fixed"] / medians["sequential"]
        ratios.append(ratio)
        print(f"| {name} | " + " | ".join(cells) + f" | {ratio:.1f}x |")
    print(f"median over the mechanisms of fixed / sequential: {np.median(ratios):.1f}x")
    print(f"mechanisms at 5x or more: {sum(r >= 5 for r in ratios)}/{len(ratios)}")
    print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
