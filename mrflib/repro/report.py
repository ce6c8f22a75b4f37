"""Book pages generated from recorded numbers: the reproduction scorecard and performance.

The notebooks record paper-versus-ours numbers with :func:`mrflib.repro.experiments.record`
(one CSV per chapter); ``make bench`` writes one CSV per benchmark module into
``bench/results``. :func:`write_pages` turns both into MyST fragments that
``book/scorecard.md`` and ``book/performance.md`` include (and the layer table of
``book/architecture.md``); :func:`chapter_scorecard`
shows one chapter's rows at the end of its notebook.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from mrflib._support.validation import check_instance, check_path

from . import palette
from .experiments import FIELDS, PROFILES, _check_chapter, records
from .layers import layers_markdown
from .notation import typeset
from .scorecard import CLAIM_VERDICTS as _CLAIM_VERDICTS
from .scorecard import PAPER_TITLES as _PAPER_TITLES
from .scorecard import VERDICT_MARK as _VERDICT_MARK
from .scorecard import _count, claims, outcome
from .scorecard import kind as _kind

if TYPE_CHECKING:
    from pandas.io.formats.style import Styler

__all__ = ["load_records", "load_bench", "bench_ratio", "scorecard_markdown", "chapter_scorecard",
           "paper_figure", "performance_summary", "performance_markdown", "peer_figure",
           "write_pages",
           "PEER_COMPARISONS"]

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


def load_bench(bench_results: Path) -> pd.DataFrame:
    """All benchmark rows of ``bench/results/*.csv`` (empty frame if none)."""
    bench_results = check_path(bench_results, "bench_results")
    files = sorted(bench_results.glob("*.csv")) if bench_results.exists() else []
    frames = [pd.read_csv(f, keep_default_na=False).assign(module=f.stem) for f in files]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


#: The benchmark results ``make bench`` writes (one CSV per bench module).
BENCH_RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results"


def bench_ratio(module: str, benchmark: str, method: str, baseline: str,
                bench_results: Path | None = None) -> dict | None:
    """The speed-up of the last (largest) case of one benchmark, as ``make bench`` recorded it.

    A quantity quoted on several pages (such as the speed-up over pgmpy) is measured once, by
    the benchmark, and every page reads it from here.

    Returns
    -------
    dict or None
        ``case``, ``ratio`` (baseline time / ours, same run), ``seconds`` and ``note`` of the
        last row of ``bench/results/<module>.csv`` matching ``benchmark``, ``method`` and
        ``baseline`` exactly; None when there is none (the benchmark has not been run).
    """
    bench = load_bench(BENCH_RESULTS if bench_results is None else bench_results)
    if bench.empty:
        return None
    sel = bench[(bench["module"] == module) & (bench["benchmark"] == benchmark)
                & (bench["method"] == method) & (bench["baseline"] == baseline)]
    sel = sel.assign(r=_num(sel["ratio"])).dropna(subset=["r"])
    if sel.empty:
        return None
    last = sel.iloc[-1]
    return {"case": str(last["case"]), "ratio": float(last["r"]),
            "seconds": float(last["seconds"]), "note": str(last["note"])}


def _cell(text: object) -> str:
    """``text`` for a Markdown table cell: one line, its notation typeset
    (:func:`mrflib.repro.notation.typeset`: ``<``, ``>``, ``&`` of the text as entities, so a
    quantity such as ``<dH>`` is never read as an HTML tag), ``|`` escaped."""
    return typeset(text).replace("|", "\\|").replace("\n", " ")


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
            cells.append(f"{_cell(p['ours'])} <span class=\"verdict verdict-differs\">"
                         f"differs</span> verdict at paper scale: {_badge(p['verdict'])}")
            differ.append(f"{r['chapter']}: {r['item']}, {r['quantity']}")
        else:
            cells.append(_cell(p["ours"]))
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
        lines.append(f"| {_cell(_PAPER_TITLES.get(key, key))} | {len(g)} | "
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
        lines.append(f"* **{_cell(_PAPER_TITLES.get(r['paper'], r['paper']))}, "
                     f"{_cell(r['item'])}** ({{doc}}`{r['chapter']} <../notebooks/"
                     f"{r['chapter']}>`): {_cell(r['quantity'])}. The paper: "
                     f"{_cell(r['paper_value']) or 'not given'}; ours: {_cell(r['ours'])}."
                     + (f" Why: {_cell(r['note'])}." if r["note"].strip() else ""))
    if paper is not None and not paper.empty:
        mine = claim.set_index(["chapter", "item", "verdict"]).index
        for r in paper[paper["verdict"] == "not reproduced"].to_dict("records"):
            if (r["chapter"], r["item"], "not reproduced") in mine:
                continue
            lines.append(f"* **{_cell(_PAPER_TITLES.get(r['paper'], r['paper']))}, "
                         f"{_cell(r['item'])}** ({{doc}}`{r['chapter']} <../notebooks/"
                         f"{r['chapter']}>`), at the paper profile only: "
                         f"{_cell(r['quantity'])}. The paper: {_cell(r['paper_value'])}; "
                         f"ours: {_cell(r['ours'])}."
                         + (f" Why: {_cell(r['note'])}." if r["note"].strip() else ""))
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
    return _cell(first + (" …" if first != text and not first.endswith("…") else ""))


def _claim_table(df: pd.DataFrame, g: pd.DataFrame, cells: list[str], with_paper: bool,
                 reference: str, title: str = "") -> list[str]:
    """One paper's claims ``g`` (rows of :func:`mrflib.repro.scorecard.claims` of ``df``):
    a summary of three columns (claim, verdict, one-line reason) that fits the text column,
    then a folded block with each claim's measured numbers (quantity, ``reference``: the
    recorded ``paper_value``, ours and, ``with_paper``, the paper-profile value) and its note
    in full beneath its table."""
    many = len(set(g["chapter"])) > 1

    def claim_name(r) -> str:
        return _cell(r["item"]) + (f" ({{doc}}`{r['chapter']} <../notebooks/"
                                   f"{r['chapter']}>`)" if many else "")

    lines = ["| claim | verdict | reason |", "|---|---|---|"]
    lines += [f"| {claim_name(r)} | {_badge(r['verdict'])} | {_reason(r)} |"
              for r in g.to_dict("records")]
    header = f"| quantity | {reference} | ours |" + (" ours, paper profile |" if with_paper
                                                     else "")
    rule = "|---" * (header.count("|") - 1) + "|"
    what = title or _cell(_PAPER_TITLES.get(g["paper"].iloc[0], g["paper"].iloc[0]))
    n = int(g["n"].sum())
    lines += ["", f":::{{dropdown}} Details: the {_count(n, 'measured number')} of {what}"]
    for r in g.to_dict("records"):
        lines += ["", f"**{claim_name(r)}**, {_badge(r['verdict'])}", "", header, rule]
        for i in r["rows"]:
            m = df.loc[i]
            lines.append(f"| {_cell(m['quantity'])} | {_cell(m['paper_value'])} | "
                         f"{_cell(m['ours'])} |" + (f" {cells[i]} |" if with_paper else ""))
        if str(r["note"]).strip():
            lines += ["", _cell(r["note"])]
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
        lines += ["", f"**{_cell(_PAPER_TITLES.get(key, key))}** (chapter {links})", ""]
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


def _num(series) -> pd.Series:
    return pd.to_numeric(series, errors="coerce") if series is not None else None


def _slug(text: str) -> str:
    out = "".join(ch if ch.isalnum() else "-" for ch in str(text).lower())
    return "-".join(filter(None, out.split("-")))[:60]


def _with_sizes(b: pd.DataFrame) -> pd.DataFrame:
    """``b`` with numeric ``size``/``size_unit``: the module's own columns, or else the
    first ``name = number`` in the case text (``"N=14 SK"`` -> 14, ``"N"``)."""
    if "size" in b and _num(b["size"]).notna().any():
        return b.assign(size=_num(b["size"]))
    found = b["case"].astype(str).str.extract(r"\b([A-Za-z]\w*)\s*=\s*(\d[\d,]*)\b")
    return b.assign(size=pd.to_numeric(found[1].str.replace(",", ""), errors="coerce"),
                    size_unit=found[0])


def _scaling(b: pd.DataFrame) -> list[tuple[str, np.ndarray, np.ndarray, float]]:
    """``(label, sizes, seconds, fitted exponent)`` for every curve with >= 2 sizes.

    A curve is the rows of one ``method`` (and ``group`` if the module gives one),
    one time per size (the smallest if repeated against several baselines)."""
    b = _with_sizes(b)
    if b["size"].notna().sum() < 2:
        return []
    b = b.assign(seconds=_num(b["seconds"]))
    keys = ["group", "method"] if "group" in b and b["group"].astype(str).str.len().any() \
        else ["method"]
    curves = []
    for key, c in b.dropna(subset=["size", "seconds"]).groupby(keys, sort=False):
        c = c.groupby("size", sort=True)["seconds"].min()
        if len(c) < 2 or (c <= 0).any():
            continue
        x, y = c.index.to_numpy(float), c.to_numpy(float)
        slope = float(np.polyfit(np.log(x), np.log(y), 1)[0])
        label = " · ".join(str(k) for k in (key if isinstance(key, tuple) else (key,)))
        curves.append((label, x, y, slope))
    return curves


def _unit(b: pd.DataFrame) -> str:
    units = _with_sizes(b).get("size_unit")
    units = units.dropna() if units is not None else []
    return str(units.iloc[0]) if len(units) else "size"


def _target(b: pd.DataFrame) -> pd.Series:
    """Each row's throughput target (optional ``target`` column, in ``rate_unit``; NaN)."""
    return _num(b["target"]) if "target" in b else pd.Series(np.nan, index=b.index)


def _targets(b: pd.DataFrame) -> pd.DataFrame:
    """Rows with a throughput target."""
    return b.assign(target_value=_target(b), rate_value=_num(b["rate"])).dropna(
        subset=["target_value", "rate_value"])


def _target_verdicts(b: pd.DataFrame) -> list[str]:
    """Per target: how many rows reach it, with the throughput each reached."""
    out = []
    for (target, unit), r in _targets(b).groupby(["target_value", "rate_unit"], sort=False):
        met = int((r["rate_value"] >= target).sum())
        reached = ", ".join(f"{x.rate_value:.3g} ({x.case})" for x in r.itertuples())
        word = "met" if met == len(r) else "not met" if met == 0 else "met in part"
        out.append(f"target {target:.3g} {unit} {word} ({met} of {len(r)} rows): "
                   f"reached {reached}")
    return out


def _verdict(b: pd.DataFrame, curves) -> str:
    """One line a reader can take away: speed-ups against each baseline, growth rates."""
    parts = []
    ratio = _num(b.get("ratio"))
    for base, r in b.assign(_r=ratio).dropna(subset=["_r"]).groupby("baseline", sort=False):
        v = r["_r"].to_numpy(float)
        if len(v) == 1:
            parts.append(f"{v[0]:.3g}× faster than {base}" if v[0] >= 1 else
                         f"{1 / v[0]:.3g}× the time of {base}")
            continue
        parts.append(f"against {base}: faster in {int((v > 1).sum())} of {len(v)} cases, "
                     f"median {np.median(v):.3g}× (range {v.min():.2g}–{v.max():.3g}×)")
    if curves:
        slopes = [c[3] for c in curves]
        unit = _unit(b)
        parts.append(f"time grows as {unit}^p with p from {min(slopes):.2f} to "
                     f"{max(slopes):.2f}")
        parts += _crossings(curves, unit)
    parts += _target_verdicts(b)
    rate = _num(b.get("rate"))
    if not parts and rate is not None and rate.notna().any():
        i = rate.idxmax()
        unit = str(b.loc[i, "rate_unit"]).strip()
        parts.append(f"the best {unit or 'rate'} measured is {rate[i]:.3g}, on "
                     f"{_cell(b.loc[i, 'case'])}")
    return ("**Verdict:** " + "; ".join(parts) + ".") if parts else ""


def _crossings(curves, unit: str) -> list[str]:
    """Where the two cost curves of a benchmark of two methods cross (a method dearer on
    small problems and cheaper on large ones), by linear interpolation of log time against
    size over the sizes both measure; nothing for any other number of curves."""
    if len(curves) != 2:
        return []
    (la, xa, ya, _), (lb, xb, yb, _) = curves
    grid = np.union1d(xa, xb)
    grid = grid[(grid >= max(xa.min(), xb.min())) & (grid <= min(xa.max(), xb.max()))]
    if len(grid) < 2:
        return []
    gap = np.interp(grid, xa, np.log(ya)) - np.interp(grid, xb, np.log(yb))
    flips = np.flatnonzero(np.sign(gap[:-1]) * np.sign(gap[1:]) < 0)
    if not len(flips):
        return [f"{lb if gap[0] > 0 else la} is the cheaper over all {unit} from "
                f"{grid[0]:g} to {grid[-1]:g}"]
    i = flips[0]
    at = grid[i] + (grid[i + 1] - grid[i]) * gap[i] / (gap[i] - gap[i + 1])
    dear, cheap = (la, lb) if gap[i] > 0 else (lb, la)
    return [f"the cost curves cross at {unit} ≈ {at:.3g}: {dear} costs more than {cheap} "
            f"below it and less above it"]


#: The Performance page's figures are drawn this wide (inches, at 100 dpi): no wider than
#: the text column (672 px at a 1280 px window), so they are shown at their own size and
#: their text of ``FIG_FONT_PT`` points reads at that size (10 pt at 100 dpi is 10.4 pt on a
#: 96 dpi page).
_FIG_WIDTH = 6.7
FIG_FONT_PT = 10
#: More cases than this: a panel draws the sorted profile of its values, not one labelled
#: row per case.
_MAX_ROWS = 14


def _label(text: object, width: int = 40) -> str:
    """A short label for a tick or a legend entry: at most ``width`` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[:width - 1] + "…"


def _styles(names) -> list[tuple[str, str]]:
    """``(colour, marker)`` of each series of one panel: the palette's for a method or peer,
    else a categorical colour; a series whose method is already drawn in the panel (such as
    "1-smci" and "1-smci (new samples)") gets the next categorical colour and marker, so
    that no two series of a panel look alike."""
    out: list[tuple[str, str]] = []
    for k, name in enumerate(names):
        method = palette.lookup(str(name))
        style = palette.METHODS[method] if method else (palette.categorical(k), "osD^v<>"[k % 7])
        j = k
        while style in out:
            j += 1
            style = (palette.categorical(j), "osD^v<>ph"[j % 9])
        out.append(style)
    return out


def _strongest(b: pd.DataFrame) -> pd.DataFrame:
    """Per case (and method), the ratio against the strongest baseline: the fastest one,
    whose time over ours is the smallest ratio."""
    r = b.assign(_r=_num(b.get("ratio"))).dropna(subset=["_r"])
    r = r[r["_r"] > 0]
    if r.empty:
        return r
    keys = ["case", "method"] if r["method"].nunique() > 1 else ["case"]
    return r.loc[r.groupby(keys, sort=False)["_r"].idxmin()]


def _panels(b: pd.DataFrame, curves) -> list[tuple[str, object, str]]:
    """The one view of a benchmark worth a panel, as ``(kind, data, what it shows)``: the
    scores of a contest; time against size; the speed-up against the strongest baseline;
    throughput against a target; each method's time per case. Nothing for a view of a
    single value (the verdict and the table say it)."""
    if _scored(b):
        table = _per_case(b)
        return [("score", table, "each solver's score per problem")] if len(table) else []
    if 0 < len(curves) <= 6:  # more curves than that: a legend, not a figure
        return [("scaling", curves, "time against size (log-log, fitted exponent p)")]
    ratios = _strongest(b)
    if len(ratios) >= 2:
        return [("ratio", ratios, "speed-up against the strongest baseline")]
    targets = _targets(b)
    if len(targets) >= 2:
        return [("target", targets, "throughput against its target")]
    per_case = _per_case(b)
    if len(per_case):
        return [("per-case", per_case, "each method's time per problem")]
    return []


def _panel_height(kind: str, data) -> float:
    rows = len(data)
    if kind in ("ratio", "target") and rows <= _MAX_ROWS:
        return 0.24 * rows + 1.5
    if kind == "per-case" and rows <= _MAX_ROWS:
        return 0.24 * rows * max(1, data.shape[1]) / 2 + 1.5
    return 2.9


def _legend_above(ax, ncol: int = 2) -> None:
    """The panel's legend above its data, never on it: as many columns as fit the width."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return
    # about 0.6 em a character at FIG_FONT_PT, plus the marker: columns that fit 6.3 in
    width = max(len(t) for t in labels) * 0.6 * FIG_FONT_PT / 72 + 0.45
    ncol = max(1, min(len(labels), int(6.3 // width)))
    ax.legend(handles, labels, loc="lower left", bbox_to_anchor=(0, 1.02), ncol=ncol,
              frameon=False, borderaxespad=0, handletextpad=0.4, columnspacing=1.0)


def _short_labels(labels: list[str]) -> tuple[list[str], str]:
    """``labels`` without the words they all begin with, and those words (for the title):
    ``["4x4 lattice, N = 20 · mple", "4x4 lattice, N = 20 · rm"]`` -> ``["mple", "rm"]``."""
    if len(labels) < 2:
        return labels, ""
    words = [re.split(r"(?<=[\s,·])", t) for t in labels]
    k = 0
    while all(len(w) > k + 1 and w[k] == words[0][k] for w in words):
        k += 1
    common = "".join(words[0][:k]).strip(" ,·")
    return ["".join(w[k:]).strip() for w in words], common


def _log_ticks(axis) -> None:
    """Readable ticks on a log axis of any span: 1-2-5 steps within a decade or two, powers
    of ten beyond, plain numbers, no minor labels."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    low, high = sorted(axis.get_view_interval())
    span = np.log10(high / low) if low > 0 else 3.0
    subs = (1.0, 2.0, 5.0) if span < 1.5 else (1.0,)
    axis.set_major_locator(LogLocator(base=10, subs=subs, numticks=12))
    if span > 6:
        axis.set_major_locator(LogLocator(base=10, subs=(1.0,), numticks=6))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def _ratio_panel(ax, ratios: pd.DataFrame) -> str:
    """Speed-up against the strongest baseline of each case (log axis, 1: as fast): one
    labelled row per case, or the sorted profile when there are many cases; colour and
    marker: which baseline was the strongest."""
    bases = list(dict.fromkeys(ratios["baseline"].astype(str)))
    styles = _styles(bases)
    many = len(ratios) > _MAX_ROWS
    order = ratios.sort_values("_r").reset_index(drop=True) if many else \
        ratios.reset_index(drop=True)
    for k, base in enumerate(bases):
        sel = order[order["baseline"].astype(str) == base]
        pos = sel.index.to_numpy()
        kw = dict(color=styles[k][0], marker=styles[k][1], ls="none", ms=6,
                  label=f"vs {_label(base, 40)}")
        if many:
            ax.plot(pos + 1, sel["_r"], **kw)
        else:
            ax.plot(sel["_r"], pos, **kw)
    if many:
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_yscale("log")
        ax.axhline(1.0, color=palette.GUIDE, lw=1)
        ax.set_xlabel(f"the {len(order)} cases, sorted by speed-up")
        ax.set_ylabel("speed-up (log)")
    else:
        ax.set_xscale("log")
        ax.axvline(1.0, color=palette.GUIDE, lw=1)
        labels, common = _short_labels(
            [f"{r.case} · {r.method}" if order["method"].nunique() > 1 else str(r.case)
             for r in order.itertuples()])
        ax.set_yticks(range(len(order)), [_label(t) for t in labels])
        ax.set_ylim(len(order) - 0.5, -0.5)
        ax.set_xlabel("speed-up: baseline time / ours (log; right of 1: ours faster)")
        ax.set_xlim(min(order["_r"].min(), 1.0) / 1.5, max(order["_r"].max(), 1.0) * 1.5)
        _log_ticks(ax.xaxis)
        _legend_above(ax)
        return common
    ax.set_xlim(0, len(order) + 1)
    _log_ticks(ax.yaxis)
    _legend_above(ax)
    return ""


def _scaling_panel(ax, curves, unit: str) -> None:
    styles = _styles([c[0] for c in curves])
    for (label, x, y, slope), (col, mark) in zip(curves, styles):
        ax.loglog(x, y, "-", color=col, marker=mark, ms=5,
                  label=f"{_label(label, 28)} (p = {slope:.2f})")
    ax.set_xlabel(f"{unit} (log)")
    ax.set_ylabel("seconds (log)")
    _log_ticks(ax.xaxis)
    _log_ticks(ax.yaxis)
    _legend_above(ax)


def _score_panel(ax, table: pd.DataFrame) -> None:
    """Each solver's score per problem (0 to 100, higher is better), problems sorted by
    score per solver: a profile that reads the same for 5 problems or 150."""
    for method, (col, mark) in zip(table.columns, _styles(table.columns)):
        v = np.sort(table[method].fillna(0.0).to_numpy(float))[::-1]
        ax.plot(np.arange(1, len(v) + 1), v, "-", color=col, marker=mark, ms=4,
                label=_label(method, 30))
    ax.set_ylim(-3, 103)
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(f"problems, sorted by score ({len(table)} problems)")
    ax.set_ylabel("score (0 to 100)")
    _legend_above(ax, ncol=3)


def _per_case_panel(ax, table: pd.DataFrame) -> None:
    """Each method's time on each case (log scale): dots, one row per case."""
    many = len(table) > _MAX_ROWS
    for method, (col, mark) in zip(table.columns, _styles(table.columns)):
        v = table[method].to_numpy(float)
        kw = dict(color=col, marker=mark, ls="none", ms=6, label=_label(method, 30))
        if many:
            v = np.sort(v[np.isfinite(v)])
            ax.plot(np.arange(1, len(v) + 1), v, **kw)
        else:
            ax.plot(v, np.arange(len(table)), **kw)
    if many:
        ax.set_yscale("log")
        ax.set_xlabel(f"problems, sorted by time ({len(table)} problems)")
        ax.set_ylabel("seconds (log)")
        _log_ticks(ax.yaxis)
    else:
        ax.set_xscale("log")
        ax.set_xlabel("seconds (log; no dot: skipped)")
        ax.set_yticks(range(len(table)), [_label(c) for c in table.index])
        ax.set_ylim(len(table) - 0.5, -0.5)
        _log_ticks(ax.xaxis)
    _legend_above(ax, ncol=3)


def _target_panel(ax, targets: pd.DataFrame) -> None:
    """Throughput of each row with a target (dots), the target as a dashed line."""
    met = (targets["rate_value"] >= targets["target_value"]).to_numpy()
    y = np.arange(len(targets))
    rate = targets["rate_value"].to_numpy(float)
    ax.plot(rate[met], y[met], "o", color=palette.categorical(0), ms=7, label="target met")
    ax.plot(rate[~met], y[~met], "X", color=palette.categorical(3), ms=7,
            label="target not met")
    for t in dict.fromkeys(targets["target_value"]):
        ax.axvline(t, color=palette.REFERENCE, ls="--", lw=1, label=f"target {t:.3g}")
    ax.set_xscale("log")
    low = min(targets["rate_value"].min(), targets["target_value"].min())
    high = max(targets["rate_value"].max(), targets["target_value"].max())
    ax.set_xlim(low / 3, high * 3)
    ax.set_yticks(y, [_label(r.case) for r in targets.itertuples()])
    ax.set_ylim(len(targets) - 0.5, -0.5)
    ax.set_xlabel(f"{targets['rate_unit'].iloc[0]} (log)")
    _log_ticks(ax.xaxis)
    _legend_above(ax, ncol=3)


def _draw(ax, kind: str, data, b: pd.DataFrame) -> str:
    """Draw one panel; the words its labels share, for its title."""
    if kind == "ratio":
        return _ratio_panel(ax, data)
    if kind == "scaling":
        _scaling_panel(ax, data, _unit(b))
    elif kind == "score":
        _score_panel(ax, data)
    elif kind == "target":
        _target_panel(ax, data)
    else:
        _per_case_panel(ax, data)
    return ""


def _module_figure(g: pd.DataFrame, figdir: Path, stem: str, title: str
                   ) -> list[tuple[str, str]]:
    """One figure per bench module, one panel per benchmark with a view of two values or
    more (:func:`_panels`), drawn at the column's width; ``[(file name, caption)]``, or
    nothing when no benchmark has such a view."""
    panels = []
    for bench, b in g.groupby("benchmark", sort=False):
        b = b.reset_index(drop=True)
        panels += [(bench, kind, data, what, b) for kind, data, what in _panels(b, _scaling(b))]
    if not panels:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    style = {"font.size": FIG_FONT_PT, "legend.fontsize": FIG_FONT_PT,
             "axes.titlesize": FIG_FONT_PT + 1, "xtick.labelsize": FIG_FONT_PT,
             "ytick.labelsize": FIG_FONT_PT, "axes.labelsize": FIG_FONT_PT}
    heights = [_panel_height(kind, data) + 0.9 for _, kind, data, _, _ in panels]
    with plt.rc_context(style):
        # a sub-figure per panel: each lays out its own labels and legend
        fig = plt.figure(figsize=(_FIG_WIDTH, sum(heights)), layout="constrained")
        subs = fig.subfigures(len(panels), 1, height_ratios=heights, squeeze=False)[:, 0]
        for sub, (bench, kind, data, _, b) in zip(subs, panels):
            ax = sub.subplots()
            common = _draw(ax, kind, data, b)
            sub.suptitle(_label(f"{bench}: {common}" if common else bench, 90),
                         x=0.01, ha="left", fontsize=FIG_FONT_PT + 1, fontweight="bold")
        name = f"{stem}.png"
        fig.savefig(figdir / name, dpi=100)
        plt.close(fig)
    views = "; ".join(f"{bench}: {what}" for bench, _, _, what, _ in panels)
    if len(panels) == 1:
        return [(name, f"{title}, {views} (log axes for times and speed-ups).")]
    return [(name, f"{title}, one panel per benchmark ({views}; log axes for times and "
                   "speed-ups).")]


def peer_figure(df: pd.DataFrame, figdir: Path) -> str | None:
    """The Performance page's headline figure: every :data:`PEER_COMPARISONS` speed-up on
    one log axis, one row per comparison, one dot per case in the peer's colour, the median
    marked; the file name, or None when no comparison is measured.

    Parameters
    ----------
    df : DataFrame
        The benchmark rows (:func:`load_bench`).
    figdir : Path
        Where the figure is written (created if missing).

    Returns
    -------
    str or None
        The figure's file name in ``figdir``.
    """
    check_instance(df, pd.DataFrame, "df")
    rows = []
    for peer in PEER_COMPARISONS:
        for select, title in ((peer["select"], peer["title"]),
                              *([(peer["also"][0], peer["title"] + ", plan reused")]
                                if "also" in peer else [])):
            sel = _select(df, select) if not df.empty else pd.DataFrame()
            if len(sel):
                rows.append((title.replace(" against ", " vs ").replace(
                    "Exact inference on ", "Exact, "), sel))
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figdir = Path(figdir)
    figdir.mkdir(parents=True, exist_ok=True)
    with plt.rc_context({"font.size": FIG_FONT_PT, "legend.fontsize": FIG_FONT_PT,
                         "xtick.labelsize": FIG_FONT_PT, "ytick.labelsize": FIG_FONT_PT}):
        fig, ax = plt.subplots(figsize=(_FIG_WIDTH, 0.42 * len(rows) + 1.3),
                               layout="constrained")
        # one peer, one look: pgmpy's two engines and the plan-reused row share its colour
        def peer(sel: pd.DataFrame) -> str:
            base = str(sel["baseline"].iloc[0])
            return palette.lookup(base) or base

        peers = list(dict.fromkeys(peer(sel) for _, sel in rows))
        styles = dict(zip(peers, _styles(peers)))
        for y, (_title, sel) in enumerate(rows):
            col, mark = styles[peer(sel)]
            v = sel["_r"].to_numpy(float)
            jitter = np.linspace(-0.15, 0.15, len(v)) if len(v) > 1 else np.zeros(1)
            ax.plot(v, y + jitter, ls="none", alpha=0.8, ms=5, color=col, marker=mark)
            ax.plot([np.median(v)] * 2, [y - 0.3, y + 0.3], color=palette.REFERENCE, lw=2)
        ax.axvline(1.0, color=palette.GUIDE, lw=1)
        ax.set_xscale("log")
        ax.set_yticks(range(len(rows)), [_label(t, 44) for t, _ in rows])
        ax.set_ylim(len(rows) - 0.5, -0.5)
        ax.set_xlabel("speed-up: peer time / ours (log; bar: median)")
        _log_ticks(ax.xaxis)
        fig.savefig(figdir / "peers.png", dpi=100)
        plt.close(fig)
    return "peers.png"


def _scored(b: pd.DataFrame) -> bool:
    """True for a benchmark whose rows report a score (``rate_unit`` ``score``): a contest
    under a time limit, where the seconds are the limit's and the score is the result."""
    return "rate_unit" in b and (b["rate_unit"].astype(str) == "score").any()


def _per_case(b: pd.DataFrame) -> pd.DataFrame:
    """Seconds per case (rows) and method (columns), for benchmarks that time several
    methods (ours and peers' own rows) on the same cases and have no size curve; for a
    scored benchmark, each method's score instead; empty otherwise."""
    column = "rate" if _scored(b) else "seconds"
    t = b.assign(**{column: _num(b[column])}).dropna(subset=[column])
    if t["case"].nunique() < 2 or (t["method"].nunique() < 2 and column == "seconds"):
        return pd.DataFrame()
    table = t.pivot_table(index="case", columns="method", values=column, aggfunc="min",
                          sort=False)
    if column == "rate":
        table.attrs["score"] = True
        return table
    return table if (table.notna().sum(axis=1) >= 2).any() else pd.DataFrame()


def _table(b: pd.DataFrame) -> list[str]:
    """A benchmark's rows as a Markdown table: case, method, time, the speed-up with its
    baseline in one cell (``3.2× over pgmpy``), throughput and note, without the columns
    that no row fills, so that a narrow page column keeps its words whole."""
    rows = []
    for r, t in zip(b.itertuples(index=False), _target(b)):
        rate = pd.to_numeric(r.rate, errors="coerce")
        ratio = pd.to_numeric(r.ratio, errors="coerce")
        seconds = pd.to_numeric(r.seconds, errors="coerce")  # none: a skipped peer
        note = _cell(r.note) + ("" if pd.isna(t) else f"; target {t:.3g}")
        over = _cell(r.baseline)
        speedup = "" if pd.isna(ratio) else f"{ratio:.3g}×" + (f" over {over}" if over else "")
        rows.append([_cell(r.case), _cell(r.method),
                     "" if pd.isna(seconds) else f"{seconds:.4g}", speedup,
                     "" if pd.isna(rate) else f"{rate:.3g} {_cell(r.rate_unit)}",
                     note.lstrip("; ")])
    heads = ["case", "method", "time (s)", "speed-up", "throughput", "note"]
    keep = [j for j, _ in enumerate(heads) if j < 2 or any(row[j] for row in rows)]
    lines = ["| " + " | ".join(heads[j] for j in keep) + " |",
             "|" + "---|" * len(keep)]
    lines += ["| " + " | ".join(row[j] for j in keep) + " |" for row in rows]
    return lines


#: The Performance page's headline comparisons: mrflib against a peer doing the same job.
#: Each selects benchmark rows by regular expressions (case-insensitive) on their columns;
#: a peer whose rows are not in ``bench/results`` yet is listed as not measured.
PEER_COMPARISONS = (
    {"title": "Exact inference on Ising models against pgmpy",
     "job": "all edge marginals of a lattice Ising model, exactly: mrflib's junction tree "
            "against pgmpy's BeliefPropagation on the same model, each building its plan "
            "(triangulation, cliques) inside the timed call",
     "select": {"baseline": "pgmpy BeliefPropagation", "method": "^mrflib$"},
     "also": ({"baseline": "pgmpy BeliefPropagation", "method": "plan reused"},
              "with the plan built once and reused, as the learners do")},
    {"title": "Exact inference on factor graphs against pyGMs",
     "job": "log Z (PR) and all marginals (MAR) of discrete factor graphs (UAI competition "
            "problems, Potts lattices, networks of three- and four-variable factors, an "
            "expert network with evidence): mrflib's elimination engine against pyGMs' "
            "junction tree on the same graphs, planning inside each timed call",
     "select": {"baseline": "pygms"}},
    {"title": "Exact inference on factor graphs against pgmpy",
     "job": "the same problems and tasks against pgmpy's VariableElimination",
     "select": {"baseline": "pgmpy VariableElimination", "method": "^mrflib$"}},
    {"title": "Exact inference on factor graphs against pyAgrum",
     "job": "all marginals with evidence (UAI competition problems, Potts and triangle "
            "lattices, networks of three- and four-variable factors): mrflib's elimination "
            "engine against pyAgrum's ShaferShenoyMRFInference, a C++ engine, on the same "
            "models, planning inside each timed call",
     "select": {"baseline": "pyAgrum", "method": "^mrflib$"}},
    {"title": "Pseudo-likelihood learning against scikit-learn",
     "job": "maximum pseudo-likelihood (MPLE), which is one logistic regression per node "
            "(multinomial for Potts variables): mrflib's MPLE, on Ising models and on "
            "factor graphs, against scikit-learn's LogisticRegression fitted node by node "
            "(unregularised) on the same samples",
     "select": {"baseline": "scikit-learn|sklearn", "method": r"^mple\b"}},
    {"title": "Gibbs sampling against a numpy sampler",
     "job": "single-spin Gibbs sweeps of an Ising model: mrflib's numba kernels against a "
            "vectorised numpy checkerboard sampler, CPU time per spin update",
     "select": {"benchmark": "gibbs", "baseline": "numpy"}},
)


def _select(df: pd.DataFrame, select: dict[str, str]) -> pd.DataFrame:
    """The rows of ``df`` whose columns match every regular expression of ``select``."""
    keep = pd.Series(True, index=df.index)
    for column, pattern in select.items():
        values = df[column].astype(str) if column in df else pd.Series("", index=df.index)
        keep &= values.str.contains(pattern, case=False, regex=True)
    return df[keep].assign(_r=_num(df[keep]["ratio"]) if len(df) else None).dropna(
        subset=["_r"])


def _speedups(rows: pd.DataFrame) -> str:
    """``faster in k of n cases (median m×, range a–b×)`` of rows with ratios."""
    v = rows["_r"].to_numpy(float)

    def x(r: float) -> str:
        return f"{r:,.0f}×" if r >= 100 else f"{r:.3g}×"

    return (f"faster in {int((v > 1).sum())} of {len(v)} cases (speed-up median "
            f"{x(np.median(v))}, range {x(v.min())[:-1]}–{x(v.max())})")


def performance_summary(df: pd.DataFrame, figdir: Path | None = None, rel: str = "_perf"
                        ) -> str:
    """The Performance page's headline: each :data:`PEER_COMPARISONS` entry with its verdict,
    led by :func:`peer_figure` (written to ``figdir``, linked as ``rel/peers.png``) when
    ``figdir`` is given.

    A verdict is *faster* when mrflib wins every case measured, *slower* when it loses every
    one, else *mixed*; the speed-ups (peer time / ours, measured in the same run) follow,
    with the cases named in the tables below.
    """
    lines = []
    name = peer_figure(df, figdir) if figdir is not None else None
    if name:
        caption = ("mrflib against peers doing the same job: each comparison's speed-ups "
                   "(peer time / ours, measured in the same run; log scale; right of the line "
                   "at 1, mrflib is faster), one dot per case in the peer's colour, the bar "
                   "at the median.")
        lines += [f":::{{figure}} {rel}/{name}", ":name: performance-peers",
                  f":alt: {caption}", "", caption, ":::", ""]
    for peer in PEER_COMPARISONS:
        rows = _select(df, peer["select"]) if not df.empty else pd.DataFrame()
        lines += [f"**{peer['title']}.** The job: {peer['job']}.", ""]
        if rows.empty:
            lines += ["_Not measured yet: its benchmark rows appear here once they are in "
                      "`bench/results/`._", ""]
            continue
        v = rows["_r"].to_numpy(float)
        word = "faster" if (v > 1).all() else "slower" if (v < 1).all() else "mixed"
        cases = "; ".join(dict.fromkeys(rows["case"].astype(str)))
        text = (f"**Verdict: mrflib is {word}**: {_speedups(rows)}; cases: {cases}.")
        if "also" in peer:
            more = _select(df, peer["also"][0])
            if not more.empty:
                text += f" {peer['also'][1].capitalize()}: {_speedups(more)}."
        lines += [text, ""]
    return "\n".join(lines) + "\n"


def performance_markdown(df: pd.DataFrame, figdir: Path, rel: str) -> str:
    """The ``make bench`` results, one section per bench module, generic over modules.

    Each module leads with one figure, a panel per benchmark (:func:`_panels`: a contest's
    scores; time against problem size on log-log axes with the fitted exponent, for
    modules that give the optional ``size`` column; the speed-up against the strongest
    baseline; throughput against the target, for rows with the optional ``target``
    column), colours from :mod:`mrflib.repro.palette`. Each benchmark then gets a one-line
    verdict (which says whether each target is met and the throughput reached) and its
    table folded in a dropdown. A new ``bench/results/<module>.csv`` appears without any
    change here.
    """
    if df.empty:
        return "_No benchmark results yet: run `make bench`._\n"
    figdir.mkdir(parents=True, exist_ok=True)
    parts = []
    for module, g in df.groupby("module", sort=True):
        parts.append(f"### {module}\n")
        for name, caption in _module_figure(g, figdir, _slug(module), module):
            parts += [f":::{{figure}} {rel}/{name}", f":name: performance-{name[:-4]}",
                      f":alt: {caption}", "", caption, ":::", ""]
        for bench, b in g.groupby("benchmark", sort=False):
            b = b.reset_index(drop=True)
            curves = _scaling(b)
            parts.append(f"#### {bench}\n")
            verdict = _verdict(b, curves)
            if verdict:
                parts.append(verdict + "\n")
            counted = f"{len(b)} measurement" + ("s" if len(b) != 1 else "")
            parts += [f":::{{dropdown}} The table of {bench} ({counted})", *_table(b), ":::",
                      ""]
    return "\n".join(parts) + "\n"


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
        text = "Machine: " + machine.read_text().strip() + "\n\n" + text
    (book_dir / "_performance_tables.md").write_text(text)
    (book_dir / "_layers_table.md").write_text(layers_markdown())
