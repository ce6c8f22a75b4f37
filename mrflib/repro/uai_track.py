"""Summaries of the UAI 2014 problem-set benchmark (``bench/bench_uai_2014.py``).

The benchmark's CSV has one row per problem and task (``PR``: ``log Z``; ``MAR``: the
marginals) with a ``status`` (``answered``, ``refused``, ``time limit``, ``not run``,
``out of memory``, ``error``, ``died``). :func:`problem_outcomes` turns it into one row per
problem, :func:`family_summary` into one row per family, as the chapter on exact inference
on factor graphs shows them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mrflib._support.validation import check_instance

__all__ = ["COLUMNS", "problem_outcomes", "family_summary", "answered_paragraph"]

#: Columns of the benchmark's CSV that the summaries read.
COLUMNS = ("benchmark", "case", "family", "status", "seconds", "treewidth", "log10_max_table",
           "published_max_diff", "pygms_max_diff", "enumeration_max_diff", "limit_seconds",
           "note")
#: Statuses that are neither an answer nor a refusal nor the time limit: failures.
FAILED = ("out of memory", "error", "died")


def _check(df: pd.DataFrame) -> pd.DataFrame:
    check_instance(df, pd.DataFrame, "df")
    lacking = [c for c in COLUMNS if c not in df.columns]
    if lacking:
        raise ValueError(f"df must have the benchmark's columns {list(COLUMNS)}; lacks {lacking}")
    tasks = set(df["benchmark"].astype(str))
    if not tasks <= {"PR", "MAR"}:
        raise ValueError(f"df's benchmark column must hold PR and MAR, got {sorted(tasks)}")
    return df


def _outcome(pr: str, mar: str) -> str:
    if pr == "answered":
        return "answered" if mar == "answered" else "PR only"
    return "failed" if pr in FAILED else pr


def problem_outcomes(df: pd.DataFrame) -> pd.DataFrame:
    """One row per problem: ``problem``, ``family``, ``outcome`` (``answered``: both tasks;
    ``PR only``; else the ``PR`` status: ``refused``, ``time limit``, or ``failed``),
    ``treewidth`` and ``log10 largest table`` (the ``MAR`` plan's, else the ``PR`` one's;
    for a refused problem the larger of the two tasks' bounds: a refusal names the width
    and table of the best order found, or a lower bound when the search gave up), ``PR s``,
    ``MAR s``, ``published max diff`` (marginals), ``pyGMs log Z diff``,
    ``pyGMs marginal diff``, ``enumeration diff`` (ours against enumerating each connected
    component, where the benchmark checked), ``second order diff`` (ours against the
    marginals on a second annealed order, where the benchmark checked; empty in a CSV
    without the column), ``limit s`` and the ``reason`` (the note of the first task not
    answered, else the ``MAR`` note)."""
    df = _check(df)
    by = {t: df[df["benchmark"] == t].set_index("case") for t in ("PR", "MAR")}
    rows = []
    for case in dict.fromkeys(df["case"]):
        pr, mar = (by[t].loc[case] if case in by[t].index else None for t in ("PR", "MAR"))
        st = [str(r["status"]) if r is not None else "missing" for r in (pr, mar)]
        main = mar if mar is not None and not pd.isna(mar["treewidth"]) else pr
        if st[0] != "answered" and mar is not None and pr is not None:  # refused: the
            main = max((pr, mar), key=lambda r: np.nan_to_num(r["treewidth"], nan=-1))  # bound
        first = next((r for r, s in zip((pr, mar), st) if s != "answered"), None)

        def get(r, col):
            return np.nan if r is None or col not in r else pd.to_numeric(r[col],
                                                                         errors="coerce")

        rows.append({
            "problem": case, "family": (pr if pr is not None else mar)["family"],
            "outcome": _outcome(*st), "treewidth": get(main, "treewidth"),
            "log10 largest table": get(main, "log10_max_table"),
            "PR s": get(pr, "seconds"), "MAR s": get(mar, "seconds"),
            "published max diff": get(mar, "published_max_diff"),
            "pyGMs log Z diff": get(pr, "pygms_max_diff"),
            "pyGMs marginal diff": get(mar, "pygms_max_diff"),
            "enumeration diff": get(mar, "enumeration_max_diff"),
            "second order diff": get(mar, "second_order_max_diff"),
            "limit s": get(pr, "limit_seconds"),
            "reason": str((first if first is not None else mar)["note"]),
        })
    return pd.DataFrame(rows)


def _widths(values: pd.Series) -> str:
    w = sorted({int(v) for v in values.dropna()})
    return ", ".join(map(str, w))


def family_summary(df: pd.DataFrame) -> pd.DataFrame:
    """One row per family (in the CSV's order): ``problems``, ``answered`` (both tasks),
    ``PR only``, ``refused`` and their ``refused treewidths``, ``time limit``, ``failed``,
    the largest ``published max diff`` of the marginals, the largest pyGMs differences,
    and the median and largest ``MAR s`` of the answered problems."""
    out = problem_outcomes(df)
    rows = []
    for family, g in out.groupby("family", sort=False):
        count = g["outcome"].value_counts()
        ans = g[g["outcome"] == "answered"]
        rows.append({
            "family": family, "problems": len(g), "answered": int(count.get("answered", 0)),
            "PR only": int(count.get("PR only", 0)), "refused": int(count.get("refused", 0)),
            "refused treewidths": _widths(g.loc[g["outcome"] == "refused", "treewidth"]),
            "time limit": int(count.get("time limit", 0)),
            "failed": int(count.get("failed", 0)),
            "published max diff": g["published max diff"].max(),
            "pyGMs log Z diff": g["pyGMs log Z diff"].max(),
            "pyGMs marginal diff": g["pyGMs marginal diff"].max(),
            "MAR median s": ans["MAR s"].median(), "MAR max s": ans["MAR s"].max(),
        })
    return pd.DataFrame(rows)


def _bytes(log10_entries: float) -> str:
    gib = 8.0 * 10.0 ** log10_entries / 2.0**30
    return f"{gib:.2g} GiB" if gib < 1e4 else f"10^{log10_entries + np.log10(8.0 / 2**30):.0f} GiB"


def _spread(g: pd.DataFrame) -> str:
    """Treewidths and largest tables of some problems, as a range."""
    w, t10 = g["treewidth"].dropna(), g["log10 largest table"].dropna()
    if not len(w) or not len(t10):
        return ""
    tw = (f"treewidth {int(w.min())}" if w.min() == w.max()
          else f"treewidth {int(w.min())} to {int(w.max())}")
    tb = (_bytes(t10.min()) if t10.min() == t10.max()
          else f"{_bytes(t10.min())} to {_bytes(t10.max())}")
    return f" ({tw}, largest clique tables {tb})"


def answered_paragraph(df: pd.DataFrame, budget_gib: float) -> str:
    """The chapter's "What is answered" paragraph, every count read from the benchmark's
    CSV ``df`` (``budget_gib``: the memory budget it ran with, which the CSV does not hold)."""
    out = problem_outcomes(df)
    ans = out[out["outcome"] == "answered"]
    full, part = [], []
    for family, g in out.groupby("family", sort=False):
        k = int((g["outcome"] == "answered").sum())
        if k == len(g):
            full.append(f"{family} ({k})")
        else:
            part.append(f"{k} of the {len(g)} {family} problems")
    slowest = ans.loc[ans["MAR s"].idxmax()]
    text = (f"**What is answered.** With a memory budget of {budget_gib:g} GiB and "
            f"{out['limit s'].max():g} s per task, {len(ans)} of the {len(out)} problems are "
            f"answered exactly, both tasks: every problem of {', '.join(full)}")
    text += (f", and {' and '.join(part)}." if part else ".")
    text += (f" The marginals take a median of {ans['MAR s'].median():.1f} s and at most "
             f"{slowest['MAR s']:.0f} s (`{slowest['problem']}`).")
    what = {"refused": "refused by the engine before anything is allocated, each with its "
                       "treewidth and bytes (and, where slicing would fit in memory, the "
                       "slices' estimated time beyond the limit)",
            "time limit": "cut by the time limit",
            "PR only": "answered for log Z only", "failed": "failed"}
    rest = out[out["outcome"] != "answered"]
    parts = []
    for outcome, g in rest.groupby("outcome", sort=False):
        fam = "; ".join(f"{len(h)} {f}{_spread(h)}" for f, h in g.groupby("family", sort=False))
        parts.append(f"{len(g)} {what.get(outcome, outcome)}: {fam}")
    if parts:
        text += f" The other {len(rest)}: " + ". ".join(parts) + "."
    if not (out["outcome"] == "failed").any():
        text += " No problem crashes."
    pyg = out["pyGMs log Z diff"].dropna()
    if len(pyg):
        text += (f" $\\log Z$ agrees with pyGMs to {pyg.max():.0e} on the {len(pyg)} problems "
                 "where pyGMs finishes within its budget.")
    return text
