"""dpaudit beside jax-privacy's ``CanaryScoreAuditor`` on the same scores, in one run.

Scores in: for each score law (``N(0,1)`` vs ``N(1,1)``; Laplace ``(0,1)`` vs ``(1,1)``;
randomized response at ``eps = 1`` as 0/1 scores; a two-sided geometric with ``eps = 1`` clipped
to 9 atoms) and each size ``n`` per side, ``--seeds`` draws are audited by ``audit_scores`` (its
default strategy) and by jax-privacy's ``epsilon_clopper_pearson`` with both orders and each
of its threshold strategies: ``Split`` (half chooses the threshold), ``MultiSplit`` (median of
50 splits at ``gamma/2``), ``Bonferroni`` as shipped (``gamma`` divided by the number of
thresholds on the empirical ROC's frontier, a number the scores choose) and ``Bonferroni`` over
every distinct threshold (``gamma`` divided by that fixed-in-advance count). Printed per cell: the
mean certified ``eps`` at ``delta = 1e-5`` and 95%, and dpaudit's ratio to the best jax-privacy
strategy whose validity does not rest on a correction the scores choose. For the two discrete
laws, ``dpaudit declared`` is ``audit_scores(..., thresholds=...)`` with the thresholds between
the law's possible values, which a user knows before seeing any score.

One run: scores ``N(mu * included, 1)`` for ``m`` canaries included by fair coins; dpaudit's
``audit_one_run`` defaults (family-free f-DP; ``family="gdp"``; Steinke) beside jax-privacy's
``epsilon_one_run`` (Steinke) and ``epsilon_one_run_fdp`` (its f-DP test over Gaussian DP, which
assumes the mechanism is Gaussian) with ``Split`` and shipped ``Bonferroni``.

Timing (``--only timing``, or with the scores table): Gaussian scores of ``n`` per side
(``--timing-sizes``, default ``10^5`` and ``10^6``), audited one after the other in this process by
dpaudit's default (``audit_scores(...).epsilon_lower_bound(1e-5)``) and by jax-privacy's shipped
default (its constructor and ``epsilon_clopper_pearson(..., one_sided=False)``), the two in turn
on each draw, after one untimed draw of ``n + 1`` scores by each (a process's first large arrays
cost page faults, which would fall on whichever tool ran first). Printed per ``n``: the median
seconds of each and the median of the per-draw ratio ``dpaudit / jax-privacy``, over all draws
but the first; and the first draw's ratio apart, since dpaudit computes its exact band once per
sample size and level (kept for the process).

jax-privacy is optional: ``pip install jax-privacy`` (it brings JAX), or point
``--jax-privacy-module`` at its ``auditing.py`` (that file needs only numpy, scipy and
dp_accounting)::

    python bench/bench_peers.py --quick
    python bench/bench_peers.py --seeds 20 --jax-privacy-module PATH/auditing.py
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from types import ModuleType

import numpy as np
from joblib import Parallel, delayed

from dpaudit.audit.one_run import audit_one_run, simulate_one_run
from dpaudit.audit.scores import audit_scores

GAMMA, DELTA = 0.05, 1e-5
LAWS = ("gaussian", "laplace", "randomized_response", "geometric")
#: Thresholds a user knows before seeing scores of a discrete law: between its possible values.
DECLARED = {"randomized_response": [0.5], "geometric": list(np.arange(-3.5, 4.0))}
VALID = ("split", "multisplit", "bonferroni_all")


def _load(path: str | None) -> ModuleType | None:
    """jax-privacy's auditing module, from the installed package or from ``path``; ``None``
    when neither is there (the bench then says so and measures nothing). Each cell loads it by
    path: a module loaded from a file does not travel to workers by pickling."""
    if path is None:
        try:
            from jax_privacy import auditing
        except ImportError:
            return None
        return auditing
    spec = importlib.util.spec_from_file_location("jax_privacy_auditing", path)
    if spec is None or spec.loader is None:
        sys.exit(f"--jax-privacy-module: cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _draw(law: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    if law == "gaussian":
        return rng.standard_normal(n), rng.standard_normal(n) + 1.0
    if law == "laplace":
        return rng.laplace(0.0, 1.0, n), rng.laplace(1.0, 1.0, n)
    if law == "randomized_response":
        p = np.e / (1.0 + np.e)
        return (rng.random(n) > p).astype(float), (rng.random(n) < p).astype(float)
    q = 1.0 - np.exp(-1.0)

    def geometric(shift: int) -> np.ndarray:
        g = rng.geometric(q, n) - rng.geometric(q, n) + shift
        return np.clip(g, -4, 4).astype(float)

    return geometric(0), geometric(1)


def _scores_cell(path: str | None, law: str, n: int, seed: int) -> dict[str, float]:
    jp = _load(path)
    s0, s1 = _draw(law, n, np.random.default_rng(seed))
    auditor = jp.CanaryScoreAuditor(s1, s0)
    declared = DECLARED.get(law)
    eps = {
        "dpaudit": audit_scores(s0, s1, seed=seed).epsilon_lower_bound(DELTA),
        "dpaudit declared": np.nan
        if declared is None
        else audit_scores(s0, s1, thresholds=declared).epsilon_lower_bound(DELTA),
        "split": auditor.epsilon_clopper_pearson(
            GAMMA, DELTA, one_sided=False, threshold_strategy=jp.Split(seed=seed)
        ),
        "multisplit": auditor.epsilon_clopper_pearson(
            GAMMA,
            DELTA,
            one_sided=False,
            threshold_strategy=jp.MultiSplit(num_samples=50, seed=seed),
        ),
        "bonferroni_shipped": auditor.epsilon_clopper_pearson(GAMMA, DELTA, one_sided=False),
    }
    every = np.union1d(s0, s1).size + 1
    eps["bonferroni_all"] = auditor._epsilon_clopper_pearson_all_thresholds(
        GAMMA / every, DELTA, False, None
    )[0]
    return {k: float(v) for k, v in eps.items()}


def _one_run_cell(path: str | None, m: int, mu: float, seed: int) -> dict[str, float]:
    jp = _load(path)
    s, included = simulate_one_run(m, mu, seed=seed)
    z = included.astype(bool)
    auditor = jp.CanaryScoreAuditor(s[z], s[~z])
    out = {
        "dpaudit fdp": audit_one_run(s, z).epsilon_lower_bound(),
        "dpaudit fdp/gdp": audit_one_run(s, z, family="gdp").epsilon_lower_bound(),
        "dpaudit steinke": audit_one_run(s, z, method="steinke").epsilon_lower_bound(),
    }
    for name, method in (("steinke", "epsilon_one_run"), ("fdp/gdp", "epsilon_one_run_fdp")):
        run = getattr(auditor, method)
        out[f"jax {name} split"] = run(GAMMA, DELTA, threshold_strategy=jp.Split(seed=seed))
        out[f"jax {name} bonferroni_shipped"] = run(GAMMA, DELTA)
    return {k: float(v) for k, v in out.items()}


def _header(names: list[str], ratio: dict[str, tuple[str, tuple[str, ...]]]) -> None:
    zeros = [f"seeds 0 vs > 0 ({name})" for name in ratio]
    print("| cell | " + " | ".join(names + list(ratio) + zeros) + " |")
    print("|---|" + "---|" * (len(names) + 2 * len(ratio)), flush=True)


def _row(cell: str, results: list[dict[str, float]], ratio: dict) -> list[float]:
    """Print one table row: the mean of each column; per ratio, ``mine / max(peers)``; and per
    ratio, the number of seeds where ``mine`` certified nothing while one of ``peers`` did.
    Returns the ratios (NaN where there is none)."""
    mean = {k: float(np.mean([r[k] for r in results])) for k in results[0]}
    values_of_ratios, ratios, zeros = [], [], []
    for mine, peers in ratio.values():
        best = max(mean[p] for p in peers)
        value = mean[mine] / best if best > 0 and np.isfinite(mean[mine]) else np.nan
        values_of_ratios.append(value)
        ratios.append(f"{value:.3f}" if np.isfinite(value) else "-")
        missed = sum(r[mine] <= 0.0 and max(r[p] for p in peers) > 0.0 for r in results)
        zeros.append(str(missed) if np.isfinite(mean[mine]) else "-")
    values = [f"{v:.3f}" if np.isfinite(v) else "-" for v in mean.values()]
    print(f"| {cell} | " + " | ".join(values + ratios + zeros) + " |", flush=True)
    return values_of_ratios


def _summary(ratio: dict, rows: list[list[float]]) -> None:
    """The mean and the smallest value of each ratio over the table's cells."""
    table = np.array(rows)
    parts = [
        f"{name} mean {np.nanmean(column):.3f}, smallest {np.nanmin(column):.3f}"
        for name, column in zip(ratio, table.T, strict=True)
        if np.isfinite(column).any()
    ]
    print("\nOver the cells: " + "; ".join(parts), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="n, m up to 1e4 and 5 seeds")
    parser.add_argument("--seeds", type=int, help="seeds per cell (default 20, --quick 5)")
    parser.add_argument("--jax-privacy-module", help="path of jax-privacy's auditing.py")
    parser.add_argument(
        "--sizes", type=int, nargs="+", help="n per side and m (default 1e2..1e5, --quick 1e2..1e4)"
    )
    parser.add_argument(
        "--only", choices=("scores", "one-run", "timing"), help="run one of the three tables"
    )
    parser.add_argument(
        "--timing-sizes", type=int, nargs="+", default=[100_000, 1_000_000], help="n per side"
    )
    parser.add_argument("--timing-draws", type=int, default=7, help="draws per timed size")
    parser.add_argument("--n-jobs", type=int, default=-1, help="workers (joblib convention)")
    args = parser.parse_args()
    path = args.jax_privacy_module
    if _load(path) is None:
        print("skipped: jax-privacy is not installed (pip install jax-privacy, or give its")
        print("auditing.py with --jax-privacy-module)")
        return
    sizes = args.sizes or ((100, 1_000, 10_000) if args.quick else (100, 1_000, 10_000, 100_000))
    seeds = range(args.seeds or (5 if args.quick else 20))
    pool = Parallel(n_jobs=args.n_jobs)
    if args.only in (None, "scores"):
        _scores_table(path, sizes, seeds, pool)
    if args.only in (None, "one-run"):
        _one_run_table(path, [m for m in sizes if m >= 1_000], seeds, pool)
    if args.only in (None, "scores", "timing"):
        _timing_table(path, args.timing_sizes, args.timing_draws)


def _scores_table(path: str | None, sizes: list[int], seeds: range, pool: Parallel) -> None:
    print(f"Scores in: mean eps({DELTA:g}) at {1 - GAMMA:.0%}, {len(seeds)} seeds per cell\n")
    ratio = {
        "dpaudit / best valid": ("dpaudit", VALID),
        "dpaudit / shipped": ("dpaudit", ("bonferroni_shipped",)),
        "declared / best valid": ("dpaudit declared", VALID),
    }
    columns = ["dpaudit", "dpaudit declared", "split", "multisplit", "bonferroni_shipped"]
    _header([*columns, "bonferroni_all"], ratio)
    rows = []
    for law in LAWS:
        for n in sizes:
            results = pool(delayed(_scores_cell)(path, law, n, seed) for seed in seeds)
            rows.append(_row(f"{law} n={n}", results, ratio))
    _summary(ratio, rows)


def _timing_table(path: str | None, sizes: list[int], draws: int) -> None:
    """Wall time of the two defaults on the same scores, in this process, in turn."""
    jp = _load(path)
    print(f"\nWall time on Gaussian scores, {draws} draws per size (medians over draws 2..)\n")
    print("| n per side | dpaudit s | jax-privacy s | dpaudit / jax-privacy | first draw's ratio |")
    print("|---|---|---|---|---|", flush=True)
    for n in sizes:
        # One untimed draw of n + 1 scores first: each tool's first large arrays in a process
        # cost page faults, which would otherwise fall on whichever tool ran first. dpaudit's
        # band for n is not computed by it, so the first timed draw still pays for that.
        s0, s1 = _draw("gaussian", n + 1, np.random.default_rng(draws))
        audit_scores(s0, s1).epsilon_lower_bound(DELTA)
        jp.CanaryScoreAuditor(s1, s0).epsilon_clopper_pearson(GAMMA, DELTA, one_sided=False)
        times = []
        for seed in range(draws):
            s0, s1 = _draw("gaussian", n, np.random.default_rng(seed))
            pair = []
            for tool in ("dpaudit", "jax") if seed % 2 == 0 else ("jax", "dpaudit"):
                started = time.perf_counter()
                if tool == "dpaudit":
                    audit_scores(s0, s1, seed=seed).epsilon_lower_bound(DELTA)
                else:
                    jp.CanaryScoreAuditor(s1, s0).epsilon_clopper_pearson(
                        GAMMA, DELTA, one_sided=False
                    )
                pair.append((tool, time.perf_counter() - started))
            times.append(dict(pair))
        ours = np.array([t["dpaudit"] for t in times])
        theirs = np.array([t["jax"] for t in times])
        rest = slice(1, None)
        print(
            f"| {n:,} | {np.median(ours[rest]):.3f} | {np.median(theirs[rest]):.3f} | "
            f"{np.median(ours[rest] / theirs[rest]):.2f} | {ours[0] / theirs[0]:.2f} |",
            flush=True,
        )


def _one_run_table(path: str | None, sizes: list[int], seeds: range, pool: Parallel) -> None:
    print(f"\nOne run: mean eps({DELTA:g}) at {1 - GAMMA:.0%}, {len(seeds)} seeds per cell\n")
    ratio = {
        "fdp / jax steinke": (
            "dpaudit fdp",
            ("jax steinke split", "jax steinke bonferroni_shipped"),
        ),
        "fdp/gdp / jax fdp/gdp": (
            "dpaudit fdp/gdp",
            ("jax fdp/gdp split", "jax fdp/gdp bonferroni_shipped"),
        ),
    }
    columns = ["dpaudit fdp", "dpaudit fdp/gdp", "dpaudit steinke"]
    columns += [
        f"jax {a} {b}" for a in ("steinke", "fdp/gdp") for b in ("split", "bonferroni_shipped")
    ]
    _header(columns, ratio)
    rows = []
    for m in sizes:
        for mu in (0.5, 1.0, 2.0):
            results = pool(delayed(_one_run_cell)(path, m, mu, seed) for seed in seeds)
            rows.append(_row(f"m={m} mu={mu}", results, ratio))
    _summary(ratio, rows)


if __name__ == "__main__":
    main()
