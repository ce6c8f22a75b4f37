"""A Sphinx extension for the book's API reference: docstrings written for readers of the code
name private helpers, module constants and the papers by their citation keys; in the
rendered reference those become plain text instead of links that cannot resolve.

Loaded by ``_config.yml`` (``sphinx: extra_extensions``). A role whose target is private
(a name or module starting with ``_``), belongs to the harness, lies outside mrflib (a
builtin such as ``ValueError`` included) or is a module constant (``:data:``) is shown as
code; ``{cite}`key``` (MyST, which reST docstrings do not parse) is shown as the key in
brackets.
"""

from __future__ import annotations

import builtins
import re
from typing import Any

_ROLE = re.compile(r":(?:py:)?(func|mod|class|meth|data|attr|obj|exc):`(~?)([^`<]+)`")
_CITE = re.compile(r"\{cite(?::[tp])?\}`([^`]+)`")


def _linkable(kind: str, target: str) -> bool:
    parts = target.rstrip("()").split(".")
    if kind == "data" or any(p.startswith("_") and not p.startswith("__") for p in parts):
        return False
    if len(parts) > 1 and parts[0] != "mrflib" or hasattr(builtins, parts[-1]):
        return False
    return not target.startswith("mrflib.repro")


def plain_text(line: str) -> str:
    """``line`` with its unlinkable roles and MyST citations turned into plain text."""
    def role(m: re.Match) -> str:
        kind, short, target = m.groups()
        if _linkable(kind, target):
            return m.group(0)
        shown = target.rsplit(".", 1)[-1] if short else target
        return f"``{shown}``"

    return _CITE.sub(lambda m: f"[{m.group(1)}]", _ROLE.sub(role, line))


def _process(app: Any, what: str, name: str, obj: Any, options: Any, lines: list) -> None:
    lines[:] = [plain_text(line) for line in lines]


def setup(app: Any) -> dict:
    app.connect("autodoc-process-docstring", _process)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
