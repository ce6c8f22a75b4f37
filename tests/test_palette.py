"""The book's palette (mrflib.repro.palette): one colour and marker per method, used by every
figure the book draws (the chapters' plotting code and the Performance page)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import matplotlib.colors as mcolors
import pytest

from mrflib.repro import palette

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# the harness modules that draw figures for the book
DRAWING_MODULES = [ROOT / "mrflib" / "repro" / f for f in
                   ("report.py", "field_test.py", "field_grey.py")]


def test_each_method_has_one_colour_and_marker_and_no_two_share_both():
    pairs = list(palette.METHODS.values())
    assert len(set(pairs)) == len(pairs)
    for colour, marker in pairs:
        assert mcolors.is_color_like(colour) and marker


@pytest.mark.parametrize("family", sorted(palette.FAMILIES))
def test_methods_drawn_together_differ_in_colour(family):
    methods = palette.FAMILIES[family]
    assert set(methods) <= set(palette.METHODS)
    colours = [palette.colour(m) for m in methods]
    assert len(set(colours)) == len(colours), dict(zip(methods, colours))


def test_the_book_names_its_methods_many_ways_and_each_finds_its_colour():
    same = {"1-SMCI": ["1-smci", "1-SMCI, e = 5", "1-SMCI (fix)"],
            "s2-SMCI": ["s2-smci", "s2-SMCI, e = 1"],
            "2-SMCI": ["2-smci"],
            "MLE": ["mle", "ML", "MLE to truth"],
            "LBP": ["loopy BP", "MPM (loopy BP)", "pygms-lbp"],
            "WMB": ["pygms-wmb"],
            "pgmpy": ["pgmpy BeliefPropagation", "pgmpy VariableElimination"],
            "scikit-learn": ["scikit-learn LogisticRegression per node", "sklearn"],
            "FSLL": ["FL"], "MCI": ["MC", "mci"], "numpy": ["numpy checkerboard"],
            "SMCI-PCD": ["smci-pcd"], "PCD": ["pcd", "PCD, e = 1"],
            "empirical": ["empirical (KT)"], "graphical lasso": ["graphical lasso (oracle alpha)"],
            "ML, chordal completion": ["ML, chordal completion (junction tree)"]}
    for method, names in same.items():
        for name in names:
            assert palette.lookup(name) == method, name
            assert palette.style(name) == palette.style(method)
    assert palette.lookup("lattice q=2") is None


def test_bad_names_are_refused():
    with pytest.raises(ValueError, match="name must name a method"):
        palette.style("no such method")
    with pytest.raises(TypeError, match="name must be a str"):
        palette.lookup(3)
    with pytest.raises(ValueError, match="k must be"):
        palette.categorical(-1)


def test_the_style_files_default_colours_are_the_palettes_categorical_ones():
    rc = (ROOT / "notebooks" / "matplotlibrc").read_text()
    cycle = re.search(r"^axes\.prop_cycle:\s*cycler\('color', \[(.*)\]\)", rc, re.M).group(1)
    colours = ["#" + c.strip(" '\"").upper() for c in cycle.split(",")]
    assert colours == [palette.categorical(k) for k in range(len(colours))]


# A colour written into plotting code instead of taken from the palette: a colour keyword
# given a string (other than white or none), matplotlib's cycle names "C0".."C9" or tableau
# names, or a format string with a colour letter ("k--", "ro").
_COLOUR_KEYWORDS = {"color", "c", "colors", "edgecolor", "edgecolors", "facecolor",
                    "node_color", "mfc", "markerfacecolor", "markeredgecolor", "ecolor"}
_CYCLE = re.compile(r"^(C\d|tab:\w+)$")
_FORMAT = re.compile(r"^[-.:o^vs<>*xXDdph+|_1-4]*[bgrcmykw][-.:o^vs<>*xXDdph+|_1-4]*$")
_PLOTS = {"plot", "loglog", "semilogy", "semilogx", "errorbar", "scatter", "bar", "barh",
          "hist", "fill_between", "axhline", "axvline", "step"}


def _literal_colours(source: str, where: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "attr", getattr(node.func, "id", ""))
        for kw in node.keywords:
            v = kw.value
            if kw.arg in _COLOUR_KEYWORDS and isinstance(v, (ast.Constant, ast.JoinedStr)):
                text = v.value if isinstance(v, ast.Constant) else "f-string"
                if text not in ("white", "none", None):
                    found.append(f"{where}: {name}({kw.arg}={text!r})")
            if kw.arg in _COLOUR_KEYWORDS and isinstance(v, ast.List):
                found.append(f"{where}: {name}({kw.arg}=[...]) of literal colours")
        if name in _PLOTS:
            for a in node.args:
                if isinstance(a, ast.Constant) and isinstance(a.value, str) and (
                        _FORMAT.match(a.value) or _CYCLE.match(a.value)):
                    found.append(f"{where}: {name}(..., {a.value!r}) sets a colour")
    for m in re.finditer(r"[\"']C\d[\"']|f[\"']C\{|[\"']tab:\w+[\"']", source):
        found.append(f"{where}: {m.group(0)}")
    return found


def _code_cells(nb: Path):
    for k, cell in enumerate(json.loads(nb.read_text())["cells"]):
        if cell["cell_type"] == "code":
            src = "".join(cell["source"])
            # IPython magics are not Python
            yield k, "\n".join(ln for ln in src.splitlines() if not ln.startswith(("%", "!")))


def test_every_figure_takes_its_colours_from_the_palette():
    """No literal colour in the notebooks' plotting code or the harness's figures: a method's
    colour comes from palette.style / palette.colour, any other series from the default
    cycle (the palette's categorical colours) or palette.categorical."""
    found = []
    for nb in NOTEBOOKS:
        for k, src in _code_cells(nb):
            found += _literal_colours(src, f"{nb.stem} cell {k}")
    for f in DRAWING_MODULES:
        found += _literal_colours(f.read_text(), f.name)
    assert not found, "\n".join(found)


def test_the_literal_colour_scan_catches_what_it_should():
    bad = ('ax.plot(x, y, "k--")\nax.plot(x, y, "o-", color="C3")\nax.axhline(1, color="grey")'
           '\nax.bar(x, y, color=f"C{j}")\nax.scatter(x, y, c=["tab:red"])')
    assert len(_literal_colours(bad, "x")) >= 5
    good = ('ax.plot(x, y, "o-")\nax.plot(x, y, "-", **palette.style("MPLE"))\n'
            'ax.axhline(1, color=palette.GUIDE)\nax.scatter(x, y, c=col, edgecolors="none")')
    assert _literal_colours(good, "x") == []
