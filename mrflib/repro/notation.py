"""The recorded quantities' plain-text notation, typeset for the book's pages.

A chapter records its numbers as plain text (``KL(p*||p_theta)``, ``sigma_w``, ``<x_i x_j>``)
so that the CSV files read in any tool. The pages that show them (the scorecard) typeset that
notation as MyST inline mathematics, with one table of patterns, :data:`PATTERNS`; everything
else stays text, with the comparison signs as their characters (``>=`` as ``≥``).
"""

from __future__ import annotations

import html
import re

__all__ = ["PATTERNS", "table_cell", "typeset"]

_NAME = r"(MCI|MPLE|1-?SMCI)"


def _name(m: str) -> str:
    """A method's name as a sub- or superscript (``1SMCI`` is the 1-SMCI estimator)."""
    return r"\text{1-SMCI}" if m.replace("-", "") == "1SMCI" else rf"\mathrm{{{m}}}"


#: ``(regular expression, LaTeX)`` in the order they are tried; a match becomes ``$LaTeX$``
#: (the LaTeX holds no ``|``, so it is safe in a Markdown table cell).
PATTERNS: list[tuple[str, object]] = [
    (r"KL\((p\*|p_d)\|\|p_theta\)",
     lambda m: r"\mathrm{KL}(%s \Vert p_\theta)" % ("p^*" if m[1] == "p*" else "p_d")),
    (rf"\(MAE_{_NAME}/MAE_{_NAME}\)\^2",
     lambda m: rf"(\mathrm{{MAE}}_{{{_name(m[1])}}} / \mathrm{{MAE}}_{{{_name(m[2])}}})^2"),
    (rf"MAE_{_NAME}(\(\d+\))?",
     lambda m: rf"\mathrm{{MAE}}_{{{_name(m[1])}}}{m[2] or ''}"),
    (rf"\b([vV])(\^|_){_NAME}", lambda m: rf"{m[1]}{m[2]}{{{_name(m[3])}}}"),
    (r"<(\w+(?: \w+)?)>",
     lambda m: r"\langle {} \rangle".format(re.sub(r"([a-z])(\d)\b", r"\1_\2", m[1]))),
    (r"e\^x >= B_K\(x\)", r"e^x \ge B_K(x)"),
    (r"\b([A-Z])_(\d);(\d)\b", lambda m: rf"{m[1]}_{{{m[2]};{m[3]}}}"),
    (r"\bmu_([A-Z]-\d)\b", lambda m: rf"\mu_{{{m[1]}}}"),
    (r"\b([A-Za-z]'?)_([A-Za-z0-9]+)\b(\(\w\))?",
     lambda m: rf"{m[1]}_{{{m[2]}}}{m[3] or ''}"),
    (r"\b2\^(\w+)\b", lambda m: rf"2^{{{m[1]}}}"),
    (r"\bsigma_w\b", r"\sigma_w"),
    (r"\beps\b", r"\varepsilon"),
    (r"\bmu\b", r"\mu"),
    (r"\blog Z\b", r"\log Z"),
]
_COMPILED = [(re.compile(p), r) for p, r in PATTERNS]
_SIGNS = {">=": "≥", "<=": "≤", "!=": "≠", "->": "→", ">>": "≫"}


_MARKUP = re.compile(r"([\\`*_\[\]{}$|#])")


def _text(s: str, markup: bool) -> str:
    for ascii_sign, sign in _SIGNS.items():
        s = s.replace(ascii_sign, sign)
    s = html.escape(s, quote=False)
    return _MARKUP.sub(r"\\\1", s) if markup else s


def typeset(text: object, markup: bool = False) -> str:
    """``text`` with its notation as ``$...$`` mathematics and the rest HTML-escaped text:
    ``"KL(p*||p_theta) at eps >= 1e-4"`` becomes
    ``"$\\mathrm{KL}(p^* \\Vert p_\\theta)$ at $\\varepsilon$ ≥ 1e-4"``. The earliest match
    wins, the longest among those starting at one place. With ``markup``, the text's Markdown
    markup characters are escaped too (for running text; a table cell needs only ``|``)."""
    s, out, pos = str(text), [], 0
    while True:
        found = [(m.start(), -len(m[0]), m, r) for p, r in _COMPILED
                 if (m := p.search(s, pos)) is not None]
        if not found:
            return "".join(out) + _text(s[pos:], markup)
        _, _, m, r = min(found, key=lambda f: f[:2])
        latex = r(m) if callable(r) else r
        out += [_text(s[pos:m.start()], markup), f"${latex}$"]
        pos = m.end()


def table_cell(text: object) -> str:
    """``text`` for a Markdown table cell: one line, its notation typeset (:func:`typeset`:
    ``<``, ``>``, ``&`` of the text as entities, so a quantity such as ``<dH>`` is never read
    as an HTML tag), ``|`` escaped."""
    return typeset(text).replace("|", "\\|").replace("\n", " ")
