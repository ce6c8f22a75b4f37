"""The API reference's numpydoc sections: every public function of every module the reference
renders states its parameters (names as in its signature) and what it returns, and every
public named tuple or dataclass its attributes, so that the rendered reference shows each
type and default."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _rendered_modules() -> list[str]:
    """The modules the API reference pages render with ``automodule``."""
    names = set()
    for page in (ROOT / "book" / "api").glob("*.md"):
        names |= set(re.findall(r"\.\. automodule:: ([\w.]+)", page.read_text()))
    return sorted(names)


MODULES = _rendered_modules()
ENTRY = re.compile(r"^(\*{0,2}\w+(?:, \*{0,2}\w+)*)(?: : .*)?$")


def _public():
    """``(id, object, kind)`` of every public function, method and class of MODULES."""
    out = []
    for name in MODULES:
        mod = importlib.import_module(name)
        shown = getattr(mod, "__all__", None)  # what autodoc renders
        for n, obj in vars(mod).items():
            if (n.startswith("_") or getattr(obj, "__module__", None) != name
                    or (shown is not None and n not in shown)):
                continue
            if inspect.isfunction(obj):
                out.append((f"{name}.{n}", obj, "function"))
            elif inspect.isclass(obj):
                out.append((f"{name}.{n}", obj, "class"))
                out += [(f"{name}.{n}.{m}", f, "function") for m, f in vars(obj).items()
                        if not m.startswith("_") and inspect.isfunction(f)]
    return out


def _section(doc: str, heading: str) -> list[str]:
    """The names a numpydoc section lists (``a, b : type`` gives ``a`` and ``b``)."""
    m = re.search(rf"^{heading}\n-+\n(.*?)(?=\n\n\w[\w ]*\n-+\n|\Z)", doc, re.M | re.S)
    if m is None:
        return []
    names = []
    for line in m.group(1).splitlines():
        entry = ENTRY.match(line)
        if entry:
            names += [x.lstrip("*") for x in entry.group(1).split(", ")]
    return names


@pytest.mark.parametrize("obj, kind", [pytest.param(o, k, id=i) for i, o, k in _public()])
def test_public_docstring_has_its_sections(obj, kind):
    doc = inspect.getdoc(obj) or ""
    for heading, rule in re.findall(r"^(\w[\w ]*)\n(-+)$", doc, re.M):
        assert len(rule) == len(heading), f"underline of {heading!r} is {len(rule)} long"
    if kind == "class":
        if dataclasses.is_dataclass(obj):
            fields = [f.name for f in dataclasses.fields(obj) if not f.name.startswith("_")]
        else:
            fields = list(getattr(obj, "_fields", ()))
        assert set(fields) <= set(_section(doc, "Attributes")), "undocumented attributes"
        return
    sig = inspect.signature(obj)
    params = [p for p in sig.parameters if p not in ("self", "cls")]
    assert _section(doc, "Parameters") == params, "Parameters must list the signature's"
    if sig.return_annotation not in (None, "None"):
        assert re.search(r"^(Returns|Yields)\n-+$", doc, re.M), "no Returns or Yields"
