"""The reproduction scorecard read as claims: labels, the verdict rules, claims, summaries.

A chapter records one row per measured number (:func:`mrflib.repro.experiments.record`); a
paper's *claim* is often measured many times (a table's cells, one figure on several data
sets). :func:`claims` groups the rows of one claim (same chapter, item, verdict and note: the
note is the claim's statement) so that the scorecard shows one row per claim and the measured
numbers folded under it. :func:`paper_summary` is the scorecard's per-paper count and
:func:`chapter_conclusion` the generated paragraph that closes a chapter, so that every number
in it comes from the chapter's records. :func:`mrflib.repro.report.scorecard_markdown` renders
``book/scorecard``.
"""

from __future__ import annotations

import pandas as pd

from .experiments import FIELDS, VERDICTS, records
from .notation import typeset

__all__ = ["PAPER_TITLES", "VERDICT_MARK", "claims", "paper_summary",
           "chapter_conclusion"]

#: Short citation of each paper (the ``paper`` field of a recorded row) in the scorecard.
PAPER_TITLES = {
    "smci-learning-yasuda": "Yasuda 2018 (1-SMCI learning)",
    "gsmci-yasuda-uchizawa": "Yasuda & Uchizawa 2021 (GSMCI)",
    "fsll-takabatake-akaho": "Takabatake & Akaho 2022 (FSLL)",
    "lap-mizrahi-defreitas-tenorio": "Mizrahi et al. 2013 (LAP)",
    "higher-order-bounds-leisink-kappen": "Leisink & Kappen 2002 (bounds)",
}
#: How each verdict is shown: plain words (no emoji, which a browser without an emoji font
#: shows as empty boxes); the book styles them as badges (``book/_css/mrflib.css``).
VERDICT_MARK = {
    "reproduced": "reproduced",
    "reproduced in kind": "reproduced in kind",
    "not reproduced": "not reproduced",
    "new": "new (not in the paper)",
}
_ORDER = {v: k for k, v in enumerate(("not reproduced", "reproduced in kind", "reproduced",
                                      "new"))}


def claims(df: pd.DataFrame) -> pd.DataFrame:
    """One row per claim of the recorded rows ``df``, in recording order.

    The rows of one claim share chapter, paper, item, verdict and a non-empty note (the
    note states the claim, e.g. "FL beats both machines on higher-order truths"); a row
    with no note is a claim of its own.

    Returns
    -------
    DataFrame
        The recorded columns (``quantity``, ``paper_value`` and ``ours`` of a claim of
        several rows list theirs, at most three, and say how many) plus ``n`` (rows) and
        ``rows`` (the row labels of ``df`` it groups).
    """
    lacking = sorted(set(FIELDS) - set(df))
    if lacking:
        raise ValueError(f"df must have the recorded columns {FIELDS}; lacks {lacking}")
    key = ["chapter", "paper", "item", "verdict", "note"]
    lone = df["note"].astype(str).str.strip() == ""
    group = df[key].astype(str).agg("\x1f".join, axis=1).where(~lone, df.index.astype(str))
    out = []
    for _, g in df.groupby(group, sort=False):
        first = g.iloc[0].to_dict()
        if len(g) > 1:
            def listed(column: str, g=g) -> str:
                values = [str(v) for v in g[column]]
                more = f"; … ({len(values)} in all)" if len(values) > 3 else ""
                return "; ".join(values[:3]) + more
            first |= {"quantity": f"{len(g)} measurements: {listed('quantity')}",
                      "paper_value": listed("paper_value"), "ours": listed("ours")}
        out.append(first | {"n": len(g), "rows": list(g.index)})
    return pd.DataFrame(out, columns=[*FIELDS, "n", "rows"])


def paper_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Claims per paper and verdict (rows: paper titles; columns: the verdicts, total)."""
    c = claims(df)
    table = (pd.crosstab(c["paper"].map(lambda p: PAPER_TITLES.get(p, p)), c["verdict"])
             .reindex(columns=[v for v in _ORDER if v in VERDICTS], fill_value=0))
    table["claims"] = table.sum(axis=1)
    return table


def _text(value: object) -> str:
    """``value`` as Markdown text: its notation typeset (:func:`mrflib.repro.notation.typeset`),
    the rest literal (markup characters escaped, ``<``, ``>`` and ``&`` as entities)."""
    return typeset(value, markup=True)


def _sentence(row: dict, brief: bool = False) -> str:
    """One claim as a sentence: item, quantity, the paper's value and ours, the note (with
    ``brief``, a claim of several measurements: their number and the note)."""
    note = str(row["note"]).strip()
    if brief and row["n"] > 1:
        return f"{_text(row['item'])}, {row['n']} measurements: {_text(note)}"
    paper = (f"the paper: {_text(row['paper_value'])}; "
             if str(row["paper_value"]).strip() else "")
    return (f"{_text(row['item'])}, {_text(row['quantity'])}: {paper}ours: "
            f"{_text(row['ours'])}" + (f" ({_text(note)})" if note else ""))


def chapter_conclusion(chapter: str, df: pd.DataFrame | None = None) -> str:
    """The paragraph that closes a chapter: its claims by verdict, each not reproduced one
    with the paper's number, ours and the reason (the note), all read from the records.

    Parameters
    ----------
    chapter : str
        The notebook stem the rows were recorded under.
    df : DataFrame, optional
        Recorded rows (default: those recorded in this process,
        :func:`mrflib.repro.experiments.records`).

    Returns
    -------
    str
        Markdown (plain text and lists); empty rows give a sentence saying so.
    """
    if not isinstance(chapter, str) or not chapter:
        raise ValueError(f"chapter must be a non-empty notebook stem, got {chapter!r}")
    rows = records(chapter) if df is None else df[df["chapter"] == chapter]
    if rows.empty:
        return f"_No scorecard rows were recorded by {chapter} in this run._\n"
    c = claims(rows.reset_index(drop=True))
    counts = c["verdict"].value_counts()
    parts = [f"{counts[v]} {VERDICT_MARK[v]}" for v in _ORDER if v in counts]
    profiles = sorted(set(rows["profile"]) - {""})
    at = f" at profile {', '.join(profiles)}" if profiles else ""
    lines = [f"This run{at} checked {len(c)} claims ({len(rows)} measured numbers): "
             + ", ".join(parts) + "."]
    for verdict, lead in (("not reproduced", "Not reproduced"),
                          ("reproduced in kind", "Reproduced in kind (the claim holds, the "
                                                 "numbers differ)")):
        sel = c[c["verdict"] == verdict]
        if len(sel):
            lines += ["", f"{lead}:", ""]
            lines += [f"* {_sentence(r, brief=verdict != 'not reproduced')}."
                      for r in sel.to_dict("records")]
    lines += ["", "Every row, with the paper-scale run beside it, is in the "
                  "{doc}`reproduction scorecard <../book/scorecard>`."]
    return "\n".join(lines) + "\n"
