"""The Opacus integration (skipped without the extra) and the promise that dpaudit alone never
imports PyTorch."""

import subprocess
import sys

import numpy as np
import pytest


def test_dpaudit_never_imports_torch():
    code = (
        "import sys, dpaudit, dpaudit.cli, dpaudit.audit.one_run, dpaudit.audit.scores, "
        "dpaudit.reports.one_run, dpaudit.integrations; dpaudit.reports; "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


torch = pytest.importorskip("torch")
opacus = pytest.importorskip("opacus")

from dpaudit.integrations.opacus import (  # noqa: E402
    DiracCanaries,
    loss_scores,
    mislabelled_canaries,
    out_of_distribution_canaries,
    with_canaries,
)


def test_input_canaries_are_mislabelled_and_half_included():
    rng = np.random.default_rng(0)
    x, y = rng.random((400, 4)).astype(np.float32), rng.integers(0, 3, 400)
    c = mislabelled_canaries(x, y, 300, n_classes=3, seed=1)
    original = {tuple(row): label for row, label in zip(x, y, strict=True)}
    assert all(original[tuple(row)] != label for row, label in zip(c.x, c.y, strict=True))
    assert 100 < c.included.sum() < 200
    xt, yt = with_canaries(x, y, c)
    assert len(xt) == 400 + c.included.sum() == len(yt)
    ood = out_of_distribution_canaries((4,), 10, n_classes=3)
    assert ood.x.shape == (10, 4)
    with pytest.raises(ValueError, match="m must be"):
        mislabelled_canaries(x, y, 401, n_classes=3)


def _train(sigma, m, seed=0, steps=30):
    torch.manual_seed(seed)
    model = torch.nn.Linear(8, 2)
    # Zero inputs: the data move only the bias, never a weight.
    x = torch.zeros(256, 8)
    y = torch.randint(0, 2, (256,))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=64)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    engine = opacus.PrivacyEngine()
    model, optimizer, loader = engine.make_private(
        module=model,
        optimizer=optimizer,
        data_loader=loader,
        noise_multiplier=sigma,
        max_grad_norm=1.0,
    )
    canaries = DiracCanaries(model, m, sample_rate=loader.sample_rate, seed=seed)
    canaries.attach(optimizer)
    done = 0
    while done < steps:
        for xb, yb in loader:
            if len(xb) == 0:
                continue
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(xb), yb).backward()
            optimizer.step()
            done += 1
    return model, canaries


def test_dirac_canaries_move_their_coordinates_when_included():
    """With almost no noise, an included canary's weight moves up by ``lr * C / B`` whenever it
    takes part, an excluded one's not at all (the data never move a weight here)."""
    _, canaries = _train(sigma=0.01, m=12)
    weights = canaries.coordinates < 16
    s, z = canaries.scores()[weights], canaries.included.astype(bool)[weights]
    assert z.any() and (~z).any()
    assert s[z].min() > s[~z].max()


def test_loss_scores_are_minus_losses():
    model = torch.nn.Linear(4, 3)
    c = out_of_distribution_canaries((4,), 5, n_classes=3)
    with torch.no_grad():
        expected = -torch.nn.functional.cross_entropy(
            model(torch.as_tensor(c.x)), torch.as_tensor(c.y), reduction="none"
        )
    assert np.allclose(loss_scores(model, c), expected.numpy())


def test_dedicated_canaries_follow_the_dirac_law_white_box_and_in_the_final_model():
    """Canaries on CanaryCoordinates: their final values and white-box scores against DP-SGD's
    exact Dirac law (:mod:`dpaudit.mechanisms.dirac`), Kolmogorov-Smirnov tests on each side
    (false failure 1e-4 each, 4e-4 in all): Opacus's noise, scaling and our insertion together
    give exactly the law the theory assumes."""
    from scipy import stats

    from dpaudit.integrations.opacus import CanaryCoordinates
    from dpaudit.mechanisms.dirac import FinalLaw

    sigma, m, steps = 0.8, 6000, 30
    torch.manual_seed(1)
    model = CanaryCoordinates(torch.nn.Linear(8, 2), m)
    x, y = torch.randn(256, 8), torch.randint(0, 2, (256,))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=64)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    model, optimizer, loader = opacus.PrivacyEngine().make_private(
        module=model,
        optimizer=optimizer,
        data_loader=loader,
        noise_multiplier=sigma,
        max_grad_norm=1.0,
    )
    canaries = DiracCanaries(model, m, sample_rate=loader.sample_rate, seed=3)
    canaries.attach(optimizer)
    done = 0
    while done < steps:
        for xb, yb in loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(xb), yb).backward()
            optimizer.step()
            done += 1
            if done == steps:
                break
    q, z = loader.sample_rate, canaries.included.astype(bool)
    scale = 0.5 * 1.0 / optimizer.expected_batch_size
    u = canaries.scores() / scale  # the sum of the updates in units of C
    for law, sample in (
        (FinalLaw(0.0, 0.0, sigma * steps**0.5), u[~z]),
        (FinalLaw(0.0, 1.0, sigma * steps**0.5, steps, q), u[z]),
    ):
        grid = np.linspace(sample.min() - 5, sample.max() + 5, 20_001)
        density = np.exp(law.log_density(grid))
        cdf = np.concatenate([[0], np.cumsum(0.5 * (density[1:] + density[:-1]) * np.diff(grid))])
        assert stats.kstest(sample, lambda t, g=grid, c=cdf: np.interp(t, g, c)).pvalue > 1e-4
    rng = np.random.default_rng(0)
    for included, sample in (
        (False, canaries.whitebox_scores()[~z]),
        (True, canaries.whitebox_scores()[z]),
    ):
        updates = rng.normal(0.0, sigma, (50_000, steps))
        if included:
            updates += rng.random((50_000, steps)) < q
        reference = np.logaddexp(np.log1p(-q), np.log(q) + (2 * updates - 1) / (2 * sigma**2)).sum(
            axis=1
        )
        assert stats.ks_2samp(sample, reference).pvalue > 1e-4
