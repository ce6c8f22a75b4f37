"""The book's Performance page, generated from ``make bench``'s results.

Each benchmark module writes one CSV into ``bench/results`` (the columns
:mod:`bench` defines). :func:`performance_summary` renders the page's headline, each
:data:`PEER_COMPARISONS` entry against its peer with a verdict and one comparative figure
(:func:`peer_figure`); :func:`performance_markdown` one section per module, a figure of
panels chosen by what the rows hold (scores, time against size, speed-ups, throughput
against targets) and each benchmark's table folded below its verdict. A quantity quoted on
a chapter's page is read from the same rows (:func:`bench_ratio`), so it has one number.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from mrflib._support.validation import check_instance, check_path

from . import palette
from .notation import table_cell

__all__ = ["BENCH_RESULTS", "FIG_FONT_PT", "PEER_COMPARISONS", "bench_ratio", "load_bench",
           "peer_figure", "performance_markdown", "performance_summary"]


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
    scores = _per_case(b) if _scored(b) else pd.DataFrame()
    if not parts and not scores.empty:
        parts.append(_score_summary(scores, b["case"].nunique() - len(scores)))
    elif not parts and rate is not None and rate.notna().any():
        i = rate.idxmax()
        unit = str(b.loc[i, "rate_unit"]).strip()
        parts.append(f"the best {unit or 'rate'} measured is {rate[i]:.3g}, on "
                     f"{table_cell(b.loc[i, 'case'])}")
    return ("**Verdict:** " + "; ".join(parts) + ".") if parts else ""


def _score_summary(scores: pd.DataFrame, unscored: int = 0) -> str:
    """A contest's result from its scores (:func:`_per_case`: problems by methods): each
    method's mean score over the problems it was scored on, best first, how many problems
    were run but not scored (``unscored``: their reference is known to be wrong), and on
    how many problems the first scored at least each other's."""
    means = scores.mean().sort_values(ascending=False)
    left_out = f" ({unscored} more not scored)" if unscored else ""
    text = (f"mean score over {len(scores)} problems{left_out}: "
            + ", ".join(f"{table_cell(m)} {v:.2f}" for m, v in means.items()))
    first = means.index[0]
    for other in means.index[1:]:
        both = scores[[first, other]].dropna()
        text += (f"; {table_cell(first)} at least {table_cell(other)}'s score on "
                 f"{int((both[first] >= both[other]).sum())} of {len(both)}")
    return text


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
        note = table_cell(r.note) + ("" if pd.isna(t) else f"; target {t:.3g}")
        over = table_cell(r.baseline)
        speedup = "" if pd.isna(ratio) else f"{ratio:.3g}×" + (f" over {over}" if over else "")
        rows.append([table_cell(r.case), table_cell(r.method),
                     "" if pd.isna(seconds) else f"{seconds:.4g}", speedup,
                     "" if pd.isna(rate) else f"{rate:.3g} {table_cell(r.rate_unit)}",
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
