"""Adapters: the Laplace and Gaussian mechanisms of diffprivlib and OpenDP as black boxes.

Both libraries are optional (``pip install diffprivlib opendp``); importing this module never
needs them, calling an adapter without its library raises ``ValueError`` saying what to install.
Every adapter returns a :class:`~dpaudit.mechanisms.blackbox.BlackBox` whose query is the sum of
the dataset's records, whose default pair is ``[0.0]`` against ``[1.0]`` (the sums differ by the
sensitivity one) and whose claim is what the library states for its parameters:

- diffprivlib (IBM; Holohan et al. 2019): ``Laplace``, ``Gaussian`` (classic calibration,
  ``epsilon <= 1``) and ``GaussianAnalytic`` (Balle & Wang 2018) claim ``(epsilon, delta)``-DP.
  They draw one value per call, so the adapter calls ``randomise`` once per trial (the per-trial
  loop cannot be avoided for this library); each chunk seeds the mechanism's ``random_state``
  from the engine's generator, so audits are reproducible.
- OpenDP (``opendp.measurements.make_laplace`` / ``make_gaussian``): one call on a vector of
  ``size`` copies of the query draws ``size`` independent outputs (vectorised). The claim comes
  from OpenDP's own privacy map, in OpenDP's own terms: ``epsilon``-DP for Laplace, ``rho``-zCDP
  for Gaussian (:class:`~dpaudit.bounds.rdp.ZCDP`, with its own ``(eps, delta)`` conversion and
  trade-off curve). The Gaussian mechanism is in fact ``sqrt(2 rho)``-GDP, a stronger statement
  than the zCDP claim (Bun & Steinke 2016; Dong, Roth & Su 2022). OpenDP samples from its own
  secure generator, which cannot be seeded: bounds stay valid (every trial is a fresh draw) but
  reruns are not bit-identical.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any

import numpy as np

from dpaudit._core.validation import check_choice, check_positive, check_probability
from dpaudit.bounds.rdp import ZCDP
from dpaudit.bounds.tradeoff import approx_dp
from dpaudit.mechanisms.blackbox import BlackBox

__all__ = [
    "DIFFPRIVLIB_MECHANISMS",
    "OPENDP_MECHANISMS",
    "diffprivlib_mechanism",
    "diffprivlib_release",
    "opendp_mechanism",
    "opendp_release",
]

#: diffprivlib mechanism names accepted by :func:`diffprivlib_mechanism`.
DIFFPRIVLIB_MECHANISMS = ("laplace", "gaussian", "gaussian_analytic")

#: OpenDP mechanism names accepted by :func:`opendp_mechanism`.
OPENDP_MECHANISMS = ("laplace", "gaussian")


def _require(module: str, package: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ValueError(
            f"this adapter needs the optional package {package!r}: pip install {package}"
        ) from None


def _query(dataset: object) -> float:
    """The audited query: the sum of the records."""
    return float(np.sum(np.asarray(dataset, dtype=float)))


def diffprivlib_release(
    mechanism: str = "laplace", *, epsilon: float, delta: float = 0.0, sensitivity: float = 1.0
) -> Callable[[object, int, np.random.Generator], np.ndarray]:
    """``fn(dataset, size, rng)``: ``size`` draws of diffprivlib's mechanism on the dataset's sum.

    The mechanism is built once per call with ``random_state`` drawn from ``rng`` (so the chunk is
    reproducible), then ``randomise`` runs once per trial.
    """
    name = check_choice("mechanism", mechanism, DIFFPRIVLIB_MECHANISMS)
    epsilon = check_positive("epsilon", epsilon)
    delta = check_probability("delta", delta, high_open=True)
    sensitivity = check_positive("sensitivity", sensitivity)
    lib = _require("diffprivlib.mechanisms", "diffprivlib")
    cls = {
        "laplace": lib.Laplace,
        "gaussian": lib.Gaussian,
        "gaussian_analytic": lib.GaussianAnalytic,
    }[name]
    cls(epsilon=epsilon, delta=delta, sensitivity=sensitivity)  # refuse bad parameters now

    def release(dataset: object, size: int, rng: np.random.Generator) -> np.ndarray:
        seed = int(rng.integers(2**32))
        mech = cls(epsilon=epsilon, delta=delta, sensitivity=sensitivity, random_state=seed)
        value = _query(dataset)
        randomise = mech.randomise
        return np.array([randomise(value) for _ in range(size)], dtype=float)

    release.__name__ = f"diffprivlib_{name}"
    return release


def diffprivlib_mechanism(
    mechanism: str = "laplace",
    *,
    epsilon: float,
    delta: float = 0.0,
    sensitivity: float = 1.0,
    dataset: object = (0.0,),
    neighbour: object = (1.0,),
) -> BlackBox:
    """diffprivlib's mechanism as a :class:`BlackBox` claiming ``(epsilon, delta)``-DP."""
    fn = diffprivlib_release(mechanism, epsilon=epsilon, delta=delta, sensitivity=sensitivity)
    return BlackBox(
        fn,
        approx_dp(epsilon, delta),
        vectorised=True,
        calls_per_output=True,
        dataset=dataset,
        neighbour=neighbour,
        name=f"diffprivlib.{mechanism}(epsilon={epsilon:g}, delta={delta:g}, "
        f"sensitivity={sensitivity:g})",
    )


@functools.cache
def _opendp_measurement(name: str, scale: float, vector: bool) -> Any:
    """OpenDP's measurement, built once per process: it holds C pointers, which do not pickle,
    so a release that travels to worker processes carries its parameters and builds it there."""
    dp = _require("opendp.prelude", "opendp")
    dp.enable_features("contrib")
    atom = dp.atom_domain(T=float, nan=False)
    if vector:
        domain = dp.vector_domain(atom)
        metric = dp.l1_distance(T=float) if name == "laplace" else dp.l2_distance(T=float)
    else:
        domain, metric = atom, dp.absolute_distance(T=float)
    make = dp.m.make_laplace if name == "laplace" else dp.m.make_gaussian
    return make(domain, metric, scale=scale)


def opendp_release(
    mechanism: str = "laplace", *, scale: float
) -> Callable[[object, int, np.random.Generator], np.ndarray]:
    """``fn(dataset, size, rng)``: ``size`` independent draws of OpenDP's mechanism with noise
    ``scale`` on the dataset's sum, from one call on a vector of ``size`` copies (``rng`` is not
    used: OpenDP's generator cannot be seeded)."""
    name = check_choice("mechanism", mechanism, OPENDP_MECHANISMS)
    scale = check_positive("scale", scale)
    _opendp_measurement(name, scale, vector=True)  # refuse bad parameters now

    def release(dataset: object, size: int, rng: np.random.Generator) -> np.ndarray:
        if size == 0:
            return np.empty(0)
        measurement = _opendp_measurement(name, scale, vector=True)
        return np.asarray(measurement([_query(dataset)] * size), dtype=float)

    release.__name__ = f"opendp_{name}"
    return release


def opendp_mechanism(
    mechanism: str = "laplace",
    *,
    scale: float,
    sensitivity: float = 1.0,
    dataset: object = (0.0,),
    neighbour: object = (1.0,),
) -> BlackBox:
    """OpenDP's mechanism as a :class:`BlackBox`; the claim is OpenDP's privacy map at
    ``d_in = sensitivity``, in OpenDP's own terms: ``(eps, 0)``-DP for Laplace, ``rho``-zCDP
    (:class:`~dpaudit.bounds.rdp.ZCDP`) for Gaussian."""
    fn = opendp_release(mechanism, scale=scale)
    sensitivity = check_positive("sensitivity", sensitivity)
    stated = float(_opendp_measurement(mechanism, scale, vector=False).map(sensitivity))
    claim = approx_dp(stated, 0.0) if mechanism == "laplace" else ZCDP(stated).tradeoff()
    return BlackBox(
        fn,
        claim,
        vectorised=True,
        dataset=dataset,
        neighbour=neighbour,
        name=f"opendp.{mechanism}(scale={scale:g})",
    )
