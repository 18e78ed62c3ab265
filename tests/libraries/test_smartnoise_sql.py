"""SmartNoise SQL's battery: the query costs read from the library, the grouped call that
releases every trial at once against the ungrouped query, and a small battery run."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpaudit.libraries import run_battery

pytest.importorskip("snsql")
from dpaudit.libraries import smartnoise_sql as battery  # noqa: E402


def test_the_claims_are_the_librarys_query_costs():
    # AVG is a noisy SUM and a noisy COUNT, VAR adds a noisy sum of squares: SmartNoise's
    # documented composition spends 1, 2 and 3 times the Privacy epsilon.
    costs = {
        a: battery.query(a, epsilon=0.5).claims["add_remove"].table["eps"]
        for a in ("SUM(x)", "AVG(x)", "VAR(x)")
    }
    assert costs == pytest.approx({"SUM(x)": 0.5, "AVG(x)": 1.0, "VAR(x)": 1.5})


def test_the_grouped_release_draws_as_the_ungrouped_query():
    # Two-sample Kolmogorov-Smirnov test at level 0.001 (fixed data; the library cannot be
    # seeded, so a false failure has probability 0.001 on every run).
    data = np.linspace(0.0, 1.0, 10)
    grouped = battery.query("SUM(x)").release()(data, 600, np.random.default_rng(0))
    reader = battery._reader(battery._frame(data, 1), 1.0, 0.0, (0.0, 1.0), censor=False)
    single = [float(reader.execute("SELECT SUM(x) FROM t.t")[1][0]) for _ in range(80)]
    assert stats.ks_2samp(grouped, single).pvalue > 1e-3


def test_a_small_battery_raises_no_false_alarm():
    name = "SELECT COUNT(*) FROM t.t (epsilon=1, delta=0, bounds=(0, 1))"
    result = run_battery("smartnoise-sql", trials=300, quick=True, functions=[name])
    assert not result.refuted
