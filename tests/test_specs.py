"""Spec files: what they build, their defaults, and how every mistake is refused."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from dpaudit import attacks, mechanisms, specs
from dpaudit.mechanisms.base import METHOD_KINDS, NeighbouringPair

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

BRIEF_SPEC = """
[[audit]]
name = "laplace-overclaimed"
mechanism = { kind = "laplace", scale = 0.5 }
attack = { kind = "likelihood_ratio" }
claim = { kind = "approx_dp", eps = 1.0, delta = 0.0 }
trials = 100_000          # per dataset
seed = 1
confidence = 0.95
deltas = [0.0, 1e-5]
"""

G1 = '{ kind = "gaussian", sigma = 1 }'
ALPHA = np.array([0.0, 1e-6, 1e-3, 0.01, 0.1, 0.3, 0.5, 0.8, 1.0])


def one(text: str) -> specs.AuditSpec:
    (spec,) = specs.loads(text, source="t.toml")
    return spec


def minimal(extra: str = "", mechanism: str = '{ kind = "gaussian", sigma = 1.0 }') -> str:
    return f'[[audit]]\nname = "a"\nmechanism = {mechanism}\ntrials = 10\n{extra}\n'


def test_n_jobs_defaults_to_the_automatic_choice_and_keeps_explicit_values() -> None:
    """Absent: ``None``, which lets :func:`dpaudit.audit` pick the worker count."""
    assert one(minimal()).n_jobs is None
    assert one(minimal("n_jobs = 2")).n_jobs == 2
    assert one(minimal("n_jobs = -1")).n_jobs == -1
    assert one(minimal()).with_overrides(n_jobs=1).n_jobs == 1


def test_brief_spec_builds_what_it_says() -> None:
    spec = one(BRIEF_SPEC)
    assert spec.name == "laplace-overclaimed"
    assert isinstance(spec.mechanism, mechanisms.Laplace)
    assert spec.mechanism.scale == 0.5
    assert spec.mechanism.sensitivity == 1.0
    assert isinstance(spec.attack, attacks.LikelihoodRatio)
    assert (spec.trials, spec.seed, spec.confidence) == (100_000, 1, 0.95)
    assert spec.deltas == (0.0, 1e-5)
    assert spec.strategy == "holdout" and spec.n_jobs is None and spec.expect == "consistent"
    assert spec.claim_table() == {"kind": "approx_dp", "eps": 1.0, "delta": 0.0}
    # Default pair: the mechanism's worst case.
    worst = spec.mechanism.worst_case_pair()
    np.testing.assert_array_equal(spec.pair.d, worst.d)
    np.testing.assert_array_equal(spec.pair.d_prime, worst.d_prime)
    assert spec.pair.relation == worst.relation


def test_approx_dp_claim_is_the_wasserman_zhou_curve() -> None:
    # f_{eps,delta}(a) = max(0, 1 - delta - e^eps a, e^-eps (1 - delta - a))  (DRS Prop. 3)
    spec = one(minimal('claim = { kind = "approx_dp", eps = 1.0, delta = 0.01 }'))
    e = np.e
    expected = np.maximum.reduce([0 * ALPHA, 1 - 0.01 - e * ALPHA, (1 - 0.01 - ALPHA) / e])
    np.testing.assert_allclose(spec.claim(ALPHA), expected, atol=1e-12)


def test_gdp_claim_is_the_gaussian_tradeoff() -> None:
    # G_mu(a) = Phi(Phi^-1(1 - a) - mu)  (DRS Def. 4)
    spec = one(minimal('claim = { kind = "gdp", mu = 0.7 }'))
    a = ALPHA[1:-1]
    expected = stats.norm.cdf(stats.norm.ppf(1 - a) - 0.7)
    np.testing.assert_allclose(spec.claim(a), expected, rtol=1e-9, atol=1e-12)


def test_claims_as_libraries_state_them_carry_their_own_conversion() -> None:
    """zCDP, approximate zCDP, RDP and pure-DP claims: each curve's eps at delta is the
    conversion of the guarantee itself (checked against a direct minimisation over orders of
    Canonne, Kamath & Steinke 2020, Prop. 12), never a conversion through another notion."""
    lam = 1 + np.geomspace(1e-6, 1e4, 200_001)

    def cks_delta(rdp_eps: np.ndarray, eps: float) -> float:
        return float(np.exp(((lam - 1) * (rdp_eps - eps + np.log1p(-1 / lam)) - np.log(lam)).min()))

    zcdp = one(minimal('claim = { kind = "zcdp", rho = 0.5 }')).claim
    assert zcdp.delta(2.0) == pytest.approx(cks_delta(0.5 * lam, 2.0), rel=1e-6)
    approx = one(minimal('claim = { kind = "zcdp", rho = 0.5, xi = 0.1, delta = 1e-4 }')).claim
    expected = 1e-4 + (1 - 1e-4) * cks_delta(0.1 + 0.5 * lam, 2.0)
    assert approx.delta(2.0) == pytest.approx(expected, rel=1e-6)
    rdp = one(minimal('claim = { kind = "rdp", orders = [2.0, 8.0], eps = [1.0, 4.0] }')).claim
    by_order = [math.exp((o - 1) * (e - 3.0 + math.log1p(-1 / o))) / o for o, e in [(2, 1), (8, 4)]]
    assert rdp.delta(3.0) == pytest.approx(min(by_order), rel=1e-12)
    pure = one(minimal('claim = { kind = "pure_dp", eps = 1.0 }')).claim
    assert pure.delta(1.0) == 0.0
    assert pure.delta(0.0) == pytest.approx((math.e - 1) / (math.e + 1), rel=1e-14)
    # the zCDP claim of a Gaussian is implied by the Gaussian: never above its exact curve
    exact = stats.norm.cdf(stats.norm.ppf(1 - ALPHA) - 1.0)
    assert (zcdp(ALPHA) <= exact + 1e-12).all()


def test_default_claim_is_the_mechanisms_tightest_valid_theory() -> None:
    spec = one(minimal())
    method = specs.default_claim_method(spec.mechanism)
    assert method == spec.mechanism.theory_methods[0]
    assert METHOD_KINDS[method] in ("exact", "bound")
    np.testing.assert_allclose(spec.claim(ALPHA), spec.mechanism.tradeoff(method)(ALPHA))
    assert spec.claim_table() == {"kind": "accountant", "method": method}


def test_accountant_claim_with_named_method() -> None:
    mech = mechanisms.Gaussian(1.0)
    method = mech.theory_methods[-1]
    spec = one(minimal(f'claim = {{ kind = "accountant", method = "{method}" }}'))
    np.testing.assert_allclose(spec.claim(ALPHA), mech.tradeoff(method)(ALPHA))


def test_nested_mechanisms() -> None:
    spec = one(
        minimal(
            mechanism='{ kind = "poisson_subsampled", rate = 0.25, '
            'base = { kind = "gaussian", sigma = 2.0, sensitivity = 0.5 } }'
        )
    )
    assert isinstance(spec.mechanism, mechanisms.PoissonSubsampled)
    assert spec.mechanism.rate == 0.25
    assert spec.mechanism.params()["base"]["sigma"] == 2.0
    assert spec.mechanism.params()["base"]["sensitivity"] == 0.5

    times = one(
        minimal(
            mechanism='{ kind = "composed", times = 3, base = { kind = "laplace", scale = 1 } }'
        )
    )
    assert isinstance(times.mechanism, mechanisms.Composed)
    components = one(
        minimal(
            mechanism='{ kind = "composed", components = [{ kind = "laplace", scale = 1 }, '
            '{ kind = "laplace", scale = 1 }, { kind = "laplace", scale = 1 }] }'
        )
    )
    # Three equal Laplace mechanisms: the same composition written two ways.
    assert times.mechanism.epsilon(1e-5) == pytest.approx(components.mechanism.epsilon(1e-5))


def test_explicit_pair_is_used_in_the_written_order() -> None:
    spec = one(minimal("pair = { d = [0.0, 0.5], d_prime = [0.0] }"))
    assert isinstance(spec.pair, NeighbouringPair)
    np.testing.assert_array_equal(spec.pair.d, [0.0, 0.5])
    np.testing.assert_array_equal(spec.pair.d_prime, [0.0])
    assert spec.pair.relation == "add_remove"


def test_integers_written_as_whole_floats_are_accepted() -> None:
    spec = one('[[audit]]\nname = "a"\nmechanism = { kind = "gaussian", sigma = 1 }\ntrials = 1e4')
    assert spec.trials == 10_000 and isinstance(spec.trials, int)
    assert spec.mechanism.sigma == 1.0


def test_several_audits_keep_their_order() -> None:
    text = minimal() + minimal().replace('name = "a"', 'name = "b"')
    assert [s.name for s in specs.loads(text)] == ["a", "b"]


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        ("[[audit]\nname = 1", ["invalid TOML", "line 1"]),
        ("title = 'x'", ["title", "unknown top-level key"]),
        ("[audit]\nname = 'x'", ["[[audit]]"]),
        ("", ["no [[audit]] table"]),
        (
            minimal(mechanism='{ kind = "gausian", sigma = 1 }'),
            ["mechanism.kind", "gausian", "gaussian"],
        ),
        (minimal(mechanism="{ sigma = 1 }"), ["mechanism.kind", "missing"]),
        (
            minimal(mechanism='{ kind = "gaussian", sigm = 1 }'),
            ["mechanism.sigm", "unknown key", "sigma"],
        ),
        (minimal(mechanism='{ kind = "gaussian" }'), ["mechanism.sigma", "missing", "number"]),
        (
            minimal(mechanism='{ kind = "gaussian", sigma = "1" }'),
            ["mechanism.sigma", "expected a number", "string"],
        ),
        (
            minimal(mechanism='{ kind = "gaussian", sigma = true }'),
            ["mechanism.sigma", "expected a number", "boolean"],
        ),
        (minimal(mechanism='{ kind = "gaussian", sigma = -1.0 }'), ["sigma", "(0, inf)", "-1.0"]),
        (minimal(mechanism='{ kind = "laplace", scale = 0 }'), ["scale", "(0, inf)"]),
        (
            minimal(mechanism='{ kind = "randomized_response", eps = 1, k = 1.5 }'),
            ["mechanism.k", "integer"],
        ),
        (minimal(mechanism='"gaussian"'), ["mechanism", "expected a table"]),
        (
            minimal(mechanism='{ kind = "gaussian", sigma = 1' + "0" * 400 + " }"),
            ["mechanism.sigma", "(integer) is beyond the float range"],
        ),
        (
            minimal("pair = { d = [0.0], d_prime = [1" + "0" * 400 + "] }"),
            ["pair.d_prime", "beyond the float range"],
        ),
        (
            minimal(
                mechanism='{ kind = "poisson_subsampled", rate = 0.1, '
                'base = { kind = "gaussian", sigma = -2 } }'
            ),
            ["mechanism.base", "sigma", "(0, inf)"],
        ),
        (
            minimal(mechanism=f'{{ kind = "poisson_subsampled", rate = 1.5, base = {G1} }}'),
            ["rate"],
        ),
        (
            minimal(mechanism='{ kind = "composed", base = { kind = "gaussian", sigma = 1 } }'),
            ["composed", "times"],
        ),
        (
            minimal(
                mechanism=f'{{ kind = "composed", times = 2, base = {G1}, components = [{G1}] }}'
            ),
            ["not both"],
        ),
        (
            minimal(mechanism=f'{{ kind = "composed", times = 0, base = {G1} }}'),
            ["times"],
        ),
        (
            '[[audit]]\nname = "a"\nmechanism = { kind = "gaussian", sigma = 1.0 }\ntrials = 0',
            ["trials", "[1, inf)", "0"],
        ),
        (
            '[[audit]]\nname = "a"\nmechanism = { kind = "gaussian", sigma = 1.0 }\ntrials = 2.5',
            ["trials", "integer", "2.5"],
        ),
        (
            '[[audit]]\nname = "a"\nmechanism = { kind = "gaussian", sigma = 1.0 }',
            ["trials", "missing"],
        ),
        (
            '[[audit]]\nmechanism = { kind = "gaussian", sigma = 1.0 }\ntrials = 5',
            ["name", "missing"],
        ),
        ('[[audit]]\nname = "a"\ntrials = 5', ["mechanism", "missing"]),
        (minimal("sigma = 1"), ["sigma", "unknown key", "mechanism"]),
        (minimal("seed = -1"), ["seed", "[0, inf)"]),
        (minimal("confidence = 1.0"), ["confidence", "(0, 1)"]),
        (minimal("confidence = 0"), ["confidence", "(0, 1)"]),
        (minimal("deltas = [1e-5, 1.0]"), ["deltas[1]", "[0, 1)"]),
        (minimal("deltas = []"), ["deltas", "non-empty array"]),
        (minimal("deltas = 1e-5"), ["deltas", "non-empty array"]),
        (
            minimal("deltas = [" + ", ".join(["1e-5"] * 3000) + "]"),
            ["deltas", "has 3,000 values; at most 64"],
        ),
        (minimal("n_jobs = 0"), ["n_jobs", "-1"]),
        (minimal("n_jobs = 9223372036854775807"), ["n_jobs", "at most", "worker processes"]),
        (minimal("selection_trials = 0"), ["selection_trials", "[2, inf)"]),
        (minimal('expect = "fine"'), ["expect", "consistent", "violated"]),
        (minimal('strategy = "best"'), ["strategy", "holdout", "best"]),
        (minimal('claim = { kind = "approx_dp" }'), ["claim.eps", "missing"]),
        (minimal('claim = { kind = "approx_dp", eps = 1, delta = 2 }'), ["delta"]),
        (minimal('claim = { kind = "gdp", mu = -1 }'), ["mu"]),
        (minimal('claim = { kind = "renyi", rho = 1 }'), ["claim.kind", "renyi", "zcdp"]),
        (minimal('claim = { kind = "zcdp", rho = -1 }'), ["claim (zcdp)", "rho"]),
        (minimal('claim = { kind = "zcdp", rho = 1, delta = 1 }'), ["claim (zcdp)", "delta"]),
        (minimal('claim = { kind = "zcdp", rho = 1, xi = -1 }'), ["claim (zcdp)", "xi"]),
        (
            minimal('claim = { kind = "rdp", orders = [2, 3], eps = [1] }'),
            ["claim (rdp)", "one value per order"],
        ),
        (minimal('claim = { kind = "rdp", orders = [1], eps = [1] }'), ["claim (rdp)", "orders"]),
        (
            minimal(
                'claim = { kind = "rdp", orders = ['
                + ", ".join(str(2 + i) for i in range(3000))
                + "], eps = ["
                + ", ".join(["1.0"] * 3000)
                + "] }"
            ),
            ["claim (rdp)", "orders has 3,000 values; at most 256"],
        ),
        (minimal('claim = { kind = "pure_dp", eps = -1 }'), ["claim (pure_dp)", "eps"]),
        (
            minimal('claim = { kind = "accountant", method = "moments" }'),
            ["moments", "valid methods"],
        ),
        (minimal('attack = { kind = "neural" }'), ["attack.kind", "neural", "likelihood_ratio"]),
        (
            minimal('attack = { kind = "likelihood_ratio", depth = 3 }'),
            ["attack.depth", "unknown key"],
        ),
        (minimal("pair = { d = [0.0] }"), ["pair.d_prime", "missing"]),
        (minimal('pair = { d = [0.0], d_prime = [1.0], relation = "swap" }'), ["relation", "swap"]),
        (
            minimal("pair = { d = [0.0], d_prime = [1.0, 2.0, 3.0] }"),
            ["add_remove", "differ by one"],
        ),
        (minimal() + minimal(), ["audit 2", "name", "unique"]),
    ],
)
def test_mistakes_are_refused_with_file_key_and_expectation(text: str, needles: list[str]) -> None:
    with pytest.raises(specs.SpecError) as info:
        specs.loads(text, source="bad.toml")
    message = str(info.value)
    assert message.startswith("bad.toml: ")
    assert "\n" not in message
    for needle in needles:
        assert needle in message, (needle, message)


def test_missing_file_is_a_spec_error(tmp_path: Path) -> None:
    with pytest.raises(specs.SpecError, match="spec file not found"):
        specs.load(tmp_path / "nope.toml")


def test_load_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "neg.toml"
    path.write_text(minimal(mechanism='{ kind = "gaussian", sigma = -1 }'))
    with pytest.raises(specs.SpecError, match=r"neg\.toml: audit 1 \(a\): .*sigma"):
        specs.load(path)


def test_overrides_replace_settings_and_the_recorded_table() -> None:
    spec = one(BRIEF_SPEC)
    changed = spec.with_overrides(trials=500, seed=9, n_jobs=2)
    assert (changed.trials, changed.seed, changed.n_jobs) == (500, 9, 2)
    assert (changed.table["trials"], changed.table["seed"], changed.table["n_jobs"]) == (500, 9, 2)
    assert spec.trials == 100_000  # the original is unchanged
    assert spec.with_overrides() is spec
    with pytest.raises(ValueError, match="trials"):
        spec.with_overrides(trials=0)
    with pytest.raises(ValueError, match="n_jobs"):
        spec.with_overrides(n_jobs=0)


def test_registry_is_extensible(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(specs, "MECHANISM_KINDS", dict(specs.MECHANISM_KINDS))
    specs.register_mechanism(
        "wide_gaussian",
        lambda sigma: mechanisms.Gaussian(10 * sigma),
        {"sigma": specs.Param("number")},
        "a Gaussian with ten times the noise",
    )
    spec = one(minimal(mechanism='{ kind = "wide_gaussian", sigma = 0.3 }'))
    assert spec.mechanism.sigma == pytest.approx(3.0)
    with pytest.raises(ValueError, match="already registered"):
        specs.register_mechanism("wide_gaussian", lambda sigma: None, {})
    with pytest.raises(ValueError, match="lower-case identifier"):
        specs.register_mechanism("Wide Gaussian", lambda: None, {})
    with pytest.raises(ValueError, match="expected"):
        specs.register_mechanism("other", lambda x: None, {"x": specs.Param("complex")})


def test_build_mechanism_from_a_table() -> None:
    mech = specs.build_mechanism({"kind": "laplace", "scale": 2.0})
    assert isinstance(mech, mechanisms.Laplace) and mech.scale == 2.0
    with pytest.raises(specs.SpecError, match="scale"):
        specs.build_mechanism({"kind": "laplace", "scale": -2.0})


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.name)
def test_examples_load(path: Path) -> None:
    accountant = "[[accountant_audit]]" in path.read_text()
    load = specs.load_accountant_audits if accountant else specs.load
    try:
        audits = load(path)
    except specs.SpecError as err:
        if "needs the optional package" in str(err):
            pytest.skip(str(err))
        raise
    assert audits and all(a.trials >= 1 for a in audits)


def test_suite_battery() -> None:
    audits = specs.suite()
    names = [a.name for a in audits]
    assert len(set(names)) == len(names)
    kinds = {type(a.mechanism).__name__ for a in audits}
    assert {"Gaussian", "Laplace", "RandomizedResponse", "PoissonSubsampled", "Composed"} <= kinds
    flawed = [a for a in audits if a.expect == "violated"]
    assert [a.name for a in flawed] == ["laplace-overclaimed"]
    # The over-claimed audit really is wrong: its mechanism's exact epsilon exceeds the claim.
    (bad,) = flawed
    assert bad.mechanism.epsilon(0.0) > bad.claim.epsilon(0.0) + 0.5


# --- [[accountant_audit]]: the verdicts it expects ------------------------------------------------
_ACCOUNTANT = (
    '[[accountant_audit]]\nname = "g"\nmechanism = { kind = "gaussian", sigma = 1.0 }\n'
    'accountants = ["dpaudit:pld", "dp_accounting:rdp"]\ntrials = 100\n'
)


def test_the_composed_randomized_response_example_expects_two_refutations_and_says_why() -> None:
    (audit,) = specs.load_accountant_audits(EXAMPLES / "accountant-rr-composed.toml")
    assert set(audit.expect) == {"dp_accounting:pld", "prv_accountant"}
    assert all(e["verdict"] == "violated" for e in audit.expect.values())
    assert "SelfComposedDpEvent" in audit.expect["dp_accounting:pld"]["reason"]
    assert "domain" in audit.expect["prv_accountant"]["reason"]


def _accountant_audits(tmp_path: Path, text: str) -> list:
    path = tmp_path / "accountants.toml"
    path.write_text(text, encoding="utf-8")
    return specs.load_accountant_audits(path)


def test_an_accountant_audit_expects_a_verdict_with_its_reason(tmp_path: Path) -> None:
    expect = '{ "dp_accounting:rdp" = { verdict = "violated", reason = "x  y" } }'
    text = _ACCOUNTANT + f"expect = {expect}\n"
    (audit,) = _accountant_audits(tmp_path, text)
    assert audit.expect == {"dp_accounting:rdp": {"verdict": "violated", "reason": "x y"}}
    (plain,) = _accountant_audits(tmp_path, _ACCOUNTANT)
    assert plain.expect == {}


@pytest.mark.parametrize(
    ("expect", "message"),
    [
        ('{ "autodp" = { verdict = "violated", reason = "x" } }', "'autodp' is not one of this"),
        ('{ "dpaudit:pld" = "violated" }', 'expect."dpaudit:pld": expected a table { verdict'),
        ('{ "dpaudit:pld" = { verdict = "no", reason = "x" } }', ".verdict must be one of"),
        ('{ "dpaudit:pld" = { verdict = "violated" } }', '"dpaudit:pld".reason: missing'),
        ('{ "dpaudit:pld" = { verdict = "violated", reason = " " } }', "say why the verdict"),
        ('"violated"', "expect: expected a table"),
    ],
)
def test_a_wrong_expectation_of_an_accountant_audit_is_one_line(
    tmp_path: Path, expect: str, message: str
) -> None:
    with pytest.raises(specs.SpecError) as err:
        _accountant_audits(tmp_path, _ACCOUNTANT + f"expect = {expect}\n")
    assert message in str(err.value) and "\n" not in str(err.value)


# --- black boxes: where the pair comes from, datasets read from files ---------------------------
_RELEASE = "tests.mechanisms.test_blackbox:noisy_sum"


def _blackbox(keys: str = "", extra: str = "") -> str:
    mechanism = f'{{ kind = "blackbox", callable = "{_RELEASE}"{keys} }}'
    return minimal(extra, mechanism=mechanism)


def test_a_blackbox_without_dataset_takes_the_audits_pair() -> None:
    spec = one(_blackbox(extra='pair = { d = [0.0], d_prime = [1.0], relation = "replace_one" }'))
    assert isinstance(spec.mechanism, mechanisms.BlackBox) and not spec.mechanism.has_pair
    assert spec.pair == NeighbouringPair(np.array([0.0]), np.array([1.0]), "replace_one")


def test_a_blackbox_with_no_pair_anywhere_names_the_keys_that_give_one() -> None:
    with pytest.raises(specs.SpecError) as err:
        one(_blackbox())
    assert str(err.value) == (
        "t.toml: audit 1 (a): pair: missing: a blackbox mechanism has no pair of its own; give "
        "the audit pair = { d = ..., d_prime = ... }, or the mechanism dataset and neighbour"
    )
    with pytest.raises(specs.SpecError, match=r"mechanism \(blackbox\): neighbour is missing"):
        one(_blackbox(", dataset = [0.0]"))


#: Values whose last bits a text format loses unless it writes 17 significant digits.
EXACT = np.array(
    [
        0.1 + 0.2,
        0.1,
        1 / 3,
        np.nextafter(1.0, 2.0),
        5e-324,
        2.2250738585072014e-308 / 3,
        -1e-310,
        1e308,
        -np.finfo(float).max,
        -0.0,
        2.0**53 + 2,
    ]
)


def _exact_values(seed: int, n: int = 400) -> np.ndarray:
    rng = np.random.default_rng(seed)
    random = rng.standard_normal(n) * 10.0 ** rng.integers(-300, 300, n)
    bits = rng.integers(0, 2**63 - 1, n, dtype=np.int64).view(np.float64)
    return np.concatenate([EXACT, random, bits[np.isfinite(bits)]])


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and bytes(a.data) == bytes(b.data)


def _write_csv(path: Path, values: np.ndarray, writer: str) -> None:
    if writer == "repr":
        rows = values.reshape(values.shape[0], -1)
        path.write_text("".join(",".join(repr(float(v)) for v in r) + "\n" for r in rows))
    else:
        np.savetxt(path, values, fmt="%.17g", delimiter=",", header="written by numpy")


@pytest.mark.parametrize("writer", ["npy", "repr", "%.17g"])
def test_datasets_read_from_files_come_back_bit_for_bit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writer: str
) -> None:
    d = _exact_values(1)
    d_prime = d[::-1].copy()
    folder = tmp_path / "specs"
    folder.mkdir()
    for name, values in (("d", d), ("d_prime", d_prime)):
        if writer == "npy":
            np.save(folder / f"{name}.npy", values)
        else:
            _write_csv(folder / f"{name}.csv", values, writer)
    suffix = "npy" if writer == "npy" else "csv"
    spec_file = folder / "spec.toml"
    spec_file.write_text(
        _blackbox(f', dataset = "d.{suffix}", neighbour = "d_prime.{suffix}"')
        + f'\n[[audit]]\nname = "b"\nmechanism = {{ kind = "blackbox", callable = "{_RELEASE}" }}'
        f'\ntrials = 10\npair = {{ d = "d.{suffix}", d_prime = "d_prime.{suffix}", '
        'relation = "replace_one" }\n'
    )
    monkeypatch.chdir(tmp_path)  # paths are the spec's folder's, not the working directory's
    from_mechanism, from_pair = specs.load(spec_file)
    for spec in (from_mechanism, from_pair):
        assert _same_bits(spec.pair.d, d) and _same_bits(spec.pair.d_prime, d_prime)
    assert from_mechanism.table["mechanism"]["dataset"] == f"d.{suffix}"


def test_csv_rows_are_records_and_npy_keeps_its_dtype(tmp_path: Path) -> None:
    records = _exact_values(3, n=97).reshape(-1, 3)
    _write_csv(tmp_path / "records.csv", records, "repr")
    assert _same_bits(specs.read_dataset_file(tmp_path / "records.csv"), records)
    (tmp_path / "empty.csv").write_text("# no records\n\n")
    assert specs.read_dataset_file(tmp_path / "empty.csv").shape == (0,)
    counts = np.array([2**62 + 1, -3], dtype=np.int64)
    np.save(tmp_path / "counts.npy", counts)
    assert _same_bits(specs.read_dataset_file(tmp_path / "counts.npy"), counts)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("absent.csv", None, "dataset file not found"),
        ("d.txt", "1.0\n", "unknown file type '.txt'; expected .npy or .csv"),
        ("d.csv", "1.0\n2.0\nabc\n", "line 3: 'abc' is not a number"),
        ("d.csv", "1.0,2.0\n3.0\n", "line 2 has 1 values, the lines before it 2"),
        ("d.csv", b"\xff\xfe\n", "cannot read the dataset file"),
        ("d.npy", "not numpy", "not a .npy array of numbers"),
        ("d.npy", np.array(["a", "b"]), "holds <U1 values, not real numbers"),
        ("d.npy", np.array([1.0, None], dtype=object), "not a .npy array of numbers"),
    ],
)
def test_a_bad_dataset_file_is_one_line_naming_spec_key_and_file(
    tmp_path: Path, name: str, content: object, message: str
) -> None:
    path = tmp_path / name
    if isinstance(content, np.ndarray):
        np.save(path, content, allow_pickle=True)
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    spec_file = tmp_path / "spec.toml"
    spec_file.write_text(_blackbox(f', dataset = "{name}", neighbour = [1.0]'))
    with pytest.raises(specs.SpecError) as err:
        specs.load(spec_file)
    text = str(err.value)
    assert text.startswith(f"{spec_file}: audit 1 (a): mechanism.dataset: {path}: ")
    assert message in text and "\n" not in text


def test_an_accountant_audit_reads_its_pair_files_beside_the_spec(tmp_path: Path) -> None:
    np.save(tmp_path / "d.npy", np.array([0.0]))
    (tmp_path / "d_prime.csv").write_text("0.0\n1.0\n")
    text = _ACCOUNTANT + 'pair = { d = "d.npy", d_prime = "d_prime.csv" }\n'
    (audit,) = _accountant_audits(tmp_path, text)
    assert audit.pair.d.tolist() == [0.0] and audit.pair.d_prime.tolist() == [0.0, 1.0]


def test_a_blackbox_spec_states_the_most_calls_before_it_runs() -> None:
    spec = one(_blackbox(", dataset = [0.0], neighbour = [1.0]")).with_overrides(trials=300)
    assert spec.most_outputs() == 1_802
    assert spec.mechanism.cost(spec.most_outputs()) == (
        f"at most 1,802 calls into {_RELEASE} (one per output)"
    )
