"""Loader for the pinned reference values (see README.md in this folder for their provenance)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

HERE = Path(__file__).parent


def rows(**filters: str) -> list[dict]:
    """Rows of reference_values.csv whose columns equal ``filters``; ``params`` is parsed JSON
    and ``value``/``query`` are floats where they parse."""
    out = []
    with open(HERE / "reference_values.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            if all(row[k] == v for k, v in filters.items()):
                row = dict(row)
                row["params"] = json.loads(row["params"])
                for key in ("value", "query"):
                    try:
                        row[key] = float(row[key])
                    except ValueError:
                        pass
                out.append(row)
    return out


def item7_curve() -> dict[str, list[float]]:
    """Columns of the DP-SGD trade-off curve (sigma 1.1, 15 epochs), as float lists."""
    with open(HERE / "item7_tradeoff_sigma1.1_epochs15_T3516.csv", newline="") as fh:
        reader = csv.DictReader(fh)
        cols: dict[str, list[float]] = {name: [] for name in reader.fieldnames or []}
        for row in reader:
            for name, value in row.items():
                cols[name].append(float(value))
    return cols
