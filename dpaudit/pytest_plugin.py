"""The pytest plugin of dpaudit: the ``dp_audit`` fixture and marker.

Installed with dpaudit (entry point ``pytest11``), so any test suite can write::

    import pytest
    from dpaudit.bounds import approx_dp

    @pytest.mark.dp_audit(max_seconds=20)
    def test_laplace_release_is_1_dp(dp_audit):
        dp_audit(my_release, approx_dp(1.0, 0.0), pairs=[([0.0], [1.0])])

``dp_audit(mechanism, claim, **options)`` is :func:`dpaudit.testing.assert_private`; its options
come, by increasing precedence, from the command line (``--dp-audit-false-alarm``,
``--dp-audit-max-seconds``, ``--dp-audit-seed``, ``--dp-audit-replay``), from the test's
``dp_audit`` marker and from the call; except the time budget: the command line's
``--dp-audit-max-seconds`` raises a smaller budget of a marker or a call (never lowers one), so
that a nightly job can give every check more time than its marker states. Replay files go to
``--dp-audit-replay``, by default ``.dpaudit-replay`` in the session's root directory. This module
imports nothing of dpaudit until the fixture is used, so a test session that never audits does
not pay for the import.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

__all__ = ["dp_audit", "effective_options", "pytest_addoption", "pytest_configure"]

#: Command-line options: (option, keyword of assert_private, type, help).
_OPTIONS = (
    ("--dp-audit-false-alarm", "false_alarm", float, "false-alarm rate of every dp_audit check"),
    (
        "--dp-audit-max-seconds",
        "max_seconds",
        float,
        "time budget of every dp_audit check; raises a marker's or a call's smaller budget",
    ),
    ("--dp-audit-seed", "seed", int, "root seed of every dp_audit check"),
    (
        "--dp-audit-replay",
        "replay",
        str,
        "directory of the replay files of failures found by a search "
        "(default: .dpaudit-replay in the session's root)",
    ),
)

#: Options that the command line raises rather than yields to: a larger budget always wins.
_BUDGETS = ("max_seconds",)


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add the ``--dp-audit-*`` options."""
    group = parser.getgroup("dpaudit", "privacy checks with dpaudit.testing.assert_private")
    for option, _, kind, text in _OPTIONS:
        group.addoption(option, type=kind, default=None, help=text)


def pytest_configure(config: pytest.Config) -> None:
    """Declare the ``dp_audit`` marker."""
    config.addinivalue_line(
        "markers",
        "dp_audit(**options): options of the dp_audit fixture's dpaudit.testing.assert_private",
    )


def effective_options(
    command_line: dict[str, Any], markers: list[dict[str, Any]], call: dict[str, Any]
) -> dict[str, Any]:
    """The options of one check: the call's over the markers' (the closest marker last) over
    the command line's, except a budget of :data:`_BUDGETS`, which is the larger of the command
    line's and the other (``None``, no budget, stays ``None``)."""
    options = dict(command_line)
    for marker in markers:
        options.update(marker)
    options.update(call)
    for key in _BUDGETS:
        given = command_line.get(key)
        if given is not None and options.get(key) is not None:
            options[key] = max(given, options[key])
    return options


@pytest.fixture
def dp_audit(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """``dp_audit(mechanism, claim, **options)``: :func:`dpaudit.testing.assert_private` with
    the command line's and the ``dp_audit`` marker's options (:func:`effective_options`)."""
    from dpaudit.testing import DEFAULT_REPLAY, assert_private

    command_line: dict[str, Any] = {"replay": str(request.config.rootpath / DEFAULT_REPLAY)}
    for option, keyword, _, _ in _OPTIONS:
        value = request.config.getoption(option)
        if value is not None:
            command_line[keyword] = value
    markers = []
    for marker in reversed(list(request.node.iter_markers("dp_audit"))):
        if marker.args:
            raise ValueError("the dp_audit marker takes keyword options only")
        markers.append(dict(marker.kwargs))

    def check(mechanism: Any, claim: Any, **options: Any) -> Any:
        return assert_private(mechanism, claim, **effective_options(command_line, markers, options))

    return check
