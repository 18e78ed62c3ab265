"""Third-party privacy accountants as claims: what each library says ``delta(eps)`` is.

``claim(name, mechanism)`` asks the accountant ``name`` about the same mechanism dpaudit samples
and returns a :class:`~dpaudit.accountants.claims.Claim` that :func:`dpaudit.audit_accountant`
checks against the Monte Carlo privacy loss. The libraries are optional: a missing one raises
:class:`AccountantUnavailable` with ``status = "not installed"``, a mechanism the accountant does
not cover one with ``status = "unsupported"``.

Accountants (:data:`NAMES`) and what each claim is:

- ``dpaudit:pld``: dpaudit's own privacy loss distributions, pessimistic bound
  (:mod:`dpaudit.bounds.pld`).
- ``dp_accounting:pld`` and ``dp_accounting:rdp``: Google's ``dp_accounting``
  (``PLDAccountant``, ``RdpAccountant``), ``get_delta`` of the mechanism's ``DpEvent``.
- ``prv_accountant``: Microsoft's ``prv_accountant`` (Gopi, Lee & Wutschitz 2021), the upper
  value of ``compute_delta``.
- ``opacus:rdp``, ``opacus:prv``, ``opacus:gdp``: Opacus accountants fed the steps
  ``(noise multiplier, sample rate, count)``; ``opacus:gdp`` is the central-limit approximation
  of Bu et al. 2019 (its ``kind`` is ``"approximation"``: it is not meant as a guarantee).
- ``autodp``: autodp's mechanism zoo (Renyi DP, and the analytic Gaussian) composed with
  ``Composition`` and ``AmplificationBySampling``.

Opacus and autodp report ``eps(delta)`` only. Their claimed ``delta(eps)`` is the smallest
``delta`` found by bisection on ``log delta`` (relative step ``1e-4``) whose reported ``eps`` is
at most ``eps``: a statement the library itself makes, so a violation of it refutes one of the
library's own ``(eps, delta)`` pairs.

How dpaudit mechanisms map (``Delta`` the clipping norm, noise multipliers are ``sigma / Delta``):
Gaussian, Laplace (``b / Delta``), randomized response (``dp_accounting``: uniform-resampling
probability ``k / (e^eps + k - 1)``; ``prv_accountant``: pure ``eps``-DP; ``autodp``: truth kept
with probability ``e^eps / (1 + e^eps)``, binary only), Poisson subsampling, fixed-size
subsampling (``dp_accounting:rdp`` only, ``SampledWithoutReplacementDpEvent`` under replace-one,
whose Gaussian noise multiplier is relative to the replace-one sensitivity ``2 Delta``),
compositions, and DP-SGD (its accountant, :attr:`dpaudit.mechanisms.dpsgd.DPSGD.accountant`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import logging
import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from dpaudit._core.validation import check_choice
from dpaudit.accountants.claims import Claim
from dpaudit.mechanisms.base import Mechanism
from dpaudit.mechanisms.composed import Composed
from dpaudit.mechanisms.gaussian import Gaussian
from dpaudit.mechanisms.laplace import Laplace
from dpaudit.mechanisms.randomized_response import RandomizedResponse
from dpaudit.mechanisms.subsampled import FixedSizeSubsampled, PoissonSubsampled

__all__ = ["NAMES", "PACKAGES", "AccountantUnavailable", "claim", "installed"]

#: Every accountant ``claim`` knows.
NAMES = (
    "dpaudit:pld",
    "dp_accounting:pld",
    "dp_accounting:rdp",
    "prv_accountant",
    "opacus:rdp",
    "opacus:prv",
    "opacus:gdp",
    "autodp",
)

#: Accountant -> the importable package it needs (``None``: part of dpaudit).
PACKAGES: dict[str, str | None] = {
    "dpaudit:pld": None,
    "dp_accounting:pld": "dp_accounting",
    "dp_accounting:rdp": "dp_accounting",
    "prv_accountant": "prv_accountant",
    "opacus:rdp": "opacus",
    "opacus:prv": "opacus",
    "opacus:gdp": "opacus",
    "autodp": "autodp",
}

#: Relative precision of the bisection that turns ``eps(delta)`` into ``delta(eps)``.
_INVERSION_STEP = 1e-4
#: ``delta`` range searched by the inversion.
_DELTA_FLOOR = 1e-30


class AccountantUnavailable(ValueError):
    """An accountant that cannot make a claim here: ``status`` is ``"not installed"`` or
    ``"unsupported"`` (the accountant does not cover the mechanism)."""

    def __init__(self, message: str, status: str) -> None:
        super().__init__(message)
        self.status = status


def installed(name: str) -> bool:
    """True when the package behind accountant ``name`` can be imported."""
    package = _package(name)
    return package is None or importlib.util.find_spec(package) is not None


def _package(name: str) -> str | None:
    return PACKAGES[check_choice("accountant", name, NAMES)]


# --------------------------------------------------------------------------------------- steps
def _unsupported(name: str, mechanism: Any, why: str) -> AccountantUnavailable:
    label = getattr(mechanism, "name", type(mechanism).__name__)
    return AccountantUnavailable(f"{name} does not cover {label}: {why}", "unsupported")


def _accounted(mechanism: Any) -> Mechanism:
    """The mechanism whose privacy the accountants describe (DP-SGD: its accountant)."""
    accountant = getattr(mechanism, "accountant", None)
    if isinstance(accountant, Mechanism):
        return accountant
    if not isinstance(mechanism, Mechanism):
        raise ValueError(f"mechanism must be a dpaudit Mechanism, got {type(mechanism).__name__}")
    return mechanism


def _steps(mechanism: Any) -> tuple[list[tuple[Mechanism, int]], str]:
    """The mechanism as ``(atom, runs)`` pairs and its neighbouring relation."""
    m = _accounted(mechanism)
    atoms = m.atoms() if isinstance(m, Composed) else [(m, 1)]
    return atoms, m.relation


def _translate(
    name: str,
    atoms: list[tuple[Mechanism, int]],
    translate: Callable[[Mechanism], Any],
    why: str,
) -> tuple[list[Any], list[int]]:
    """Each atom in the terms of accountant ``name``, ``translate(atom)``, and its number of
    runs; an atom that ``translate`` maps to ``None`` has no counterpart in the library
    (:class:`AccountantUnavailable` saying ``why``)."""
    parts = []
    for atom, _ in atoms:
        part = translate(atom)
        if part is None:
            raise _unsupported(name, atom, why)
        parts.append(part)
    return parts, [int(runs) for _, runs in atoms]


# --------------------------------------------------------------------------------------- dpaudit
def _dpaudit_pld(mechanism: Any, **options: Any) -> Claim:
    m = _accounted(mechanism)
    if "pld" not in m.theory_methods:
        raise _unsupported("dpaudit:pld", m, "no privacy loss distribution")
    pld = m.theory("pld")
    return Claim(
        lambda eps: np.asarray(pld.delta(eps, "upper"), dtype=float),
        name="dpaudit:pld",
        kind="bound",
        epsilon_fn=lambda d: pld.epsilon(d, "upper"),
    )


# ------------------------------------------------------------------------------------ dp_accounting
def _dp_event(name: str, mechanism: Any) -> tuple[Any, Any]:
    """The ``DpEvent`` of the mechanism and the ``NeighboringRelation`` to account under."""
    import dp_accounting
    from dp_accounting import dp_event as ev

    def event(atom: Mechanism) -> Any:
        if isinstance(atom, Gaussian):
            return ev.GaussianDpEvent(atom.sigma / atom.sensitivity)
        if isinstance(atom, Laplace):
            return ev.LaplaceDpEvent(atom.scale / atom.sensitivity)
        if isinstance(atom, RandomizedResponse):
            noise = atom.k / (math.exp(atom.eps) + atom.k - 1)
            return ev.RandomizedResponseDpEvent(noise_parameter=noise, num_buckets=atom.k)
        if isinstance(atom, PoissonSubsampled) and isinstance(atom.base, Gaussian | Laplace):
            base = (
                ev.GaussianDpEvent(atom.base.sigma / atom.sensitivity)
                if isinstance(atom.base, Gaussian)
                else ev.LaplaceDpEvent(atom.base.scale / atom.sensitivity)
            )
            return ev.PoissonSampledDpEvent(atom.rate, base)
        if isinstance(atom, FixedSizeSubsampled) and isinstance(atom.base, Gaussian):
            return ev.SampledWithoutReplacementDpEvent(
                atom.population,
                atom.subsample_size,
                ev.GaussianDpEvent(atom.base.sigma / atom.shift),
            )
        return None

    atoms, relation = _steps(mechanism)
    parts, counts = _translate(name, atoms, event, "no matching DpEvent")
    events = [
        e if runs == 1 else ev.SelfComposedDpEvent(e, runs)
        for e, runs in zip(parts, counts, strict=True)
    ]
    neighbouring = (
        dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
        if relation == "add_remove"
        else dp_accounting.NeighboringRelation.REPLACE_ONE
    )
    return (events[0] if len(events) == 1 else ev.ComposedDpEvent(events)), neighbouring


def _dp_accounting(kind: str) -> Callable[..., Claim]:
    name = f"dp_accounting:{kind}"

    def build(mechanism: Any, *, value_discretization_interval: float = 1e-4) -> Claim:
        from dp_accounting.pld import PLDAccountant
        from dp_accounting.rdp import RdpAccountant

        event, neighbouring = _dp_event(name, mechanism)
        if kind == "pld":
            accountant = PLDAccountant(
                neighboring_relation=neighbouring,
                value_discretization_interval=value_discretization_interval,
            )
        else:
            accountant = RdpAccountant(neighboring_relation=neighbouring)
        if not accountant.supports(event):
            raise _unsupported(name, _accounted(mechanism), f"{type(event).__name__} refused")
        accountant.compose(event)

        def delta(eps: np.ndarray) -> np.ndarray:
            flat = [min(float(accountant.get_delta(float(e))), 1.0) for e in eps.ravel()]
            return np.asarray(flat).reshape(eps.shape)

        return Claim(delta, name=name, kind="bound", epsilon_fn=lambda d: accountant.get_epsilon(d))

    return build


# --------------------------------------------------------------------------------------- prv
def _prv_accountant(
    mechanism: Any, *, eps_error: float = 0.01, delta_error: float = 1e-11
) -> Claim:
    import prv_accountant as prv

    def variable(atom: Mechanism) -> Any:
        if isinstance(atom, Gaussian):
            return prv.GaussianMechanism(noise_multiplier=atom.sigma / atom.sensitivity)
        if isinstance(atom, Laplace):
            return prv.LaplaceMechanism(mu=atom.sensitivity / atom.scale)
        if isinstance(atom, RandomizedResponse):
            return prv.PureDPMechanism(eps=atom.eps)
        if isinstance(atom, PoissonSubsampled) and isinstance(atom.base, Gaussian):
            return prv.PoissonSubsampledGaussianMechanism(
                sampling_probability=atom.rate, noise_multiplier=atom.base.sigma / atom.sensitivity
            )
        return None

    atoms, _ = _steps(mechanism)
    why = "no matching privacy random variable"
    prvs, counts = _translate("prv_accountant", atoms, variable, why)
    accountant = prv.PRVAccountant(
        prvs=prvs, max_self_compositions=counts, eps_error=eps_error, delta_error=delta_error
    )

    def delta(eps: np.ndarray) -> np.ndarray:
        flat = [float(accountant.compute_delta(float(e), counts)[2]) for e in eps.ravel()]
        return np.clip(np.asarray(flat), 0.0, 1.0).reshape(eps.shape)

    return Claim(
        delta,
        name="prv_accountant",
        kind="bound",
        epsilon_fn=lambda d: float(accountant.compute_epsilon(d, counts)[2]),
    )


# --------------------------------------------------------------------------------------- inversion
def _delta_from_epsilon(epsilon_of: Callable[[float], float]) -> Callable[[np.ndarray], np.ndarray]:
    """``eps -> min{delta : epsilon_of(delta) <= eps}``: a ladder of ``delta`` (one per decade
    from :data:`_DELTA_FLOOR` to 1) brackets the answer, then bisection on ``log delta`` keeps the
    side where the library's own ``eps`` is at most ``eps`` (module docstring). A ``delta`` at
    which the library reports no ``eps`` (it raises, or returns ``inf`` or ``NaN``) counts as
    making no statement there."""
    cache: dict[float, float] = {}

    def eps_at(log_d: float) -> float:
        if log_d not in cache:
            try:
                value = float(epsilon_of(math.exp(log_d)))
            except Exception:  # noqa: BLE001 - no eps reported at this delta: no statement
                value = math.inf
            cache[log_d] = value if not math.isnan(value) else math.inf
        return cache[log_d]

    ladder = np.linspace(math.log(_DELTA_FLOOR), 0.0, round(-math.log10(_DELTA_FLOOR)) + 1)
    ladder[-1] = math.log1p(-1e-12)

    def one(eps: float) -> float:
        ok = [i for i, log_d in enumerate(ladder) if eps_at(float(log_d)) <= eps]
        if not ok:
            return 1.0
        i = ok[0]
        if i == 0:
            return _DELTA_FLOOR
        lo, hi = float(ladder[i - 1]), float(ladder[i])
        while hi - lo > _INVERSION_STEP:
            mid = 0.5 * (hi + lo)
            if eps_at(mid) <= eps:
                hi = mid
            else:
                lo = mid
        return math.exp(hi)

    def delta(eps: np.ndarray) -> np.ndarray:
        return np.asarray([one(float(e)) for e in eps.ravel()]).reshape(eps.shape)

    return delta


# --------------------------------------------------------------------------------------- opacus
@contextlib.contextmanager
def _quiet_logging() -> Iterator[None]:
    """Silence warnings logged while a library computes (Opacus logs every Renyi order whose
    series does not converge); the previous logging state is restored afterwards."""
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(previous)


def _opacus_history(name: str, mechanism: Any) -> list[tuple[float, float, int]]:
    atoms, relation = _steps(mechanism)
    if relation != "add_remove":
        raise _unsupported(name, _accounted(mechanism), "Opacus accounts for add/remove only")

    def step(atom: Mechanism) -> tuple[float, float] | None:
        if isinstance(atom, Gaussian):
            return atom.sigma / atom.sensitivity, 1.0
        if isinstance(atom, PoissonSubsampled) and isinstance(atom.base, Gaussian):
            return atom.base.sigma / atom.sensitivity, atom.rate
        return None

    why = "Opacus accounts for (subsampled) Gaussian steps only"
    steps, counts = _translate(name, atoms, step, why)
    return [(sigma, rate, runs) for (sigma, rate), runs in zip(steps, counts, strict=True)]


def _opacus(kind: str) -> Callable[..., Claim]:
    name = f"opacus:{kind}"

    def build(mechanism: Any, **options: Any) -> Claim:
        import warnings

        from opacus.accountants import GaussianAccountant, PRVAccountant, RDPAccountant

        history = _opacus_history(name, mechanism)
        if kind == "gdp" and len(history) != 1:
            raise _unsupported(
                name, _accounted(mechanism), "the GDP accountant needs one constant kind of step"
            )
        cls = {"rdp": RDPAccountant, "prv": PRVAccountant, "gdp": GaussianAccountant}[kind]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            accountant = cls()
        accountant.history = list(history)
        if kind == "rdp":
            # RDPAccountant.get_epsilon recomputes the Renyi curve at every call; it depends on
            # the steps only, so compute it once and convert with Opacus's own conversion.
            from opacus.accountants.analysis import rdp as opacus_rdp

            orders = options.get("alphas") or RDPAccountant.DEFAULT_ALPHAS
            with _quiet_logging():
                curve = sum(
                    opacus_rdp.compute_rdp(q=q, noise_multiplier=s, steps=n, orders=orders)
                    for s, q, n in history
                )

            def epsilon(d: float) -> float:
                with _quiet_logging():
                    spent = opacus_rdp.get_privacy_spent(orders=orders, rdp=curve, delta=d)
                return float(spent[0])

        else:

            def epsilon(d: float) -> float:
                with warnings.catch_warnings(), _quiet_logging():
                    warnings.simplefilter("ignore")
                    return float(accountant.get_epsilon(d, **options))

        return Claim(
            _delta_from_epsilon(epsilon),
            name=name,
            kind="approximation" if kind == "gdp" else "bound",
            epsilon_fn=epsilon,
        )

    return build


# --------------------------------------------------------------------------------------- autodp
def _autodp(mechanism: Any) -> Claim:
    from autodp import mechanism_zoo, transformer_zoo

    def part(atom: Mechanism) -> Any:
        if isinstance(atom, Gaussian):
            return mechanism_zoo.GaussianMechanism(sigma=atom.sigma / atom.sensitivity)
        if isinstance(atom, Laplace):
            return mechanism_zoo.LaplaceMechanism(b=atom.scale / atom.sensitivity)
        if isinstance(atom, RandomizedResponse) and atom.k == 2:
            return mechanism_zoo.RandresponseMechanism(p=atom.p_keep)
        if isinstance(atom, PoissonSubsampled) and isinstance(atom.base, Gaussian):
            base = mechanism_zoo.GaussianMechanism(sigma=atom.base.sigma / atom.sensitivity)
            return transformer_zoo.AmplificationBySampling(PoissonSampling=True)(base, atom.rate)
        return None

    atoms, _ = _steps(mechanism)
    parts, counts = _translate("autodp", atoms, part, "no matching autodp mechanism")
    if len(parts) == 1 and counts[0] == 1:
        composed = parts[0]
    else:
        composed = transformer_zoo.Composition()(parts, counts)

    def epsilon(d: float) -> float:
        # autodp prints its complaints about out-of-range arguments; keep stdout clean.
        with contextlib.redirect_stdout(io.StringIO()):
            return float(composed.get_approxDP(d))

    return Claim(_delta_from_epsilon(epsilon), name="autodp", kind="bound", epsilon_fn=epsilon)


_BUILDERS: dict[str, Callable[..., Claim]] = {
    "dpaudit:pld": _dpaudit_pld,
    "dp_accounting:pld": _dp_accounting("pld"),
    "dp_accounting:rdp": _dp_accounting("rdp"),
    "prv_accountant": _prv_accountant,
    "opacus:rdp": _opacus("rdp"),
    "opacus:prv": _opacus("prv"),
    "opacus:gdp": _opacus("gdp"),
    "autodp": _autodp,
}


def claim(name: str, mechanism: Any, **options: Any) -> Claim:
    """What accountant ``name`` (one of :data:`NAMES`) claims ``delta(eps)`` is for ``mechanism``.

    ``options`` go to the accountant: ``value_discretization_interval`` (``dp_accounting:pld``,
    default ``1e-4``), ``eps_error`` and ``delta_error`` (``prv_accountant``, defaults ``0.01`` and
    ``1e-11``; ``opacus:prv``, Opacus's own defaults). Raises :class:`AccountantUnavailable` when
    the package is missing or the accountant does not cover the mechanism.
    """
    package = _package(name)
    if package is not None and importlib.util.find_spec(package) is None:
        raise AccountantUnavailable(
            f"{name} needs the package {package!r}, which is not installed", "not installed"
        )
    return _BUILDERS[name](mechanism, **options)
