"""Book pages generated from recorded numbers: the reproduction scorecard, and the page files.

The notebooks record paper-versus-ours numbers with :func:`mrflib.repro.experiments.record`
(one CSV per chapter); ``make bench`` writes one CSV per benchmark module into
``bench/results``. :func:`write_pages` turns both into MyST fragments that
``book/scorecard.md`` and ``book/performance.md`` include (and the layer table of
``book/architecture.md``); :func:`chapter_scorecard`
shows one chapter's rows at the end of its notebook.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from mrflib._support.validation import check_instance, check_path

from .experiments import FIELDS, PROFILES, _check_chapter, records
from .layers import layers_markdown
from .notation import table_cell
from .performance import load_bench, performance_markdown, performance_summary
from .scorecard import CLAIM_VERDICTS as _CLAIM_VERDICTS
from .scorecard import PAPER_TITLES as _PAPER_TITLES
from .scorecard import VERDICT_MARK as _VERDICT_MARK
from .scorecard import _count, claims, outcome
from .scorecard import kind as _kind

if TYPE_CHECKING:
    from pandas.io.formats.style import Styler

__all__ = ["load_records", "scorecard_markdown", "chapter_scorecard", "paper_figure",
           "write_pages"]

#: The committed paper-profile results (numbers, figures, provenance) of the book.
PAPER_RESULTS = Path(__file__).resolve().parents[2] / "book" / "results" / "paper"


def load_records(results: Path, published: bool = False) -> pd.DataFrame:
    """All recorded rows of every chapter CSV in ``results`` (empty frame if none).

    With ``published=True``, ``results`` is a folder of published paper-profile results
    (``book/results/paper``) and each CSV is first checked against the digest its
    ``provenance.json`` records (:func:`mrflib.repro.paper.check_published`: ``ValueError``
    for a file a stopped publish or an edit left behind).
    """
    results = check_path(results, "results")
    files = sorted(results.glob("*.csv")) if results.exists() else []
    if published:
        from .paper import check_published

        for f in files:
            check_published(results, f.stem)
    frames = [pd.read_csv(f, dtype=str, keep_default_na=False) for f in files]
    if not frames:
        return pd.DataFrame(columns=list(FIELDS))
    return pd.concat(frames, ignore_index=True)



def _badge(verdict: str) -> str:
    """A verdict as a styled word (``span.verdict``; the words alone read without the CSS)."""
    kind = "-".join(str(verdict).split()) or "none"
    return f'<span class="verdict verdict-{kind}">{_VERDICT_MARK.get(verdict, verdict)}</span>'


_KEY = ["chapter", "item", "quantity"]


def _paper_column(df: pd.DataFrame, paper: pd.DataFrame) -> tuple[list[str], list[str]]:
    """Per row of ``df``: the paper-profile value (flagged if its verdict differs); the
    flagged rows' descriptions."""
    ref = {tuple(r[k] for k in _KEY): r for r in paper.to_dict("records")}
    cells, differ = [], []
    for r in df.to_dict("records"):
        p = ref.get(tuple(r[k] for k in _KEY))
        if p is None:
            cells.append("not run at paper scale")
        elif p["verdict"] != r["verdict"]:
            cells.append(f"{table_cell(p['ours'])} <span class=\"verdict verdict-differs\">"
                         f"differs</span> verdict at paper scale: {_badge(p['verdict'])}")
            differ.append(f"{r['chapter']}: {r['item']}, {r['quantity']}")
        else:
            cells.append(table_cell(p["ours"]))
    return cells, differ


def _summary_lines(df: pd.DataFrame, claim: pd.DataFrame) -> list[str]:
    """The scorecard's opening: the claims of each paper per verdict, one row per paper;
    the book's own checks and new results are counted apart, never as a paper's claims."""
    order = list(_CLAIM_VERDICTS)
    short = {"reproduced in kind": "in kind"}  # narrow columns: the table fits the column
    header = "| paper | claims | " + " | ".join(short.get(v, v) for v in order) + " |"
    lines = [header, "|---" * (header.count("|") - 1) + "|"]
    paper = claim[claim["verdict"].isin(order)]
    for key, g in paper.groupby("paper", sort=False):
        counts = g["verdict"].value_counts()
        lines.append(f"| {table_cell(_PAPER_TITLES.get(key, key))} | {len(g)} | "
                     + " | ".join(str(counts.get(v, 0)) for v in order) + " |")
    lines.append(f"| all | {len(paper)} | " + " | ".join(
        str(int((paper["verdict"] == v).sum())) for v in order) + " |")
    kinds = claim["verdict"].map(_kind)
    checks, new = claim[kinds == "check"], claim[kinds == "new"]
    failed = int((checks["verdict"] == "check failed").sum())
    n_rows = int(df["verdict"].isin(order).sum())
    return [*lines, "", f"{len(paper)} claims of the papers, measured by {n_rows} recorded "
                        "numbers (a claim measured on several cases, such as a table's cells, "
                        "counts once; its numbers are folded under its paper's table). Apart "
                        f"from them: {_count(len(checks), 'check')} of the book's own "
                        f"({failed} failed) and {_count(len(new), 'new result')}, numbers no "
                        "paper gives, in their own tables below.", ""]


def _not_reproduced_lines(claim: pd.DataFrame, paper: pd.DataFrame | None) -> list[str]:
    """Every claim not reproduced, with the paper's value, ours and the reason (the note);
    then the items not reproduced only at the paper profile."""
    lines = []
    for r in claim[claim["verdict"] == "not reproduced"].to_dict("records"):
        lines.append(f"* **{table_cell(_PAPER_TITLES.get(r['paper'], r['paper']))}, "
                     f"{table_cell(r['item'])}** ({{doc}}`{r['chapter']} <../notebooks/"
                     f"{r['chapter']}>`): {table_cell(r['quantity'])}. The paper: "
                     f"{table_cell(r['paper_value']) or 'not given'}; "
                     f"ours: {table_cell(r['ours'])}."
                     + (f" Why: {table_cell(r['note'])}." if r["note"].strip() else ""))
    if paper is not None and not paper.empty:
        mine = claim.set_index(["chapter", "item", "verdict"]).index
        for r in paper[paper["verdict"] == "not reproduced"].to_dict("records"):
            if (r["chapter"], r["item"], "not reproduced") in mine:
                continue
            lines.append(f"* **{table_cell(_PAPER_TITLES.get(r['paper'], r['paper']))}, "
                         f"{table_cell(r['item'])}** ({{doc}}`{r['chapter']} <../notebooks/"
                         f"{r['chapter']}>`), at the paper profile only: "
                         f"{table_cell(r['quantity'])}. The paper: {table_cell(r['paper_value'])}; "
                         f"ours: {table_cell(r['ours'])}."
                         + (f" Why: {table_cell(r['note'])}." if r["note"].strip() else ""))
    if not lines:
        return ["Every claim of the papers checked was reproduced, in number or in kind.", ""]
    return [f"**Not reproduced** ({len(lines)}):", "", *lines, ""]


#: What the two tables apart from the papers' claims hold.
_SECTION_LEAD = {
    "check": "Checks the book sets itself (a target of this project, a cross-check against a "
             "peer library or a known value): they test the library, not a paper, and are "
             "never counted among a paper's claims.",
    "new": "Numbers no paper gives (a baseline a paper omits, a paper's method run on data or "
           "models it was not shown on): they are reported, not judged against a paper.",
}


#: The longest one-line reason of a claim in a paper's summary table (characters); the whole
#: note is in the claim's details.
_REASON_CHARS = 90


def _reason(r: dict) -> str:
    """A claim's one-line reason for the summary table: its note's first clause (at most
    :data:`_REASON_CHARS` characters, cut at a word), else its quantity."""
    text = " ".join(str(r["note"]).split()) or " ".join(str(r["quantity"]).split())
    first = text.split("; ")[0]
    if len(first) > _REASON_CHARS:
        first = first[:_REASON_CHARS].rsplit(" ", 1)[0] + " …"
    return table_cell(first + (" …" if first != text and not first.endswith("…") else ""))


def _claim_table(df: pd.DataFrame, g: pd.DataFrame, cells: list[str], with_paper: bool,
                 reference: str, title: str = "") -> list[str]:
    """One paper's claims ``g`` (rows of :func:`mrflib.repro.scorecard.claims` of ``df``):
    a summary of three columns (claim, verdict, one-line reason) that fits the text column,
    then a folded block with each claim's measured numbers (quantity, ``reference``: the
    recorded ``paper_value``, ours and, ``with_paper``, the paper-profile value) and its note
    in full beneath its table."""
    many = len(set(g["chapter"])) > 1

    def claim_name(r) -> str:
        return table_cell(r["item"]) + (f" ({{doc}}`{r['chapter']} <../notebooks/"
                                   f"{r['chapter']}>`)" if many else "")

    lines = ["| claim | verdict | reason |", "|---|---|---|"]
    lines += [f"| {claim_name(r)} | {_badge(r['verdict'])} | {_reason(r)} |"
              for r in g.to_dict("records")]
    header = f"| quantity | {reference} | ours |" + (" ours, paper profile |" if with_paper
                                                     else "")
    rule = "|---" * (header.count("|") - 1) + "|"
    what = title or table_cell(_PAPER_TITLES.get(g["paper"].iloc[0], g["paper"].iloc[0]))
    n = int(g["n"].sum())
    lines += ["", f":::{{dropdown}} Details: the {_count(n, 'measured number')} of {what}"]
    for r in g.to_dict("records"):
        lines += ["", f"**{claim_name(r)}**, {_badge(r['verdict'])}", "", header, rule]
        for i in r["rows"]:
            m = df.loc[i]
            lines.append(f"| {table_cell(m['quantity'])} | {table_cell(m['paper_value'])} | "
                         f"{table_cell(m['ours'])} |" + (f" {cells[i]} |" if with_paper else ""))
        if str(r["note"]).strip():
            lines += ["", table_cell(r["note"])]
    return [*lines, ":::"]


#: At most this many items are listed in a sentence; more are folded in a list.
_INLINE_ITEMS = 3


def scorecard_markdown(df: pd.DataFrame, paper: pd.DataFrame | None = None) -> str:
    """The reproduction scorecard: per-paper summary, the claims not reproduced, one table per
    paper with one row per claim (:func:`mrflib.repro.scorecard.claims`) and its measured
    numbers folded beneath; then the book's own checks and the new results, each in a table of
    its own and never counted among a paper's claims.

    Parameters
    ----------
    df : DataFrame
        The recorded rows of the build being read (:func:`load_records`).
    paper : DataFrame, optional
        The committed paper-profile rows (``book/results/paper``). When given, a column shows
        each item's paper-profile value beside this build's, flagging ("differs") every item whose
        verdict differs between the two, and the summary lists those items.
    """
    check_instance(df, pd.DataFrame, "df")
    if df.empty:
        return "_No recorded results: the notebooks have not been executed._\n"
    for name, frame in (("df", df), ("paper", paper)):
        if frame is not None:
            check_instance(frame, pd.DataFrame, name)
        lacking = [] if frame is None or frame.empty else sorted(set(FIELDS) - set(frame))
        if lacking:
            raise ValueError(f"{name} must have the recorded columns {FIELDS}; lacks {lacking}")
    df = df.reset_index(drop=True)
    claim = claims(df)
    lines = _summary_lines(df, claim) + _not_reproduced_lines(claim, paper)
    cells: list[str] = []
    if paper is not None:
        cells, differ = _paper_column(df, paper)
        covered = sum(c != "not run at paper scale" for c in cells)
        keys = set(map(tuple, df[_KEY].to_numpy().tolist()))
        only = [f"{r['chapter']}: {r['item']}, {r['quantity']} ({r['ours']}, "
                f"{_badge(r['verdict'])})"
                for r in paper.to_dict("records") if tuple(r[k] for k in _KEY) not in keys]
        # a long list folds away: the page stays short, the items stay one click away
        few = len(differ) <= _INLINE_ITEMS
        lines += [f"Paper profile (committed run, `book/results/paper/`): {covered} of "
                      f"{len(df)} items measured; verdict differs from this build's for "
                      f"{len(differ)}" + (": " + "; ".join(differ) if differ and few else "")
                  + ".", ""]
        if not few:
            lines += [f":::{{dropdown}} The {len(differ)} items whose verdict differs", "",
                      *(f"* {d}" for d in differ), ":::", ""]
        if only:
            lines += [f":::{{dropdown}} Measured only at the paper profile ({len(only)} items)",
                      "", *(f"* {o}" for o in only), ":::", ""]
    cells = cells or [""] * len(df)
    kinds = claim["verdict"].map(_kind)
    for key, g in claim[kinds == "claim"].groupby("paper", sort=False):
        links = ", ".join(f"{{doc}}`{c} <../notebooks/{c}>`" for c in dict.fromkeys(g["chapter"]))
        lines += ["", f"**{table_cell(_PAPER_TITLES.get(key, key))}** (chapter {links})", ""]
        lines += _claim_table(df, g, cells, paper is not None, "paper")
    for which, title, reference in (
            ("check", "The book's own checks", "expected"),
            ("new", "New results", "reference")):
        g = claim[kinds == which]
        if len(g):
            # a bold title, not a heading: the scorecard page includes this inside a container
            lines += ["", f"**{title}.** {_SECTION_LEAD[which]}", ""]
            lines += _claim_table(df, g, cells, paper is not None, reference, title=title)
    profiles = sorted(set(df["profile"]) - {""})
    if profiles:
        lines += ["", f"Measured in profile(s): {', '.join(profiles)}."]
    return "\n".join(lines) + "\n"


_CHAPTER_TABLE_CSS = [
    {"selector": "caption", "props": "caption-side: top; text-align: left; padding: 4px 0"},
    {"selector": "th", "props": "text-align: left; padding: 4px 8px; "
                                "border-bottom: 1px solid #888"},
    {"selector": "td", "props": "text-align: left; vertical-align: top; padding: 4px 8px; "
                                "border-bottom: 1px solid #ddd"},
]


def chapter_scorecard(chapter: str) -> Styler:
    """The scorecard rows one chapter recorded in this process, as a table to display.

    A chapter notebook ends with ``report.chapter_scorecard(CHAPTER)``: the rows it
    recorded with :func:`mrflib.repro.experiments.record`, with the columns of the book's
    reproduction scorecard, every text in full (no truncation).

    Parameters
    ----------
    chapter : str
        The notebook's file stem, as passed to :func:`mrflib.repro.experiments.record`.

    Returns
    -------
    pandas.io.formats.style.Styler
        Its ``data`` is a DataFrame with one row per recorded item and the columns
        ``item``, ``quantity``, ``paper``, ``ours``, ``verdict`` and ``note``; the caption
        names the profile(s) the numbers were measured in. Displaying it needs ``jinja2``
        (installed with the ``book`` extras).
    """
    if not isinstance(chapter, str) or not chapter:
        raise ValueError(f"chapter must be a non-empty notebook stem, got {chapter!r}")
    rows = records(chapter)
    table = pd.DataFrame({
        "item": rows["item"], "quantity": rows["quantity"], "paper": rows["paper_value"],
        "ours": rows["ours"], "verdict": rows["verdict"], "note": rows["note"],
    }).reset_index(drop=True)
    profiles = sorted(set(rows["profile"]) - {""})
    caption = f"{len(table)} rows recorded by {chapter}"
    if profiles:
        caption += f", profile {', '.join(profiles)}"
    return (table.style.hide(axis="index").format(escape="html").set_caption(caption)
            .set_table_styles(_CHAPTER_TABLE_CSS))


def paper_figure(chapter: str, name: str, profile: str,
                 folder: str | Path | None = None) -> None:
    """Show the committed paper-profile version of figure ``name`` with its provenance.

    A chapter calls this after drawing a figure at its own profile: the reader sees the same
    figure from the committed paper-scale run (``book/results/paper/figures/<name>.png``,
    written by ``python -m mrflib paper --publish``) with the commit, date and run time of
    that run. Nothing is shown when the chapter itself runs at ``profile="paper"``; a note is
    shown when the chapter has not been run at paper scale yet.

    Parameters
    ----------
    chapter : str
        The chapter (notebook stem) whose paper-scale run drew it.
    name : str
        The figure's name (the ``mystnb.figure.name`` of the cell that draws it).
    profile : str
        The running notebook's profile.
    folder : path, optional
        The paper results folder (default: the repository's ``book/results/paper``).

    Raises
    ------
    ValueError
        The folder's ``provenance.json`` is damaged (:func:`mrflib.repro.paper.read_provenance`),
        or the figure is not the one it records (:func:`mrflib.repro.paper.check_published`).
    """
    from IPython.display import Image, Markdown, display

    from .paper import check_published, read_provenance

    _check_chapter(chapter)
    if not isinstance(name, str) or not name or "/" in name:
        raise ValueError(f"name must be a figure name without '/', got {name!r}")
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, got {profile!r}")
    if profile == "paper":
        return
    folder = PAPER_RESULTS if folder is None else check_path(folder, "folder")
    png = folder / "figures" / f"{name}.png"
    run = read_provenance(folder).get(chapter)  # ValueError naming a damaged file
    if not png.exists() or run is None:
        display(Markdown(f"_The paper-scale version of this figure is not committed yet "
                         f"(`python -m mrflib paper notebooks/{chapter}.ipynb --chunks 8 "
                         f"--publish book/results/paper`)._"))
        return
    check_published(folder, chapter, name)  # ValueError: not the published bytes
    display(Image(data=png.read_bytes(), format="png"))
    display(Markdown(f"_At the paper profile: commit `{run['commit'][:12]}`, "
                     f"{run['date_utc'][:10]}, {run['machine']}; "
                     f"{(run['chunk_wall_s'] + run['merge_s']) / 60:.0f} min of wall time "
                     f"(`book/results/paper/PROVENANCE.md`)._"))


def write_pages(results: Path, bench_results: Path, book_dir: Path,
                paper_results: Path | None = None) -> None:
    """Write ``_scorecard_table.md``, ``_outcome.md`` (the intro's three sentences,
    :func:`mrflib.repro.scorecard.outcome`), ``_performance_tables.md`` and figures to
    ``book_dir``, and ``_layers_table.md`` (:func:`mrflib.repro.layers.layers_markdown`, the
    Architecture page's layers as ``pyproject.toml``'s import-linter contract states them).

    ``paper_results`` is the folder of committed paper-profile rows (``book/results/paper``);
    the scorecard shows them beside the build's own, and ``_paper_runs.md`` (its provenance
    table: commit, date, machine, command and wall times per chapter).
    """
    book_dir = Path(book_dir)
    paper = None if paper_results is None else load_records(paper_results, published=True)
    recorded = load_records(results)
    (book_dir / "_scorecard_table.md").write_text(scorecard_markdown(recorded, paper))
    (book_dir / "_outcome.md").write_text(outcome(recorded))
    if paper_results is not None:
        from .paper import provenance_markdown, read_provenance

        (book_dir / "_paper_runs.md").write_text(
            provenance_markdown(read_provenance(paper_results), title=False,
                                narrow=True))
    machine = Path(bench_results) / "machine.txt"
    bench = load_bench(bench_results)
    (book_dir / "_performance_summary.md").write_text(
        performance_summary(bench, book_dir / "_perf", "_perf"))
    text = performance_markdown(bench, book_dir / "_perf", "_perf")
    if machine.exists():
        lines = [line for line in machine.read_text().splitlines() if line.strip()]
        text = ("Machines (the topic whose rows each measured, as `bench/results/"
                "machine.txt` records it):\n\n" + "".join(f"- {line}\n" for line in lines)
                + "\n" + text)
    (book_dir / "_performance_tables.md").write_text(text)
    (book_dir / "_layers_table.md").write_text(layers_markdown())
