"""diffprivlib (IBM): its mechanisms and ``diffprivlib.tools``, as the battery calls them.

Calls. diffprivlib draws one output per call, so every release function loops over the trials
of a chunk; what it builds once per chunk it builds once: a mechanism with an integer
``random_state`` drawn from the audit's generator, or for the tools a ``numpy.random.RandomState``
seeded the same way and handed to every call (audits are reproducible bit for bit). Each tool
call gets a fresh ``BudgetAccountant``, so the default accountant never runs out of budget.

Claims. diffprivlib states ``(epsilon, delta)``-DP for its parameters: the claim is
``approx_dp(epsilon, delta)``.

Relations. A mechanism's ``sensitivity`` bounds how far its input may move: its neighbours are
two inputs at most ``sensitivity`` apart, audited as one-record datasets (``replace_one``); for
``Exponential`` the input is the utility vector, and neighbours are vectors whose entries differ
by at most ``sensitivity`` (every answer pattern of
:func:`~dpaudit.mechanisms.pairs.answer_pairs`); ``Binary`` has the inputs ``"0"`` and ``"1"``. The
tools compute their sensitivity from ``bounds`` without saying which neighbours they mean, so
both relations are tried (the library is silent).

Input spaces. Each tool and each noise mechanism that takes a value declares what it accepts
(:class:`~dpaudit.mechanisms.inputs.InputSpace`, searched by the battery): bounds at offsets
from zero to ``2**1000`` (both signs) and widths from 1 and ``2**20`` down to 4 ulps of the
offset, datasets of 1 to a million records (a thousand for the median and quantile, whose cost
grows faster), float and integer records, ``epsilon`` from 0.1 to 5, and the special records the
tools accept without an error (NaN, the infinities, ``-0.0``, subnormals, values outside the
bounds). The default setting, the one audited without a search, is ``n = 10`` records in
``bounds = (0, 1)``, ``epsilon = 1`` (bounds ``(0, 2**61)`` and an int64 accumulator for the
integer sum). The generators: records at the bounds, random records, the rounding search on
``numpy.sum`` for the sums and means, overflow pairs for integer records, special records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dpaudit.libraries.battery import (
    EPSILONS,
    OFFSETS,
    RANDOM_BUDGET,
    WIDTH_ULPS,
    WIDTHS,
    Function,
    Library,
    Release,
    approx_dp_claim,
    bounded_pairs,
)
from dpaudit.mechanisms.base import NeighbouringPair
from dpaudit.mechanisms.inputs import SPECIALS, InputSpace, Setting
from dpaudit.mechanisms.pairs import (
    answer_pairs,
    boundary_pairs,
    overflow_pairs,
    random_pairs,
)

__all__ = ["LIBRARY", "functions"]

#: Records per dataset of the tools' pairs.
N = 10
#: Declared bounds of the tools' records.
BOUNDS = (0.0, 1.0)
#: Declared bounds of the integer sum, large enough that int64 overflows with four records.
INT_BOUNDS = (0, 2**61)
RELATIONS_SILENT = ("replace_one", "add_remove")

#: Dataset sizes the search tries (the bounds and ``epsilon`` are the batteries' grid:
#: :data:`~dpaudit.libraries.battery.OFFSETS` and the rest).
SIZES = (1, 10, 100, 1_000, 10_000, 100_000, 1_000_000)
#: What one call costs, in records: a tool call costs about as much as summing this many.
RECORDS_PER_CALL = 10_000.0


def _shown(value: Any) -> str:
    """A setting as it reads in a function's name: types by name, numbers short."""
    if isinstance(value, type):
        return value.__name__
    if isinstance(value, tuple):
        return "(" + ", ".join(_shown(v) for v in value) + ")"
    if isinstance(value, int):
        return (
            f"2**{value.bit_length() - 1}"
            if value > 2**20 and value & (value - 1) == 0
            else str(value)
        )
    return f"{value:g}" if isinstance(value, float) else repr(value)


_claim = approx_dp_claim


def _mechanism_release(name: str, kwargs: Mapping[str, Any], integer: bool) -> Release:
    from diffprivlib import mechanisms

    cls = getattr(mechanisms, name)
    cls(**kwargs)  # refuse bad parameters before any audit

    def release(dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        mech = cls(**kwargs, random_state=int(rng.integers(2**31)))
        value = int(np.sum(dataset)) if integer else float(np.sum(dataset))
        randomise = mech.randomise
        return np.array([randomise(value) for _ in range(size)], dtype=float)

    return release


def _exponential_release(epsilon: float, sensitivity: float) -> Release:
    """The dataset is the utility vector: one mechanism per chunk, ``randomise()`` per trial."""
    from diffprivlib.mechanisms import Exponential

    def release(dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        utility = [float(u) for u in np.asarray(dataset, dtype=float)]
        mech = Exponential(
            epsilon=epsilon,
            sensitivity=sensitivity,
            utility=utility,
            random_state=int(rng.integers(2**31)),
        )
        return np.array([mech.randomise() for _ in range(size)], dtype=float)

    return release


def _binary_release(epsilon: float) -> Release:
    """The one record (0 or 1) is the input ``"0"`` or ``"1"``; outputs are read back as 0/1."""
    from diffprivlib.mechanisms import Binary

    def release(dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        mech = Binary(
            epsilon=epsilon, value0="0", value1="1", random_state=int(rng.integers(2**31))
        )
        value = str(int(np.asarray(dataset).ravel()[0]))
        return np.array([float(mech.randomise(value)) for _ in range(size)])

    return release


def _tool_release(name: str, kwargs: Mapping[str, Any], integer: bool = False) -> Release:
    from diffprivlib import tools
    from diffprivlib.accountant import BudgetAccountant

    tool = getattr(tools, name)

    def release(dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        state = np.random.RandomState(int(rng.integers(2**31)))
        data = np.asarray(dataset, dtype=np.int64 if integer else float)
        out = [
            tool(data, **kwargs, random_state=state, accountant=BudgetAccountant())
            for _ in range(size)
        ]
        if name == "histogram":  # (counts, bin edges): the edges are fixed by ``range``
            out = [counts for counts, _ in out]
        return np.asarray(out, dtype=float).reshape(size, -1)

    return release


def _mechanism(
    name: str,
    kwargs: Mapping[str, Any],
    epsilon: float,
    delta: float,
    integer: bool = False,
    *,
    value: float = 0,
) -> Function:
    """A noise mechanism on one value: its input moves from ``value`` by ``sensitivity``."""
    sensitivity = kwargs["sensitivity"]
    lo, hi = value, value + sensitivity

    def pairs(relation: str) -> dict[str, Sequence[NeighbouringPair]]:
        return {
            "boundary": boundary_pairs(1, lo, hi, relation=relation, integer=integer),
            "random": random_pairs(
                1, lo, hi, relation=relation, budget=RANDOM_BUDGET, integer=integer
            ),
        }

    def at(setting: Setting) -> Function:
        lower, upper = setting.bounds
        changed = {**kwargs, "epsilon": setting.epsilon, "sensitivity": upper - lower}
        return _mechanism(name, changed, setting.epsilon, delta, integer, value=lower)

    space = InputSpace(
        default=Setting((lo, hi), 1, "int64" if integer else "float64", epsilon),
        offsets=OFFSETS,
        widths=(1.0, 2.0**-20, 2.0**20),
        epsilons=EPSILONS,
        relations=("replace_one",),
        records_per_output=RECORDS_PER_CALL,
    )
    shown = ", ".join(f"{k}={_shown(v)}" for k, v in kwargs.items())
    return Function(
        f"mechanisms.{name}({shown})",
        lambda: _mechanism_release(name, kwargs, integer),
        {"replace_one": _claim(epsilon, delta)},
        pairs,
        space=space,
        at=at,
    )


def _exponential(epsilon: float, sensitivity: float, k: int) -> Function:
    """Utility vectors of ``k`` candidates whose entries differ by at most ``sensitivity``: the
    answer patterns of :func:`~dpaudit.mechanisms.pairs.answer_pairs`."""

    def pairs(relation: str) -> dict[str, Sequence[NeighbouringPair]]:
        return {"answers": answer_pairs(k, base=0.0, shift=sensitivity)}

    return Function(
        f"mechanisms.Exponential(epsilon={epsilon:g}, sensitivity={sensitivity:g}, k={k})",
        lambda: _exponential_release(epsilon, sensitivity),
        {"replace_one": _claim(epsilon)},
        pairs,
    )


def _binary(epsilon: float) -> Function:
    def pairs(relation: str) -> dict[str, Sequence[NeighbouringPair]]:
        return {"boundary": boundary_pairs(1, 0, 1, relation=relation, integer=True)}

    return Function(
        f"mechanisms.Binary(epsilon={epsilon:g})",
        lambda: _binary_release(epsilon),
        {"replace_one": _claim(epsilon)},
        pairs,
    )


def _tool(
    name: str,
    kwargs: Mapping[str, Any],
    *,
    bounds: tuple[float, float] = BOUNDS,
    integer: bool = False,
    rounding: bool = False,
    overflow: bool = False,
    label: str | None = None,
    space: InputSpace | None = None,
    bounds_key: str | None = "bounds",
) -> Function:
    """A tool of ``diffprivlib.tools`` on ``N`` records in ``bounds``; with ``space``, also at
    every setting of it (``bounds_key`` names the argument that takes the bounds)."""
    lo, hi = bounds

    def pairs(relation: str) -> dict[str, Sequence[NeighbouringPair]]:
        if overflow:
            return {"overflow": overflow_pairs(int(lo), int(hi), relation=relation)}
        return bounded_pairs(N, lo, hi, relation, rounding=rounding, integer=integer)

    def at(setting: Setting) -> Function:
        changed = {**kwargs, "epsilon": setting.epsilon}
        if bounds_key is not None:
            changed[bounds_key] = setting.bounds
        return _tool(
            name,
            changed,
            bounds=setting.bounds,
            integer=setting.integer,
            label=label,
            bounds_key=bounds_key,
        )

    shown = ", ".join(f"{k}={_shown(v)}" for k, v in kwargs.items())
    return Function(
        f"tools.{label or name}({shown})",
        lambda: _tool_release(name, kwargs, integer),
        {relation: _claim(kwargs["epsilon"]) for relation in RELATIONS_SILENT},
        pairs,
        stated=False,
        space=space,
        at=None if space is None else at,
    )


def _space(
    generators: tuple[str, ...],
    *,
    bounds: tuple[float, float] = BOUNDS,
    dtypes: tuple[str, ...] = ("float64",),
    sizes: tuple[int, ...] = SIZES,
    specials: tuple[str, ...] = SPECIALS,
    records_per_call: float = RECORDS_PER_CALL,
) -> InputSpace:
    """The input space of a tool: its default ``N`` records in ``bounds`` of ``dtypes[0]``,
    ``epsilon = 1``."""
    return InputSpace(
        default=Setting(bounds, N, dtypes[0], 1.0),
        offsets=OFFSETS,
        widths=WIDTHS,
        width_ulps=WIDTH_ULPS,
        sizes=sizes,
        dtypes=dtypes,
        epsilons=EPSILONS,
        specials=specials,
        relations=RELATIONS_SILENT,
        generators=generators,
        accumulate=np.sum if "rounding" in generators else None,
        records_per_output=records_per_call,
    )


def functions() -> list[Function]:
    """The covered functions of diffprivlib, with the settings audited and their input
    spaces."""
    eps = 1.0
    sums = ("boundary", "rounding", "overflow", "special", "random")
    others = ("boundary", "special", "random")
    float_and_int = ("float64", "int64")
    quantiles = _space(others, sizes=(1, 10, 100, 1_000), records_per_call=200.0)
    return [
        _mechanism("Laplace", {"epsilon": eps, "sensitivity": 1.0}, eps, 0.0),
        _mechanism("Gaussian", {"epsilon": 0.5, "delta": 1e-5, "sensitivity": 1.0}, 0.5, 1e-5),
        _mechanism(
            "GaussianAnalytic", {"epsilon": eps, "delta": 1e-5, "sensitivity": 1.0}, eps, 1e-5
        ),
        _mechanism("Geometric", {"epsilon": eps, "sensitivity": 1}, eps, 0.0, integer=True),
        _exponential(eps, 1.0, 3),
        _binary(eps),
        _tool(
            "mean",
            {"epsilon": eps, "bounds": BOUNDS},
            rounding=True,
            space=_space(sums, dtypes=float_and_int),
        ),
        _tool("var", {"epsilon": eps, "bounds": BOUNDS}, space=_space(others)),
        _tool("std", {"epsilon": eps, "bounds": BOUNDS}, space=_space(others)),
        _tool(
            "sum",
            {"epsilon": eps, "bounds": BOUNDS},
            rounding=True,
            space=_space(sums, dtypes=float_and_int),
        ),
        _tool(
            "nansum",
            {"epsilon": eps, "bounds": BOUNDS},
            rounding=True,
            space=_space(sums, dtypes=float_and_int),
        ),
        _tool(
            "sum",
            {"epsilon": eps, "bounds": INT_BOUNDS, "dtype": int},
            bounds=INT_BOUNDS,
            integer=True,
            overflow=True,
            label="sum[int]",
            space=_space(
                ("overflow", "boundary", "special", "random"),
                bounds=INT_BOUNDS,
                dtypes=("int64",),
                specials=("outside",),
            ),
        ),
        _tool(
            "count_nonzero",
            {"epsilon": eps},
            integer=True,
            space=_space(("boundary", "random"), dtypes=("int64",), specials=()),
            bounds_key=None,
        ),
        _tool(
            "histogram",
            {"epsilon": eps, "bins": 4, "range": BOUNDS},
            space=_space(others),
            bounds_key="range",
        ),
        _tool("median", {"epsilon": eps, "bounds": BOUNDS}, space=quantiles),
        _tool("quantile", {"epsilon": eps, "quant": 0.25, "bounds": BOUNDS}, space=quantiles),
    ]


#: diffprivlib in the battery's registry.
LIBRARY = Library(
    "diffprivlib", "diffprivlib", "diffprivlib", functions, seeded=True, one_call_per_output=True
)
