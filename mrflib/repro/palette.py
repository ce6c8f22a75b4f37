"""One colour and one marker per method, the same in every figure of the book.

A reader who has learnt that 1-SMCI is the blue circle in one chapter finds it blue in every
other chapter and on the Performance page. The colours are the colour-blind-safe set of
Okabe and Ito, extended by Paul Tol's muted set for the methods that need more; a method
shares its colour only with methods that never appear in one figure with it (the
:data:`FAMILIES`), and never its colour and marker together, so that a figure reads in grey
too.

Series that are not methods (model families, orders of a bound, values of a parameter) take
:func:`categorical` colours, which are also matplotlib's default cycle in the book's style
file (``notebooks/matplotlibrc``). Reference lines (a ``1/sqrt(N)`` slope, ``y = x``, a
target) are drawn in :data:`REFERENCE`, guides (a time limit, zero) in :data:`GUIDE`.
"""

from __future__ import annotations

import re

__all__ = ["METHODS", "FAMILIES", "OKABE_ITO", "REFERENCE", "GUIDE", "lookup", "style",
           "colour", "categorical"]

#: The eight colours of Okabe and Ito (2008), black first.
OKABE_ITO = ("#000000", "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00",
             "#CC79A7")
# Paul Tol's muted scheme, for methods beyond the eight.
_INDIGO, _TEAL, _GREEN, _OLIVE, _ROSE, _WINE = ("#332288", "#44AA99", "#117733", "#999933",
                                               "#CC6677", "#882255")
_BLACK, _ORANGE, _SKY, _BLUISH_GREEN, _YELLOW, _BLUE, _VERMILLION, _PURPLE = OKABE_ITO
_GREY = "#7F7F7F"

#: Reference lines: a slope to compare with, ``y = x``, a target.
REFERENCE = _BLACK
#: Guides that only locate: a time limit, zero, a ratio of 1.
GUIDE = "#999999"

#: Each method's ``(colour, marker)``, by the name the book prints.
METHODS: dict[str, tuple[str, str]] = {
    # exact computation, and the learners that use it
    "exact": (_BLACK, "D"),
    "MLE": (_BLACK, "o"),
    "mrflib": (_BLACK, "s"),
    # Monte Carlo estimators of moments
    "MCI": (_GREY, "o"),
    "Gibbs": (_WINE, "v"),
    "1-SMCI": (_BLUE, "o"),
    "s2-SMCI": (_SKY, "s"),
    "2-SMCI": (_BLUISH_GREEN, "s"),
    "3-SMCI": (_GREEN, "P"),
    "AIS": (_OLIVE, "^"),
    # approximate inference
    "LBP": (_ORANGE, "^"),
    "mean field": (_ROSE, "<"),
    "WMB": (_INDIGO, ">"),
    # learners
    "MPLE": (_VERMILLION, "v"),
    "LAP": (_PURPLE, "s"),
    "RM": (_OLIVE, "<"),
    "MPF": (_INDIGO, "d"),
    "CD": (_ROSE, "x"),
    "PCD": (_WINE, "X"),
    "SMCI-PCD": (_TEAL, "h"),
    "FSLL": (_TEAL, "o"),
    "BM-DI": (_OLIVE, "D"),
    "BM-PCD": (_WINE, "P"),
    "empirical": (_GREY, "x"),
    "pairwise ML": (_BLACK, "^"),
    "best pairwise": (_SKY, "<"),
    "graphical lasso": (_OLIVE, "v"),
    "ML, chordal completion": (_GREY, "D"),
    "ML, no pattern": (_SKY, "o"),
    # image restoration
    "noisy": (_GREY, "."),
    "median 3x3": (_SKY, "v"),
    "median 5x5": (_BLUE, "^"),
    "ICM": (_BLUISH_GREEN, "D"),
    # elimination orders
    "min-degree": (_ORANGE, "o"),
    "min-fill": (_SKY, "p"),
    "weighted-min-fill": (_BLUISH_GREEN, "^"),
    "engine": (_BLACK, "*"),
    # peers and baselines
    "pgmpy": (_VERMILLION, "s"),
    "pyGMs": (_SKY, "^"),
    "pyAgrum": (_BLUISH_GREEN, "v"),
    "toulbar2": (_PURPLE, "<"),
    "scikit-learn": (_ORANGE, ">"),
    "numpy": (_GREY, "p"),
    "paper": (_INDIGO, "*"),
}

#: Other spellings of a method, as the chapters and the benchmarks print them (lower case).
_ALIASES = {
    "ml": "MLE", "maximum likelihood": "MLE", "exact ml": "MLE", "junction tree": "exact",
    "enumerate": "exact", "exact sampling": "exact", "mc": "MCI", "monte carlo": "MCI",
    "gibbs sampling": "Gibbs", "loopy bp": "LBP", "bp": "LBP", "mpm (loopy bp)": "LBP",
    "mean-field": "mean field", "mf": "mean field", "fl": "FSLL", "ratio matching": "RM",
    "minimum probability flow": "MPF", "smci pcd": "SMCI-PCD", "empirical (kt)": "empirical",
    "sklearn": "scikit-learn", "glasso": "graphical lasso", "java": "paper",
    "pygm": "pyGMs", "agrum": "pyAgrum", "pygms-wmb": "WMB", "pygms-lbp": "LBP",
    "junction-tree": "exact", "mle (junction tree)": "MLE", "pseudo-likelihood": "MPLE",
}
_BY_KEY = {name.lower(): name for name in METHODS} | _ALIASES

#: Methods drawn together in one figure somewhere in the book: their colours differ.
FAMILIES: dict[str, tuple[str, ...]] = {
    "estimators": ("exact", "MCI", "Gibbs", "1-SMCI", "s2-SMCI", "2-SMCI", "3-SMCI", "AIS"),
    "approximate inference": ("LBP", "mean field", "WMB", "Gibbs", "1-SMCI", "2-SMCI",
                              "exact"),
    "learners": ("MLE", "MPLE", "LAP", "1-SMCI", "s2-SMCI", "RM", "MPF", "CD", "PCD",
                 "SMCI-PCD"),
    "factor learners": ("FSLL", "BM-DI", "BM-PCD", "empirical", "pairwise ML",
                        "best pairwise"),
    "precision matrices": ("LAP", "MLE", "graphical lasso", "ML, chordal completion",
                           "ML, no pattern"),
    "image restoration": ("noisy", "median 3x3", "median 5x5", "LBP", "mean field", "Gibbs",
                          "ICM"),
    "elimination orders": ("min-degree", "min-fill", "weighted-min-fill", "engine"),
    "peers": ("mrflib", "pgmpy", "pyGMs", "pyAgrum", "toulbar2", "scikit-learn", "numpy",
              "paper"),
}


def _key(text: str) -> str:
    return " ".join(str(text).replace("_", " ").split()).lower()


def lookup(name: str) -> str | None:
    """The method a printed name stands for, or None.

    Parameters
    ----------
    name : str
        A method's name as a figure prints it: the name itself in any case (``"mple"``),
        an alias (``"loopy BP"``, ``"ML"``), or a longer label that starts with or contains
        one as a word (``"pgmpy BeliefPropagation"``, ``"FL, eps = 1e-4"``).

    Returns
    -------
    str or None
        The key of :data:`METHODS`; None when no method is named.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    key = _key(name)
    if key in _BY_KEY:
        return _BY_KEY[key]
    # the longest name that occurs as a word: "s2-SMCI, e = 0.1" is s2-SMCI, not 2-SMCI
    for alias in sorted(_BY_KEY, key=len, reverse=True):
        if re.search(rf"(?<!\w){re.escape(alias)}(?!\w)", key):
            return _BY_KEY[alias]
    return None


def style(name: str) -> dict[str, str]:
    """Keyword arguments ``color`` and ``marker`` for a method's line or points.

    Parameters
    ----------
    name : str
        A method's printed name (see :func:`lookup`).

    Returns
    -------
    dict
        ``{"color": ..., "marker": ...}``, to pass as ``**style(name)`` to ``plot``.
    """
    method = lookup(name)
    if method is None:
        raise ValueError(f"name must name a method of the palette ({', '.join(METHODS)}), "
                         f"got {name!r}")
    col, mark = METHODS[method]
    return {"color": col, "marker": mark}


def colour(name: str) -> str:
    """A method's colour (see :func:`style`)."""
    return style(name)["color"]


def categorical(k: int) -> str:
    """The ``k``-th colour for series that are not methods (cycling over :data:`OKABE_ITO`
    without black and yellow, which serve as reference and read poorly on white)."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ValueError(f"k must be a non-negative integer, got {k!r}")
    return _CATEGORICAL[k % len(_CATEGORICAL)]


_CATEGORICAL = (_BLUE, _ORANGE, _BLUISH_GREEN, _VERMILLION, _PURPLE, _SKY, _WINE, _OLIVE)
