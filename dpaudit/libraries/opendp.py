"""OpenDP: its noise measurements and the common clamp, sum or mean, noise pipelines.

Calls. A pipeline is a deterministic transformation followed by a noise measurement. Each
release function builds both once (per audit), and per chunk runs the transformation once on the
dataset and the *vector* form of the same noise measurement once on ``size`` copies of its
output: ``size`` independent draws of the pipeline from one call into the library (OpenDP's
vector measurements add independent noise of the same sampler to every entry).

OpenDP's generator cannot be seeded: an audit of OpenDP draws fresh randomness on every run, so
its bounds are as valid as any (every trial is an independent draw) but reruns are not identical
bit for bit.

Claims. The claim is OpenDP's own privacy map at ``d_in``, in OpenDP's own measure:
max-divergence gives ``approx_dp(eps, 0)``, zero-concentrated divergence gives ``rho``-zCDP
(:class:`~dpaudit.bounds.rdp.ZCDP`).

Relations. OpenDP states its relation through the input metric. A noise measurement on one
value with the absolute distance at ``d_in = 1`` is audited on two values one apart
(``replace_one`` of a one-record dataset). A pipeline on ``symmetric_distance`` counts added
plus removed records: ``add_remove`` neighbours are ``d_in = 1`` and ``replace_one`` neighbours
``d_in = 2``, so both relations are tried, each with its own stated claim.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dpaudit.bounds.rdp import ZCDP
from dpaudit.bounds.tradeoff import approx_dp
from dpaudit.libraries.battery import Claimed, Function, Library, Release
from dpaudit.mechanisms.base import NeighbouringPair
from dpaudit.mechanisms.pairs import boundary_pairs, overflow_pairs, random_pairs, rounding_pairs

__all__ = ["LIBRARY", "functions"]

#: Records per dataset of the pipelines' pairs (and the size a mean is resized to).
N = 10
RANDOM_BUDGET = 8
#: ``d_in`` of each relation under ``symmetric_distance``.
D_IN = {"add_remove": 1, "replace_one": 2}


def _dp() -> Any:
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


def _claim(measurement: Any, d_in: int) -> Claimed:
    """OpenDP's privacy map at ``d_in``, in the measurement's own output measure."""
    stated = float(measurement.map(d_in))
    measure = str(measurement.output_measure)
    if measure.startswith("MaxDivergence"):
        curve = approx_dp(stated, 0.0)
        return Claimed(
            curve,
            {"kind": "pure_dp", "eps": stated, "d_in": d_in},
            (0.0,),
            (f"{stated:.6g}-DP (max-divergence at d_in={d_in})"),
        )
    if measure.startswith("ZeroConcentratedDivergence"):
        return Claimed(
            ZCDP(stated).tradeoff(),
            {"kind": "zcdp", "rho": stated, "d_in": d_in},
            (1e-5,),
            f"{stated:.6g}-zCDP (zero-concentrated divergence at d_in={d_in})",
        )
    raise ValueError(f"OpenDP measure {measure!r} has no claim kind in dpaudit")


def _noise(dp: Any, kind: str, integer: bool, scale: float) -> Any:
    """The vector form of OpenDP's noise measurement (independent noise per entry)."""
    atom = dp.atom_domain(T=int) if integer else dp.atom_domain(T=float, nan=False)
    t = int if integer else float
    metric = dp.l1_distance(T=t) if kind == "laplace" else dp.l2_distance(T=t)
    make = dp.m.make_laplace if kind == "laplace" else dp.m.make_gaussian
    return make(dp.vector_domain(atom), metric, scale=scale)


def _release(transformation: Callable[[Any], Any] | None, noise: Any, integer: bool) -> Release:
    def release(dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        records = [int(x) if integer else float(x) for x in np.asarray(dataset).ravel()]
        value = records[0] if transformation is None else transformation(records)
        if size == 0:
            return np.empty(0)
        return np.asarray(noise([value] * size), dtype=float)

    return release


def _measurement(kind: str, integer: bool, scale: float) -> Function:
    """``make_laplace`` / ``make_gaussian`` on one value, absolute distance, ``d_in = 1``."""

    def release() -> Release:
        return _release(None, _noise(_dp(), kind, integer, scale), integer)

    def claims() -> dict[str, Claimed]:
        dp = _dp()
        atom = dp.atom_domain(T=int) if integer else dp.atom_domain(T=float, nan=False)
        make = dp.m.make_laplace if kind == "laplace" else dp.m.make_gaussian
        metric = dp.absolute_distance(T=int if integer else float)
        return {"replace_one": _claim(make(atom, metric, scale=scale), 1)}

    def pairs(relation: str) -> dict[str, Sequence[NeighbouringPair]]:
        return {
            "boundary": boundary_pairs(1, 0, 1, relation=relation, integer=integer),
            "random": random_pairs(
                1, 0, 1, relation=relation, budget=RANDOM_BUDGET, integer=integer
            ),
        }

    t = "int" if integer else "float"
    return Function(f"m.make_{kind}[{t}](scale={scale:g})", release, claims(), pairs)


def _pipeline(
    kind: str,
    *,
    integer: bool,
    bounds: tuple[float, float],
    scale: float,
    mean: bool = False,
    overflow: bool = False,
) -> Function:
    """``clamp(bounds) >> sum`` (or ``>> resize(N) >> mean``) ``>> noise`` on
    ``symmetric_distance``."""
    lo, hi = bounds

    def transformation() -> Any:
        dp = _dp()
        atom = dp.atom_domain(T=int) if integer else dp.atom_domain(T=float, nan=False)
        chain = (dp.vector_domain(atom), dp.symmetric_distance()) >> dp.t.then_clamp(bounds)
        if mean:
            middle = (lo + hi) / 2
            chain = chain >> dp.t.then_resize(size=N, constant=middle) >> dp.t.then_mean()
        else:
            chain = chain >> dp.t.then_sum()
        return chain

    def release() -> Release:
        return _release(transformation(), _noise(_dp(), kind, integer, scale), integer)

    def claims() -> dict[str, Claimed]:
        dp = _dp()
        then = dp.m.then_laplace if kind == "laplace" else dp.m.then_gaussian
        pipeline = transformation() >> then(scale=scale)
        return {relation: _claim(pipeline, d_in) for relation, d_in in D_IN.items()}

    def pairs(relation: str) -> dict[str, Sequence[NeighbouringPair]]:
        if overflow:
            return {"overflow": overflow_pairs(int(lo), int(hi), relation=relation, dtype=np.int32)}
        out: dict[str, Sequence[NeighbouringPair]] = {
            "boundary": boundary_pairs(N, lo, hi, relation=relation, integer=integer)
        }
        if not integer:
            out["rounding"] = rounding_pairs(N, lo, hi, relation=relation, accumulate=np.sum)
        out["random"] = random_pairs(
            N, lo, hi, relation=relation, budget=RANDOM_BUDGET, integer=integer
        )
        return out

    t = "int" if integer else "float"
    middle = f"resize({N}) >> mean" if mean else "sum"
    name = f"clamp({lo}, {hi}) >> {middle} >> {kind}[{t}](scale={scale:.10g})"
    return Function(name, release, claims(), pairs)


def functions() -> list[Function]:
    """The covered measurements and pipelines of OpenDP, with the settings audited."""
    return [
        _measurement("laplace", False, 1.0),
        _measurement("laplace", True, 1.0),
        _measurement("gaussian", False, 1.0),
        _measurement("gaussian", True, 1.0),
        _pipeline("laplace", integer=False, bounds=(0.0, 1.0), scale=1.0),
        _pipeline("laplace", integer=True, bounds=(0, 10), scale=10.0),
        _pipeline("gaussian", integer=False, bounds=(0.0, 1.0), scale=1.0),
        _pipeline("laplace", integer=False, bounds=(0.0, 1.0), scale=0.1, mean=True),
        _pipeline("laplace", integer=True, bounds=(0, 2**29), scale=2.0**29, overflow=True),
    ]


#: OpenDP in the battery's registry.
LIBRARY = Library("opendp", "opendp", "opendp", functions, seeded=False, one_call_per_output=False)
