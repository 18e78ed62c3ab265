"""Throughput and certified bound of the engine on a PyTorch device against numpy, in one run.

Prints, for the likelihood-ratio audit of the Gaussian mechanism that is exactly
``(1, 1e-5)``-DP: trials per second and the certified ``eps`` lower bound at ``delta = 1e-5``
of ``dpaudit.audit`` on numpy (every core) and on the device, and the ratio of the two rates
measured in this run. The same for one noisy step of DP-SGD's reference, the Poisson-subsampled
Gaussian (``sigma = 1``, rate ``0.01``; a two-component mixture density per score), at fewer
trials. A trial is one output under each dataset; the rate counts every trial drawn per dataset
(evaluation, selection and pilot). Then DP-SGD reference trainings per second, numpy (every
core) against the device: the white-box audit (Dirac canary, updates observed, likelihood
ratio) of logistic regression on the synthetic data (``d = 20``, ``n = 1000``), ``sigma = 1``,
``q = 0.01``, ``T = 100``, where every trial trains one model under each dataset; numpy trains
4096 runs per chunk (its fastest), the device ``--dpsgd-chunk``. Then whether the device's
counts are the same with one chunk per batch as with memory-sized batches (Gaussian and 3-ary
randomized response), and the tail check of the device's float64 normal sampler:
``--tail-draws`` standard normals drawn as the engine draws them (chunks of ``2^22``, one seeded
generator each), the number beyond 5 to 7.5 sigma against ``2 Phi(-t)`` with two-sided
Clopper-Pearson intervals (level ``1e-6`` each), and the largest ``|z|`` (float32 normals on
CUDA never pass about 6.7 sigma).

On CUDA every timed section starts and ends with ``torch.cuda.synchronize()``; a small audit
first starts the device, and the batch size comes from ``torch.cuda.mem_get_info``.

    python bench/bench_device.py --device cuda                  # 10^11 trials, 10^11 draws
    python bench/bench_device.py --device cuda --dpsgd-only     # DP-SGD trainings alone
    python bench/bench_device.py --device cpu --quick

``--agreement SEEDS``: whether the device path certifies what numpy does. The Gaussian audit
above at ``--agreement-trials`` trials (default ``10^6``), seeds ``0 .. SEEDS - 1``, once on numpy
and once on the device; per seed and path, the certified ``eps`` at ``1e-5``, and what each stage
of the audit produced: the pilot's grid (its lowest edge and bin width), the threshold the
selection chose (its distance from 0, the score being the privacy loss, symmetric between the
two orders; and the strategy that read it), and the evaluation's two error estimates there
(the smaller and the larger).
Then, for each of these, the two paths' means and Welch's two-sided test of equal means: the
two paths draw from the same laws with different generators, so a stage that differed would show
as a small p-value, and sampling noise as none.

    python bench/bench_device.py --device cpu --agreement 30
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from bench_strategies import gaussian_sigma
from scipy import stats

import dpaudit
from dpaudit.audit import device as device_engine
from dpaudit.audit.confidence import clopper_pearson_lower, clopper_pearson_upper
from dpaudit.mechanisms import DPSGD, Gaussian, PoissonSubsampled, RandomizedResponse

DELTA = 1e-5
TAIL_SIGMAS = (5.0, 5.5, 6.0, 6.5, 7.0, 7.5)
TAIL_LEVEL = 1e-6
#: DP-SGD runs per chunk on numpy: its training runs about twice as fast per run in chunks of
#: 4096 as in the engine's default chunks (256 runs of T = 100 updates).
DPSGD_NUMPY_CHUNK = 4096


def synchronize(torch, target) -> None:
    """Wait for the device's queued work (CUDA runs asynchronously)."""
    if target.type == "cuda":
        torch.cuda.synchronize(target)


def timed_audit(
    mechanism, trials: int, device: str | None, synchronize_device, chunk_size: int | None = None
) -> tuple:
    """One audit: (result, seconds, trials drawn per dataset)."""
    synchronize_device()
    started = time.perf_counter()
    result = dpaudit.audit_mechanism(
        mechanism,
        trials=trials,
        seed=0,
        n_jobs=-1 if device is None else None,
        chunk_size=chunk_size,
        progress=False,
        device=device,
    )
    synchronize_device()
    seconds = time.perf_counter() - started
    return result, seconds, result.trials + result.selection_trials + result.pilot_trials


def dpsgd_trainings(
    device: str, target, counts: tuple[int, int], chunk_size: int, synchronize_device
) -> None:
    """DP-SGD reference trainings per second, numpy (every core) against the device."""
    mechanism = DPSGD(sigma=1.0, rate=0.01, steps=100, observe="updates")
    print(f"{mechanism.name}: eps({DELTA:g}) = {mechanism.epsilon(DELTA, 'pld'):.4f} (PLD)")
    dpaudit.audit_mechanism(mechanism, trials=1000, seed=1, device=device, progress=False)
    rates = {}
    labels, devices = ("numpy", str(target)), (None, device)
    chunks = (DPSGD_NUMPY_CHUNK, chunk_size)
    for label, on, count, chunk in zip(labels, devices, counts, chunks, strict=True):
        result, seconds, drawn = timed_audit(mechanism, count, on, synchronize_device, chunk)
        rates[label] = 2 * drawn / seconds
        print(
            f"  {label:<8} {result.trials:>16,} trials  {seconds:8.1f} s  "
            f"{2 * drawn / seconds:16,.0f} trainings/s ({result.chunk_size:,} per chunk)  "
            f"eps lower bound {result.epsilon_lower_bound(DELTA):.4f}  mu lower bound "
            f"{result.mu_lower_bound():.4f}"
        )
    print(f"  device / numpy trainings/s  {rates[str(target)] / rates['numpy']:.1f}x")


def batch_independence(device: str, trials: int, chunk_size: int) -> None:
    """Counts of an audit with memory-sized batches and with one chunk per batch."""
    for mechanism in (Gaussian(1.0), RandomizedResponse(1.0, k=3)):
        kwargs = dict(trials=trials, seed=3, chunk_size=chunk_size, progress=False, device=device)
        sized = dpaudit.audit_mechanism(mechanism, **kwargs)
        saved = device_engine.MEMORY_FRACTION, device_engine.CPU_BATCH_VALUES
        device_engine.MEMORY_FRACTION, device_engine.CPU_BATCH_VALUES = 0.0, 0
        try:
            single = dpaudit.audit_mechanism(mechanism, **kwargs)
        finally:
            device_engine.MEMORY_FRACTION, device_engine.CPU_BATCH_VALUES = saved
        same = np.array_equal(sized.counts, single.counts) and np.array_equal(
            sized.selection_counts, single.selection_counts
        )
        print(
            f"identical counts, one chunk per batch vs sized batches ({mechanism.name}, "
            f"{trials:,} trials, chunks of {chunk_size:,}): {same}"
        )


def tail_check(torch, target, draws: int) -> None:
    """Counts of ``|z| > t`` among ``draws`` device normals against ``2 Phi(-t)``."""
    from dpaudit._core.device import torch_generators

    chunk = device_engine.CHUNK_VALUES
    n_chunks = -(-draws // chunk)
    per_batch = device_engine.batch_chunks(target, chunk, 1)
    edges = torch.as_tensor(TAIL_SIGMAS, dtype=torch.float64, device=target)
    counts = torch.zeros(len(TAIL_SIGMAS) + 1, dtype=torch.int64, device=target)
    largest = torch.zeros((), dtype=torch.float64, device=target)
    mechanism = Gaussian(1.0)
    synchronize(torch, target)
    started = time.perf_counter()
    for first in range(0, n_chunks, per_batch):
        chunks = range(first, min(n_chunks, first + per_batch))
        sizes = [min(chunk, draws - i * chunk) for i in chunks]
        generators = torch_generators(target, 0, "evaluation", chunks)
        z = mechanism.torch_sample(np.zeros(0), sizes, generators).abs_()
        largest = torch.maximum(largest, z.max())
        counts += torch.bincount(torch.bucketize(z, edges), minlength=len(TAIL_SIGMAS) + 1)
        del z
    synchronize(torch, target)
    seconds = time.perf_counter() - started
    beyond = np.cumsum(counts.cpu().numpy()[::-1])[::-1][1:]
    print(f"tail draws                {draws:,} in {seconds:.1f} s ({draws / seconds:,.0f}/s)")
    print(f"largest |z|               {float(largest):.3f}")
    print("  t   beyond t   expected   Clopper-Pearson interval (1e-6)   ok")
    for t, k in zip(TAIL_SIGMAS, beyond, strict=True):
        p = 2 * stats.norm.sf(t)
        lo = float(clopper_pearson_lower(int(k), draws, TAIL_LEVEL / 2)) * draws
        hi = float(clopper_pearson_upper(int(k), draws, TAIL_LEVEL / 2)) * draws
        ok = lo <= p * draws <= hi
        print(f"{t:4.1f} {int(k):10,d} {p * draws:10.1f}   [{lo:12.1f}, {hi:12.1f}]   {ok}")


def agreement(mechanism, device: str, seeds: int, trials: int) -> None:
    """The numpy and device paths of the same audit, stage by stage (module docstring)."""
    stages = ("eps", "grid low edge", "grid bin width", "threshold distance", "smaller", "larger")
    rows: dict[str, list[dict[str, float]]] = {"numpy": [], "device": []}
    print(f"{mechanism.name}, {trials:,} trials, seeds 0..{seeds - 1}")
    print("| seed | path | eps | grid low edge | bin width | threshold | strategy | errors |")
    print("|---|---|---|---|---|---|---|---|---|", flush=True)
    for seed in range(seeds):
        for path, where in (("numpy", None), ("device", device)):
            result = dpaudit.audit_mechanism(
                mechanism,
                trials=trials,
                seed=seed,
                progress=False,
                device=where,
                n_jobs=1 if where is None else None,
            )
            w = result.epsilon_witness(DELTA)
            row = {
                "eps": w["epsilon"],
                "grid low edge": float(result.grid.edges[0]),
                "grid bin width": float(np.diff(result.grid.edges).mean()),
                "threshold distance": abs(w["threshold"]),
                "smaller": min(w["alpha"], w["beta"]),
                "larger": max(w["alpha"], w["beta"]),
            }
            rows[path].append(row)
            print(
                f"| {seed} | {path} | {row['eps']:.4f} | {row['grid low edge']:.4f} | "
                f"{row['grid bin width']:.3e} | {w['threshold']:.4f} | {w['strategy']} | "
                f"{row['smaller']:.3e}, {row['larger']:.4f} |",
                flush=True,
            )
    print("\n| stage | numpy mean | device mean | device - numpy | Welch p |")
    print("|---|---|---|---|---|")
    for stage in stages:
        a = np.array([r[stage] for r in rows["numpy"]])
        b = np.array([r[stage] for r in rows["device"]])
        p = stats.ttest_ind(a, b, equal_var=False).pvalue
        print(
            f"| {stage} | {a.mean():.4g} | {b.mean():.4g} | {b.mean() - a.mean():+.3g} | {p:.3f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="torch device: cuda, cuda:N or cpu")
    parser.add_argument("--trials", type=float, default=1e11, help="device trials per dataset")
    parser.add_argument("--numpy-trials", type=float, default=1e9, help="numpy trials per dataset")
    parser.add_argument(
        "--subsampled-trials", type=float, default=1e10, help="device trials, subsampled audit"
    )
    parser.add_argument("--tail-draws", type=float, default=1e11, help="normals of the tail check")
    parser.add_argument(
        "--dpsgd-trials", type=float, default=4e6, help="device trials, DP-SGD audit"
    )
    parser.add_argument(
        "--dpsgd-numpy-trials", type=float, default=5e5, help="numpy trials, DP-SGD audit"
    )
    parser.add_argument(
        "--dpsgd-chunk", type=int, default=2**16, help="DP-SGD runs per chunk on the device"
    )
    parser.add_argument(
        "--dpsgd-only", action="store_true", help="only the DP-SGD trainings section"
    )
    parser.add_argument(
        "--agreement", type=int, default=0, help="seeds of the numpy / device agreement check"
    )
    parser.add_argument(
        "--agreement-trials", type=float, default=1e6, help="trials of each agreement audit"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="10^6 trials each, 2,000 DP-SGD trials, 10^7 tail draws (a smoke run)",
    )
    args = parser.parse_args()
    trials, numpy_trials, draws = int(args.trials), int(args.numpy_trials), int(args.tail_draws)
    subsampled_trials = int(args.subsampled_trials)
    dpsgd_counts = (int(args.dpsgd_numpy_trials), int(args.dpsgd_trials))
    dpsgd_chunk = args.dpsgd_chunk
    if args.quick:
        trials, numpy_trials, draws, subsampled_trials = 10**6, 10**6, 10**7, 10**6
        dpsgd_counts, dpsgd_chunk = (2000, 2000), 512
    try:
        import torch
    except ImportError:
        print("PyTorch is not installed: nothing to measure (pip install 'dpaudit[torch]')")
        return
    from dpaudit._core.device import torch_device

    target = torch_device(args.device)
    name = torch.cuda.get_device_name(target) if target.type == "cuda" else "CPU"
    mechanism = Gaussian(gaussian_sigma(1.0, DELTA))
    print(f"device                    {target} ({name}), torch {torch.__version__}")
    print(f"cores for numpy           {os.cpu_count()}")

    def sync() -> None:
        synchronize(torch, target)

    if args.dpsgd_only:
        dpsgd_trainings(args.device, target, dpsgd_counts, dpsgd_chunk, sync)
        return
    if args.agreement:
        agreement(mechanism, args.device, args.agreement, int(args.agreement_trials))
        return
    dpaudit.audit_mechanism(mechanism, trials=10_000, seed=1, device=args.device, progress=False)
    dpaudit.audit_mechanism(mechanism, trials=10_000, seed=1, n_jobs=-1, progress=False)
    subsampled = PoissonSubsampled(Gaussian(1.0), rate=0.01)
    for audited, counts in (
        (mechanism, (numpy_trials, trials)),
        (subsampled, (max(1, numpy_trials // 10), subsampled_trials)),
    ):
        print(f"{audited.name}: eps({DELTA:g}) = {audited.epsilon(DELTA):.4f} by theory")
        rates = {}
        labels, devices = ("numpy", str(target)), (None, args.device)
        for label, device, count in zip(labels, devices, counts, strict=True):
            result, seconds, drawn = timed_audit(audited, count, device, sync)
            rates[label] = drawn / seconds
            print(
                f"  {label:<8} {result.trials:>16,} trials  {seconds:8.1f} s  "
                f"{drawn / seconds:16,.0f} trials/s  eps lower bound "
                f"{result.epsilon_lower_bound(DELTA):.4f}  mu lower bound "
                f"{result.mu_lower_bound():.4f}"
            )
        print(f"  device / numpy trials/s  {rates[str(target)] / rates['numpy']:.1f}x")
    dpsgd_trainings(args.device, target, dpsgd_counts, dpsgd_chunk, sync)
    if args.quick:
        batch_independence(args.device, 10**6, 2**14)
    else:
        batch_independence(args.device, 2 * 10**8, 2**20)
    print(f"chunk size on the device  {device_engine.default_chunk_size(1):,} trials")
    batch = device_engine.batch_chunks(target, device_engine.default_chunk_size(1), 1)
    print(f"chunks per batch          {batch}")
    tail_check(torch, target, draws)


if __name__ == "__main__":
    main()
