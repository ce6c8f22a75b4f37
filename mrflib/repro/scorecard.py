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

__all__ = ["PAPER_TITLES", "VERDICT_MARK", "CLAIM_VERDICTS", "CHECK_VERDICTS", "kind",
           "claims", "paper_summary", "chapter_conclusion", "outcome"]

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
    "check passed": "check passed",
    "check failed": "check failed",
}
#: The verdicts of a paper's claim, worst first: only these count in a paper's summary.
CLAIM_VERDICTS = ("not reproduced", "reproduced in kind", "reproduced")
#: The verdicts of a check of the book's own (a target, a cross-check), failed first.
CHECK_VERDICTS = ("check failed", "check passed")
_ORDER = {v: k for k, v in enumerate((*CLAIM_VERDICTS, "new", *CHECK_VERDICTS))}


def kind(verdict: str) -> str:
    """What a row with ``verdict`` is: ``"claim"`` (a claim of the paper), ``"check"`` (a
    check of the book's own) or ``"new"`` (a number the paper does not give).

    Raises
    ------
    ValueError
        ``verdict`` is not one of :data:`mrflib.repro.experiments.VERDICTS`.
    """
    if verdict in CLAIM_VERDICTS:
        return "claim"
    if verdict in CHECK_VERDICTS:
        return "check"
    if verdict == "new":
        return "new"
    raise ValueError(f"verdict must be one of {VERDICTS}, got {verdict!r}")


def _count(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _listed(values: list[str]) -> str:
    """The values of a claim's rows in one cell: one when they are all the same, nothing
    when all are empty, else at most three and how many."""
    if len(set(values)) == 1:
        return values[0]
    more = f"; … ({len(values)} in all)" if len(values) > 3 else ""
    return "; ".join(v or "-" for v in values[:3]) + more


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
                return _listed([str(v).strip() for v in g[column]])
            first |= {"quantity": f"{len(g)} measurements: {listed('quantity')}",
                      "paper_value": listed("paper_value"), "ours": listed("ours")}
        out.append(first | {"n": len(g), "rows": list(g.index)})
    return pd.DataFrame(out, columns=[*FIELDS, "n", "rows"])


def paper_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Claims of each paper per verdict (rows: paper titles; columns: the verdicts of a claim,
    total); the book's own checks and new results are not a paper's claims and not counted."""
    c = claims(df)
    c = c[c["verdict"].isin(CLAIM_VERDICTS)]
    table = (pd.crosstab(c["paper"].map(lambda p: PAPER_TITLES.get(p, p)), c["verdict"])
             .reindex(columns=list(CLAIM_VERDICTS), fill_value=0))
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
    kinds = c["verdict"].map(kind)
    profiles = sorted(set(rows["profile"]) - {""})
    at = f" at profile {', '.join(profiles)}" if profiles else ""
    paper = c[kinds == "claim"]
    counts = paper["verdict"].value_counts()
    parts = [f"{counts[v]} {VERDICT_MARK[v]}" for v in CLAIM_VERDICTS if v in counts]
    n_rows = int(rows["verdict"].isin(CLAIM_VERDICTS).sum())
    head = (f"This run{at} checked {len(paper)} claims of the papers ({n_rows} measured "
            f"numbers): " + ", ".join(parts) + "." if len(paper) else
            f"This run{at} checked no claim of a paper.")
    checks, new = c[kinds == "check"], c[kinds == "new"]
    if len(checks):
        failed = int((checks["verdict"] == "check failed").sum())
        head += (f" It also ran {_count(len(checks), 'check')} of the book's own ({failed} "
                 "failed), not counted among the papers' claims.")
    if len(new):
        head += (f" It recorded {_count(len(new), 'new result')}, numbers the papers do not "
                 "give.")
    lines = [head]
    for verdict, lead in (("not reproduced", "Not reproduced"),
                          ("reproduced in kind", "Reproduced in kind (the claim holds, the "
                                                 "numbers differ)"),
                          ("check failed", "Checks of the book's own that failed")):
        sel = c[c["verdict"] == verdict]
        if len(sel):
            lines += ["", f"{lead}:", ""]
            lines += [f"* {_sentence(r, brief=verdict == 'reproduced in kind')}."
                      for r in sel.to_dict("records")]
    lines += ["", "Every row, with the paper-scale run beside it, is in the "
                  "{doc}`reproduction scorecard <../book/scorecard>`."]
    return "\n".join(lines) + "\n"


def outcome(df: pd.DataFrame, link: str = "scorecard") -> str:
    """The book's outcome in three sentences, for its first page: how many of the papers'
    claims hold (in number, in kind) and how many do not, where the ones that do not are, and
    that the book's own checks and new results are counted apart.

    Parameters
    ----------
    df : DataFrame
        Recorded rows (:func:`mrflib.repro.report.load_records`).
    link : str
        The scorecard page as a ``{doc}`` target from the page that shows the text.

    Returns
    -------
    str
        Markdown; a sentence saying so when nothing is recorded.
    """
    lacking = sorted(set(FIELDS) - set(df))
    if lacking:
        raise ValueError(f"df must have the recorded columns {FIELDS}; lacks {lacking}")
    scorecard = f"{{doc}}`reproduction scorecard <{link}>`"
    if df.empty:
        return (f"_No chapter has been run yet, so the {scorecard} has no claims to count._\n")
    c = claims(df.reset_index(drop=True))
    kinds = c["verdict"].map(kind)
    paper = c[kinds == "claim"]
    n = {v: int((paper["verdict"] == v).sum()) for v in CLAIM_VERDICTS}
    def are(k: int) -> str:
        return f"{k} is" if k == 1 else f"{k} are"

    first = (f"Of the {len(paper)} claims of the papers that the chapters check, "
             f"{are(n['reproduced'])} reproduced in number, {n['reproduced in kind']} in kind "
             f"(the claim holds, the numbers differ) and {are(n['not reproduced'])} not.")
    failing = paper[paper["verdict"] == "not reproduced"]
    if len(failing):
        where = failing.groupby("paper", sort=False).size()
        second = ("The claims not reproduced are " + ", ".join(
            f"{k} of {PAPER_TITLES.get(p, p)}" for p, k in where.items())
            + ", each with the paper's number, ours and the reason in the " + scorecard + ".")
    else:
        second = f"Every claim checked holds, in number or in kind (the {scorecard})."
    checks, new = c[kinds == "check"], c[kinds == "new"]
    failed = int((checks["verdict"] == "check failed").sum())
    third = (f"The book's own checks ({len(checks)}, {failed} failed) and its new results "
             f"({len(new)}, numbers no paper gives) are counted apart, never as a paper's.")
    return " ".join((first, second, third)) + "\n"
