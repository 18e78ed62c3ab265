"""Audit a real DP-SGD training run (Opacus) in one run, on scikit-learn's digits.

Needs the extra: ``pip install torch==2.13.0`` (a CPU build), then ``pip install -e ".[opacus]"``.

    python examples/opacus-digits.py -o out/opacus-digits          # a few minutes
    python examples/opacus-digits.py -o /tmp/opacus-small --quick      # under a minute

One model is trained with the user's own ``PrivacyEngine`` on digits plus two kinds of canaries,
each included with probability 1/2: mislabelled digits (input space, scored by minus their loss)
and white-box gradient (Dirac) canaries (scored by the sum of the updates on their coordinate).
The one-run audits (f-DP with Gaussian DP, and Steinke et al.) give eps lower bounds at
delta = 1e-5, compared with Opacus' own accountant eps for the same run. The report is written
to the output directory.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from opacus import PrivacyEngine
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader, TensorDataset

from dpaudit.audit.one_run import audit_one_run
from dpaudit.integrations.opacus import (
    DiracCanaries,
    loss_scores,
    mislabelled_canaries,
    with_canaries,
)
from dpaudit.reports.one_run import write_one_run

DELTA = 1e-5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", required=True, help="report directory")
    parser.add_argument("--quick", action="store_true", help="a small version (CI)")
    parser.add_argument("--sigma", type=float, default=1.0, help="noise multiplier")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.perf_counter()
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    rng = np.random.default_rng(args.seed)
    order = rng.permutation(len(x))
    train, pool = order[:1200], order[1200:]
    m_input = 200 if args.quick else 500
    m_dirac = 1000 if args.quick else 4000
    epochs = 5 if args.quick else 30

    input_canaries = mislabelled_canaries(x[pool], y[pool], m_input, n_classes=10, seed=1)
    x_train, y_train = with_canaries(x[train], y[train], input_canaries)
    data = TensorDataset(torch.from_numpy(x_train), torch.from_numpy(y_train))
    loader = DataLoader(data, batch_size=128, shuffle=True)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    engine = PrivacyEngine(accountant="prv")
    model, optimizer, loader = engine.make_private(
        module=model,
        optimizer=optimizer,
        data_loader=loader,
        noise_multiplier=args.sigma,
        max_grad_norm=1.0,
        poisson_sampling=True,
    )
    dirac = DiracCanaries(model, m_dirac, sample_rate=loader.sample_rate, seed=2)
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
    trained = time.perf_counter() - started
    opacus_eps = engine.get_epsilon(DELTA)
    with torch.no_grad():
        accuracy = float((model(torch.from_numpy(x[pool])).argmax(1).numpy() == y[pool]).mean())

    results = {}
    for label, scores, included in (
        ("Dirac gradient canaries (white-box)", dirac.scores(), dirac.included),
        (
            "mislabelled canaries (loss)",
            loss_scores(model, input_canaries),
            input_canaries.included,
        ),
    ):
        for method in ("fdp", "steinke"):
            results[f"{label}, {method}"] = audit_one_run(
                scores, included, delta=DELTA, method=method
            )
        results[f"{label}, fdp, assuming DP-SGD's family"] = audit_one_run(
            scores,
            included,
            delta=DELTA,
            family="dpsgd",
            sample_rate=loader.sample_rate,
            steps=dirac.steps,
        )
    wall = time.perf_counter() - started
    notes = [
        f"Opacus accountant (PRV): eps = {opacus_eps:.3f} at delta = {DELTA:g} "
        f"(noise multiplier {args.sigma}, sample rate {loader.sample_rate:.4f}, "
        f"{dirac.steps} steps, clipping norm 1.0)",
        f"accuracy on held-out digits: {accuracy:.3f}",
        f"training {trained:.1f} s, total wall time {wall:.1f} s (torch threads: 1)",
        "many-run bound: not measured (one training run)",
    ]
    write_one_run(
        results, args.output, title="Opacus DP-SGD on digits, audited in one run", notes=notes
    )
    for name, r in results.items():
        print(f"{name}: eps >= {r.epsilon_lower_bound():.3f} ({r.correct}/{r.guesses} correct)")
    for note in notes:
        print(note)
    print(f"report: {args.output}/index.html")


if __name__ == "__main__":
    main()
