"""The layers of mrflib: the import-linter contract in pyproject.toml, the package and the
book's Architecture page agree, and the algorithm modules load nothing of the harness."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from mrflib.repro import layers

ROOT = Path(__file__).resolve().parents[1]
HARNESS = "harness"


def _contract_modules() -> dict[str, tuple[str, bool]]:
    """``module -> (layer name, optional)`` for every module the contract names."""
    return {m: (layer["name"], optional) for layer in layers.read_layers()
            for m, optional in layer["modules"]}


def test_every_module_of_mrflib_is_in_a_layer():
    named = _contract_modules()
    unplaced = sorted(set(layers.package_modules()) - set(named))
    assert not unplaced, (f"modules in no layer of pyproject.toml [tool.importlinter] "
                          f"(add each to its layer): {unplaced}")
    gone = sorted(m for m, (_, optional) in named.items()
                  if not optional and m not in layers.package_modules())
    assert not gone, f"the contract names modules that do not exist: {gone}"


def test_layers_from_the_bottom():
    """The order the design states: support, models, inference, learning, io and data,
    harness (each layer may import only those after it in the contract); each layer but the
    harness is one sub-package, and the top of the package shows nothing else."""
    assert [layer["name"] for layer in layers.read_layers()][::-1] == [
        "support", "models", "inference", "learning", "io and data", HARNESS]
    assert set(layers.package_modules()) == {
        "__main__", "_support", "models", "inference", "learning", "io", "repro"}


def test_lint_imports_keeps_every_contract(tmp_path):
    exe = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    if not Path(exe).exists():
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    run = subprocess.run([exe, "--no-logo", "--cache-dir", str(tmp_path)], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    assert f"{len(contracts['contracts'])} kept, 0 broken" in run.stdout


def test_algorithm_modules_load_nothing_of_the_harness():
    """Each module below the harness, imported in a fresh interpreter, leaves no module of
    mrflib.repro (nor the harness's optional dependencies) in ``sys.modules``."""
    library = [m for m, (layer, _) in _contract_modules().items()
               if layer != HARNESS and m in layers.package_modules()]
    library = [m for top in library for m in [top, *layers.package_modules(top)]]
    code = (
        "import importlib, json, sys\n"
        "heavy = ('mrflib.repro', 'pgmpy', 'sklearn', 'papermill', 'nbformat', 'distributed')\n"
        "found = {}\n"
        f"for name in {library!r}:\n"
        "    importlib.import_module('mrflib.' + name)\n"
        "    bad = sorted(m for m in sys.modules if m.startswith(heavy))\n"
        "    if bad:\n"
        "        found[name] = bad\n"
        "        break\n"
        "print(json.dumps(found))\n")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == {}, f"first module that loads the harness: {run.stdout}"


def test_architecture_page_shows_the_contract():
    page = (ROOT / "book" / "architecture.md").read_text()
    assert "```{include} _layers_table.md" in page
    table = layers.layers_markdown()
    for layer in layers.read_layers():
        row = next(r for r in table.splitlines() if r.startswith(f"| {layer['name']} |"))
        for m, optional in layer["modules"]:
            assert (f"`{m}`" in row) == (not optional or m in layers.package_modules())
        assert layer["why"] in row


def test_read_layers_names_the_file(tmp_path):
    bad = tmp_path / "pyproject.toml"
    bad.write_text('[tool.importlinter]\nroot_packages = ["mrflib"]\n')
    with pytest.raises(ValueError, match="pyproject.toml.*id = \"layers\""):
        layers.read_layers(bad)
    text = (ROOT / "pyproject.toml").read_text()
    bad.write_text(text.replace('{ name = "harness"', '# { name = "harness"'))
    with pytest.raises(ValueError, match="one {name, why} per layer"):
        layers.read_layers(bad)


#: The one kind of private name another module may use: a model class's constructor that
#: skips the validation its caller has already done.
_SHARED_PRIVATE = {"_from_checked"}


def _private_uses(path: Path, modules: set[str]) -> list[str]:
    """The private names (a leading underscore, not a dunder, not a module) that ``path``
    takes from another module of mrflib: imported by name, or read as an attribute of an
    imported module or class."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    found, aliases = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mrflib"):
            for a in node.names:
                full = f"{node.module}.{a.name}"
                aliases[a.asname or a.name] = full
                if (a.name.startswith("_") and not a.name.startswith("__")
                        and full not in modules):
                    found.append(f"{path.name}:{node.lineno} imports {full}")
        elif isinstance(node, ast.Import):
            aliases.update({a.asname or a.name: a.name for a in node.names
                            if a.name.startswith("mrflib")})
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in aliases and node.attr.startswith("_")
                and not node.attr.startswith("__") and node.attr not in _SHARED_PRIVATE
                and f"{aliases[node.value.id]}.{node.attr}" not in modules):
            found.append(f"{path.name}:{node.lineno} reads {aliases[node.value.id]}."
                         f"{node.attr}")
    return found


def test_no_module_uses_another_modules_private_names():
    """A helper that crosses modules has a documented name without a leading underscore
    (CONTRIBUTING.md): a private module may be imported, a private name stays in its
    module."""
    package = ROOT / "mrflib"
    modules = {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
               for p in package.rglob("*.py")}
    uses = [u for p in sorted(package.rglob("*.py")) for u in _private_uses(p, modules)]
    assert not uses, "private names used across modules:\n" + "\n".join(uses)
