"""diffprivlib's models: their claims, the released parameters, and a small battery run."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.libraries import run_battery

pytest.importorskip("diffprivlib")
from dpaudit.libraries import diffprivlib_models as battery  # noqa: E402


def test_each_model_claims_its_epsilon_under_both_relations_and_releases_a_fixed_vector():
    for name in battery.MODELS:
        function = battery.model(name, epsilon=0.5)
        assert not function.stated
        assert {c.table["eps"] for c in function.claims.values()} == {0.5}
        pair = function.pairs("add_remove")["boundary"][0]
        release = function.release()
        first = release(pair.d, 2, np.random.default_rng(3))
        other = release(pair.d_prime, 2, np.random.default_rng(3))
        assert first.shape == other.shape and np.isfinite(first).all()
    # PCA is not reproducible from its random_state: the library is declared unseedable.
    pca = battery.model("PCA").release()
    data = battery.model("PCA").pairs("replace_one")["boundary"][0].d
    draws = [pca(data, 3, np.random.default_rng(3)) for _ in range(2)]
    assert not np.array_equal(*draws) and battery.LIBRARY.seeded is False


def test_a_small_battery_raises_no_false_alarm():
    name = battery.model("StandardScaler").name
    # A correct model at a family-wise level of 0.05: a false alarm has probability <= 0.05.
    assert not run_battery("diffprivlib-models", trials=200, quick=True, functions=[name]).refuted
