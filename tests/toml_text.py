"""TOML text for the fuzz tests, written independently of dpaudit's own TOML writer."""

from __future__ import annotations

import json
import math


class Raw:
    """TOML text inserted as is (e.g. nesting deeper than a recursive writer could go)."""

    def __init__(self, text: str) -> None:
        self.text = text


def toml_key(key: str) -> str:
    """A key as a TOML basic string."""
    return json.dumps(key)


def toml_value(value: object) -> str:
    """A TOML value (inline tables and arrays) for JSON-like Python values and :class:`Raw`."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        items = ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items())
        return "{ " + items + " }" if items else "{}"
    raise TypeError(type(value).__name__)


def toml_document(audits: list[dict]) -> str:
    """``[[audit]]`` tables with one ``key = value`` line per entry."""
    parts = []
    for table in audits:
        parts.append("[[audit]]")
        parts.extend(f"{toml_key(k)} = {toml_value(v)}" for k, v in table.items())
    return "\n".join(parts) + "\n"
