"""The argument checks, at their previous path: they live in :mod:`dpaudit._core.validation`."""

from dpaudit._core.validation import (
    check_array_in_unit_interval,
    check_choice,
    check_eps_array,
    check_integer,
    check_nonnegative,
    check_positive,
    check_probability,
    check_real,
    scalar_like,
)

__all__ = [
    "check_real",
    "check_positive",
    "check_nonnegative",
    "check_probability",
    "check_integer",
    "check_choice",
    "check_array_in_unit_interval",
    "check_eps_array",
    "scalar_like",
]
