"""The layers of mrflib as the import-linter contract in ``pyproject.toml`` states them.

``lint-imports`` checks the contract (``make lint``, ``make test``); this module reads the
same contract, with the one-line reason for each layer kept beside it (``[tool.mrflib]
layers``), so that the book's Architecture page (:func:`layers_markdown`, written by
:func:`mrflib.repro.report.write_pages`) and ``tests/test_layers.py`` never drift from
what the linter enforces.
"""

from __future__ import annotations

import pkgutil
import tomllib
from pathlib import Path
from typing import Any

from mrflib._support.validation import check_path

__all__ = ["PYPROJECT", "package_modules", "read_layers", "layers_markdown"]

#: The repository's ``pyproject.toml`` (the contract and the layers' reasons).
PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
_CONTRACT_ID = "layers"


def package_modules(package: str = "") -> list[str]:
    """Names of the modules and sub-packages directly inside :mod:`mrflib` (or inside its
    sub-package ``package``, named relative to :mod:`mrflib`: ``"inference.exact"``), sorted."""
    import importlib

    pkg = importlib.import_module("mrflib" + (f".{package}" if package else ""))
    if not hasattr(pkg, "__path__"):
        return []
    prefix = f"{package}." if package else ""
    return sorted(prefix + info.name for info in pkgutil.iter_modules(pkg.__path__))


def _modules(layer: str) -> list[tuple[str, bool]]:
    """``[(module, optional), ...]`` of one contract layer (``a : b`` or ``a | b``;
    ``(name)`` is a module the contract allows to be absent)."""
    sep = "|" if "|" in layer else ":"
    out = []
    for raw in layer.split(sep):
        name = raw.strip()
        optional = name.startswith("(") and name.endswith(")")
        out.append((name.strip("()").strip(), optional))
    return out


def read_layers(pyproject: Any = PYPROJECT) -> list[dict[str, Any]]:
    """The layers of the import-linter contract ``id = "layers"``, top first.

    Returns one ``dict(name, why, modules)`` per layer: ``name`` and ``why`` from
    ``[tool.mrflib] layers``, ``modules`` the contract's ``[(module, optional), ...]``.
    ``ValueError`` (naming the file) when the contract is missing or the two lists do
    not have one entry per layer.
    """
    path = check_path(pyproject, "pyproject", exists=True)
    tool = tomllib.loads(path.read_text()).get("tool", {})
    contracts = tool.get("importlinter", {}).get("contracts", [])
    found = [c for c in contracts if c.get("id") == _CONTRACT_ID]
    if len(found) != 1 or found[0].get("type") != "layers":
        raise ValueError(f"{path}: expected one [[tool.importlinter.contracts]] with "
                         f'id = "{_CONTRACT_ID}" and type = "layers"')
    layers = found[0].get("layers", [])
    notes = tool.get("mrflib", {}).get("layers", [])
    if len(notes) != len(layers) or not all({"name", "why"} <= set(n) for n in notes):
        raise ValueError(f"{path}: [tool.mrflib] layers needs one {{name, why}} per layer of "
                         f"the contract ({len(layers)} layers, {len(notes)} entries)")
    return [dict(name=n["name"], why=n["why"], modules=_modules(layer))
            for n, layer in zip(notes, layers)]


def layers_markdown(pyproject: Any = PYPROJECT) -> str:
    """The layer table of the Architecture page: layer, modules, why, top first.

    Modules the contract marks optional are shown only once they exist.
    """
    present = set(package_modules())
    rows = ["| layer | modules | why it is a layer |", "|---|---|---|"]
    for layer in read_layers(pyproject):
        names = [m for m, optional in layer["modules"] if not optional or m in present]
        inside = [sub.rpartition(".")[2] for m in names for sub in package_modules(m)
                  if not sub.rpartition(".")[2].startswith("_")]
        mods = ", ".join(f"`{m}`" for m in names)
        if inside:
            mods += ": " + ", ".join(f"`{m}`" for m in inside)
        rows.append(f"| {layer['name']} | {mods} | {layer['why']} |")
    return "\n".join(rows) + "\n"
