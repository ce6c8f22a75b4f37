"""Book pages generated from recorded numbers: the reproduction scorecard and performance.

The notebooks record paper-versus-ours numbers with :func:`mrflib.experiments.record`
(one CSV per chapter); ``make bench`` writes one CSV per benchmark module into
``bench/results``. :func:`write_pages` turns both into MyST fragments that
``book/scorecard.md`` and ``book/performance.md`` include.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .experiments import FIELDS
from .repro.scorecard import PAPER_TITLES as _PAPER_TITLES
from .repro.scorecard import VERDICT_MARK as _VERDICT_MARK

__all__ = ["load_records", "load_bench", "scorecard_markdown", "performance_markdown",
           "write_pages"]


def load_records(results: Path) -> pd.DataFrame:
    """All recorded rows of every chapter CSV in ``results`` (empty frame if none)."""
    files = sorted(Path(results).glob("*.csv")) if Path(results).exists() else []
    frames = [pd.read_csv(f, dtype=str, keep_default_na=False) for f in files]
    if not frames:
        return pd.DataFrame(columns=list(FIELDS))
    return pd.concat(frames, ignore_index=True)


def load_bench(bench_results: Path) -> pd.DataFrame:
    """All benchmark rows of ``bench/results/*.csv`` (empty frame if none)."""
    files = sorted(Path(bench_results).glob("*.csv")) if Path(bench_results).exists() else []
    frames = [pd.read_csv(f, keep_default_na=False).assign(module=f.stem) for f in files]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def scorecard_markdown(df: pd.DataFrame) -> str:
    """One MyST table over all chapters, each row linking to its chapter."""
    if df.empty:
        return "_No recorded results: the notebooks have not been executed._\n"
    counts = df["verdict"].value_counts()
    lines = [
        "Summary: " + ", ".join(f"{_VERDICT_MARK.get(v, v)}: {counts[v]}" for v in counts.index),
        "",
        "| paper | item | quantity | paper | ours | verdict | chapter | note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in df.itertuples(index=False):
        lines.append(
            "| " + " | ".join([
                _cell(_PAPER_TITLES.get(r.paper, r.paper)), _cell(r.item), _cell(r.quantity),
                _cell(r.paper_value), _cell(r.ours), _VERDICT_MARK.get(r.verdict, r.verdict),
                f"{{doc}}`{r.chapter} <../notebooks/{r.chapter}>`", _cell(r.note),
            ]) + " |"
        )
    profiles = sorted(set(df["profile"]) - {""})
    if profiles:
        lines += ["", f"Measured in profile(s): {', '.join(profiles)}."]
    return "\n".join(lines) + "\n"


def performance_markdown(df: pd.DataFrame, figdir: Path, rel: str) -> str:
    """Tables (and one bar chart per benchmark module) of the ``make bench`` results."""
    if df.empty:
        return "_No benchmark results yet: run `make bench`._\n"
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figdir.mkdir(parents=True, exist_ok=True)
    parts = []
    for module, g in df.groupby("module", sort=True):
        parts.append(f"## {module}\n")
        for bench, b in g.groupby("benchmark", sort=False):
            parts += [f"**{bench}**", "", "| case | method | time (s) | baseline | speed-up "
                      "| throughput | note |", "|---|---|---|---|---|---|---|"]
            for r in b.itertuples(index=False):
                rate = pd.to_numeric(r.rate, errors="coerce")
                ratio = pd.to_numeric(r.ratio, errors="coerce")
                parts.append("| " + " | ".join([
                    _cell(r.case), _cell(r.method), f"{float(r.seconds):.4g}",
                    _cell(r.baseline), "" if pd.isna(ratio) else f"{ratio:.3g}×",
                    "" if pd.isna(rate) else f"{rate:.3g} {_cell(r.rate_unit)}",
                    _cell(r.note),
                ]) + " |")
            parts.append("")
        ratios = g[pd.to_numeric(g.get("ratio"), errors="coerce").notna()]
        if len(ratios):
            fig, ax = plt.subplots(figsize=(7, 0.35 * len(ratios) + 1.2))
            labels = [f"{r.case} · {r.method} vs {r.baseline}"[:90]
                      for r in ratios.itertuples()]
            ax.barh(range(len(ratios)), ratios["ratio"].astype(float), color="tab:blue")
            ax.axvline(1.0, color="k", lw=0.8)
            ax.set_xscale("log")
            ax.set_yticks(range(len(ratios)), labels, fontsize=7)
            ax.invert_yaxis()
            ax.set_xlabel("speed-up over the baseline measured in the same run (log scale)")
            fig.tight_layout()
            fig.savefig(figdir / f"{module}.png", dpi=110)
            plt.close(fig)
            parts += ["", f"![{module} speed-ups]({rel}/{module}.png)", ""]
        parts.append("")
    return "\n".join(parts) + "\n"


def write_pages(results: Path, bench_results: Path, book_dir: Path) -> None:
    """Write ``_scorecard_table.md``, ``_performance_tables.md`` and figures to ``book_dir``."""
    book_dir = Path(book_dir)
    (book_dir / "_scorecard_table.md").write_text(scorecard_markdown(load_records(results)))
    machine = Path(bench_results) / "machine.txt"
    text = performance_markdown(load_bench(bench_results), book_dir / "_perf", "_perf")
    if machine.exists():
        text = "Machine: " + machine.read_text().strip() + "\n\n" + text
    (book_dir / "_performance_tables.md").write_text(text)
