"""Libraries found through the ``dpaudit.libraries`` entry-point group: the example plugin of
``examples/dpaudit-plugin`` installed as a distribution on ``sys.path`` (its ``entry_points.txt``
written from its own ``pyproject.toml``) and found by ``importlib.metadata``, and broken plugins
refused in one line."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from dpaudit.cli import main
from dpaudit.libraries import ENTRY_POINT_GROUP, LIBRARIES, library, run_battery

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PLUGIN = Path(__file__).resolve().parents[2] / "examples" / "dpaudit-plugin"


def _install(site: Path, name: str, version: str, points: dict[str, str]) -> None:
    """A distribution ``name`` on ``site`` whose ``entry_points.txt`` lists ``points`` in the
    group of dpaudit's libraries (what ``pip install`` writes)."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    lines = [f"[{ENTRY_POINT_GROUP}]", *(f"{k} = {v}" for k, v in points.items())]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")


@pytest.fixture
def site(tmp_path, monkeypatch):
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    return folder


def test_the_builtin_libraries_register_through_the_entry_point_group():
    assert set(LIBRARIES) >= {
        "diffprivlib",
        "diffprivlib-models",
        "opendp",
        "python-dp",
        "pipeline-dp",
        "smartnoise-sql",
    }
    assert LIBRARIES["opendp"] == "dpaudit.libraries.opendp"


def test_the_example_plugin_is_found_audited_and_run_from_the_command_line(site, tmp_path, capsys):
    project = tomllib.loads((PLUGIN / "pyproject.toml").read_text())
    points = project["project"]["entry-points"][ENTRY_POINT_GROUP]
    assert points == {"toy-laplace": "dpaudit_toy_plugin"}
    shutil.copy(PLUGIN / "dpaudit_toy_plugin.py", site)
    _install(site, project["project"]["name"], project["project"]["version"], points)
    assert "toy-laplace" in LIBRARIES
    toy = library("toy-laplace")
    assert toy.version() == "0.1.0"
    # A correct Laplace sum claiming exactly its privacy: a false alarm has probability at most
    # 0.05 at any seed; this seed is fixed.
    battery = run_battery("toy-laplace", trials=500, quick=True, seed=2)
    assert not battery.refuted
    assert battery.provenance["seed"] == 2 and battery.provenance["seeded"] is True
    # One process: the plugin lives on a sys.path entry added to this process only, which worker
    # processes (started fresh, or reused from an earlier test) do not see; an installed plugin is
    # importable everywhere.
    out = str(tmp_path / "out")
    code = main(["library", "toy-laplace", "-o", out, "--trials", "300", "--n-jobs", "1"])
    assert code == 0
    assert "| `noisy_sum(epsilon=1, bounds=(0, 1))` |" in capsys.readouterr().out


def test_a_broken_plugin_is_one_line_naming_its_entry_point(site, tmp_path, capsys):
    (site / "dpaudit_empty_plugin.py").write_text("VALUE = 1\n")
    _install(
        site,
        "broken-plugins",
        "0.1",
        {
            "missing": "dpaudit_no_such_plugin_module",
            "empty": "dpaudit_empty_plugin",
            "misnamed": "dpaudit.libraries.opendp",
        },
    )
    with pytest.raises(ValueError) as missing:
        library("missing")
    assert str(missing.value) == (
        "library 'missing': its entry point missing = 'dpaudit_no_such_plugin_module' of "
        "broken-plugins 0.1 failed to load (ModuleNotFoundError: No module named "
        "'dpaudit_no_such_plugin_module')"
    )
    with pytest.raises(ValueError, match=r"^library 'empty': .* exports no LIBRARY"):
        library("empty")
    with pytest.raises(ValueError, match="exports the library 'opendp'"):
        library("misnamed")
    assert library("opendp").name == "opendp"  # the others still load
    assert main(["library", "missing", "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("dpaudit: error: library 'missing': its entry")
    assert not (tmp_path / "out").exists()


def test_a_name_registered_twice_is_refused(site):
    _install(site, "rival", "1.0", {"opendp": "dpaudit_rival_opendp"})
    with pytest.raises(ValueError, match="library 'opendp' is registered twice: entry point"):
        library("opendp")
