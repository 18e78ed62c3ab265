"""Turn the cross-reference roles of dpaudit's docstrings into links of the API reference.

The docstrings name other objects with roles such as
``:class:`~dpaudit.bounds.tradeoff.TradeoffCurve``` or ``:meth:`compose```, which read well as
plain text. While the API reference is built, this griffe extension rewrites each role into a
Markdown cross-reference when its target is a documented public object of dpaudit (looked up as
written, then relative to the enclosing class, module and packages), and into inline code
otherwise, so that no role is shown raw and no link points nowhere. It also turns the
reStructuredText literal-block marker ``::`` into a single colon.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(
    r":(?:class|func|meth|mod|data|attr|exc|obj):`(~?)([\w.]+)(?:\(\))?`"  # :role:`~target`
    r"|:(?:class|func|meth|mod|data|attr|exc|obj):`([^`<]+?)\s*<([\w.]+)>`"  # :role:`title <t>`
)

LITERAL = re.compile(r"(?<=\S)::\n\n")


def _lookup(root: Any, path: str) -> Any | None:
    """The object at ``path`` below the package ``root``, or ``None``."""
    if path == root.path:
        return root
    if not path.startswith(root.path + "."):
        return None
    try:
        return root.get_member(path[len(root.path) + 1 :])
    except (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None


def _documented(obj: Any) -> bool:
    """Whether the API reference renders ``obj``: public and documented along its whole path."""
    try:
        target = obj.final_target if obj.is_alias else obj
    except (griffe.AliasResolutionError, griffe.CyclicAliasError):
        return False
    node = target
    while node is not None:
        if node.name.startswith("_") and node.name != "__init__":
            return False
        if node.docstring is None:
            return False
        node = node.parent
    return True


def _rewrite(root: Any, obj: Any) -> None:
    docstring = obj.docstring
    if docstring is None or ":" not in docstring.value:
        return

    def replace(match: re.Match[str]) -> str:
        if match.group(4) is not None:
            label, target = match.group(3), match.group(4)
        else:
            target = match.group(2)
            label = target.rsplit(".", 1)[-1] if match.group(1) else target
        scopes = [obj] + [parent for parent in _parents(obj)]
        candidates = [target] + [f"{scope.path}.{target}" for scope in scopes]
        for candidate in candidates:
            found = _lookup(root, candidate)
            if found is not None and _documented(found):
                final = found.final_target if found.is_alias else found
                return f"[`{label}`][{final.path}]"
        return f"`{label}`"

    # A reStructuredText literal block ("text::" then an indented block) is, in Markdown, a
    # sentence ending in one colon followed by an indented code block.
    docstring.value = LITERAL.sub(":\n\n", ROLE.sub(replace, docstring.value))


def _parents(obj: Any) -> list[Any]:
    out = []
    node = obj.parent
    while node is not None:
        out.append(node)
        node = node.parent
    return out


def _walk(obj: Any) -> list[Any]:
    out = [obj]
    for member in obj.members.values():
        if not member.is_alias:
            out += _walk(member)
    return out


class DocstringRoles(griffe.Extension):
    """Rewrite cross-reference roles once the whole package is loaded."""

    def on_package(self, *, pkg: Any, **kwargs: Any) -> None:
        for obj in _walk(pkg):
            _rewrite(pkg, obj)
