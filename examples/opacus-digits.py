"""Audit real DP-SGD training runs (Opacus) on scikit-learn's digits: white box and final model,
many runs and one run, beside Opacus's own accountant and dpaudit's curves, in one report.

Needs the extra: ``pip install torch==2.13.0`` (a CPU build), then ``pip install -e ".[opacus]"``.

    python examples/opacus-digits.py -o out/opacus-digits          # about 5 minutes, 2 cores
    python examples/opacus-digits.py -o /tmp/opacus-small --quick      # under a minute

Every training is the user's own: a small network, their data loader and ``PrivacyEngine``
(Poisson sampling, noise multiplier ``--sigma``, clipping norm 1). The model is wrapped in
:class:`~dpaudit.integrations.opacus.CanaryCoordinates`, which adds ``--canaries`` coordinates
that no example's gradient touches; :class:`~dpaudit.integrations.opacus.DiracCanaries` gives
each its own gradient canary, included with probability 1/2, inserted through the optimizer's
hooks and observed two ways: white box (every step's noisy gradient, scored by its likelihood
ratio) and in the final model (the coordinate's final value).

- **Many runs**: ``--runs`` trainings; the canaries of all of them are independent trials (each
  has its own coordinate and its own noise), audited with :func:`dpaudit.audit_scores`.
- **One run**: the first training alone, audited as one run (Steinke, Nasr & Jagielski 2023; and
  f-DP in one run, Mahloujifar et al. 2025), which assumes nothing about the canaries'
  independence.

The report puts the certified ``eps`` beside Opacus's accountant and dpaudit's curves for the
same noise, rate and steps: the composition of every step (what the white box can reach) and the
last iterate (what the final model can reach for these canaries).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from opacus import PrivacyEngine
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader, TensorDataset

import dpaudit
from dpaudit.audit.one_run import audit_one_run
from dpaudit.bounds.tradeoff import TradeoffCurve, approx_dp
from dpaudit.integrations.opacus import CanaryCoordinates, DiracCanaries
from dpaudit.mechanisms.dpsgd import DPSGD

DELTA = 1e-5
BATCH = 128


def train(
    x: np.ndarray, y: np.ndarray, sigma: float, epochs: int, canaries: int, seed: int
) -> tuple[DiracCanaries, float, int, float, float]:
    """One DP-SGD training with gradient canaries: the canaries, Opacus's eps, the steps, the
    sample rate and the seconds it took."""
    started = time.perf_counter()
    torch.manual_seed(seed)
    data = TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
    loader = DataLoader(data, batch_size=BATCH, shuffle=True)
    network = torch.nn.Sequential(
        torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)
    )
    model = CanaryCoordinates(network, canaries)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    engine = PrivacyEngine(accountant="prv")
    model, optimizer, loader = engine.make_private(
        module=model,
        optimizer=optimizer,
        data_loader=loader,
        noise_multiplier=sigma,
        max_grad_norm=1.0,
        poisson_sampling=True,
    )
    dirac = DiracCanaries(model, canaries, sample_rate=loader.sample_rate, seed=seed)
    dirac.attach(optimizer)
    loss_fn = torch.nn.CrossEntropyLoss()
    for _ in range(epochs):
        model.train()
        for xb, yb in loader:
            if len(xb) == 0:
                continue
            optimizer.zero_grad()
            loss_fn(model(xb), yb).backward()
            optimizer.step()
    seconds = time.perf_counter() - started
    return dirac, engine.get_epsilon(DELTA), dirac.steps, loader.sample_rate, seconds


def opacus_claim(eps: float) -> TradeoffCurve:
    """Opacus's ``(eps, 1e-5)`` as a claimed trade-off curve."""
    curve = approx_dp(eps, DELTA)
    return TradeoffCurve(
        curve.__call__,
        name=f"Opacus accountant (PRV): ({eps:.3f}, {DELTA:g})-DP",
        kind="claim",
        delta_fn=curve.delta,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", required=True, help="report directory")
    parser.add_argument("--quick", action="store_true", help="a small version (CI)")
    parser.add_argument("--sigma", type=float, default=1.0, help="noise multiplier")
    parser.add_argument("--runs", type=int, default=8, help="trainings of the many-run audit")
    parser.add_argument("--canaries", type=int, default=25_000, help="canaries per training")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.quick:
        args.runs, args.canaries, args.epochs = 2, 5000, 5
    started = time.perf_counter()
    torch.set_num_threads(1)

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(args.seed).permutation(len(x))[:1200]
    runs = [
        train(x[order], y[order], args.sigma, args.epochs, args.canaries, args.seed + i)
        for i in range(args.runs)
    ]
    first, opacus_eps, steps, rate, _ = runs[0]
    per_training = float(np.mean([r[4] for r in runs]))

    claim = opacus_claim(opacus_eps)
    records = []
    one_run = {}
    for view, observe, score in (
        ("white box", "updates", DiracCanaries.whitebox_scores),
        ("final model", "final", DiracCanaries.scores),
    ):
        scores = [score(r[0]) for r in runs]
        included = [r[0].included.astype(bool) for r in runs]
        out = np.concatenate([s[~z] for s, z in zip(scores, included, strict=True)])
        inside = np.concatenate([s[z] for s, z in zip(scores, included, strict=True)])
        result = dpaudit.audit_scores(out, inside, name=f"{view}, {args.runs} runs")
        for method in ("fdp", "steinke"):
            one_run[f"{view}, one run, {method}"] = audit_one_run(
                score(first), first.included, delta=DELTA, method=method
            )
        theory = DPSGD(sigma=args.sigma, rate=rate, steps=steps, observe=observe)
        record = dpaudit.reports.build_record(
            result,
            name=f"Opacus on digits, {view}: {len(out):,} + {len(inside):,} canaries "
            f"from {args.runs} trainings",
            mechanism=theory,
            claim=claim,
            description=(
                f"Gradient canaries on dedicated coordinates, observed {view}; theory for "
                f"noise {args.sigma:g}, rate {rate:.4f}, {steps} steps. One run (the first "
                f"training's {args.canaries:,} canaries): "
                + "; ".join(
                    f"{m} eps >= {one_run[f'{view}, one run, {m}'].epsilon_lower_bound():.3f}"
                    for m in ("fdp", "steinke")
                )
                + "."
            ),
        )
        # The theory is DP-SGD's for this noise, rate and steps, whatever the model trained.
        record["mechanism_name"] = (
            f"Opacus DP-SGD (MLP on digits, {view}): sigma={args.sigma:g}, q={rate:.4f}, "
            f"T={steps}, C=1, poisson, dedicated gradient canaries"
        )
        records.append(record)
    report = dpaudit.reports.write(
        records, args.output, title="Opacus DP-SGD on digits: many runs and one run"
    )
    wall = time.perf_counter() - started
    print(
        f"Opacus accountant (PRV): eps = {opacus_eps:.3f} at delta = {DELTA:g} (noise "
        f"{args.sigma:g}, sample rate {rate:.4f}, {steps} steps, clipping norm 1)"
    )
    for record in records:
        theory = record["theory"]
        key = repr(DELTA)
        print(
            f"{record['name']}: eps >= {record['epsilon_lower_bounds'][key]:.3f}; "
            f"composition {theory['pld']['epsilon'][key]:.3f}, "
            f"last iterate {theory['last_iterate']['epsilon'][key]:.3f}; "
            f"verdict on Opacus's eps: {record['verdict']}"
        )
    for name, r in one_run.items():
        print(f"{name}: eps >= {r.epsilon_lower_bound():.3f} ({r.correct}/{r.guesses} correct)")
    print(
        f"cost: {per_training:.1f} s per training ({args.canaries:,} canaries, torch threads 1); "
        f"{args.runs} trainings, total wall time {wall:.0f} s"
    )
    print(f"report: {report}/index.html")


if __name__ == "__main__":
    main()
