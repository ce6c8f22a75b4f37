"""The Performance page (mrflib.repro.performance) and the scorecard (mrflib.repro.report)."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from mrflib.repro import experiments, performance, report


def _write(path, rows):
    pd.DataFrame(rows).to_csv(path, index=False)


def test_any_bench_module_gets_figure_verdict_and_folded_table(tmp_path):
    res = tmp_path / "results"
    res.mkdir()
    base = dict(benchmark="fit", baseline="peer", rate="", rate_unit="", note="")
    # a new module with an explicit size column: time-versus-size panel with an exponent
    _write(res / "newthing.csv", [
        dict(base, case=f"lattice, N = {N}", method=m, seconds=t, ratio=r, size=N,
             size_unit="N")
        for m, k in (("fast", 1e-3), ("slow", 1e-6))
        for N, t, r in ((1000, k * 1000, 10.0), (10000, k * 10000, 12.0))])
    # a module with sizes only in the case text and no ratio at all
    _write(res / "junction_tree.csv", [
        dict(base, case=f"n={n} grid", method="jt", seconds=0.01 * n, ratio="", rate=5.0,
             rate_unit="states/s", baseline="") for n in (16, 64)])
    md = performance.performance_markdown(performance.load_bench(res), tmp_path / "fig", "_perf")
    assert "## newthing" in md and "## junction_tree" in md
    assert md.count(":::{dropdown}") == 2
    assert "against peer: faster in 4 of 4 cases" in md
    assert "time grows as N^p with p from 1.00 to 1.00" in md
    assert "time grows as n^p" in md  # size parsed from "n=16 grid"
    figs = sorted(p.name for p in (tmp_path / "fig").glob("*.png"))
    assert figs == ["junction-tree.png", "newthing.png"]  # one figure per module
    assert ":::{figure} _perf/newthing.png" in md
    assert ":name: performance-newthing" in md
    assert "fit: time against size" in md  # the caption names each panel's view
    captions = [ln for ln in md.splitlines() if ln.startswith(":alt: ")]
    assert len(captions) == 2 and len(set(captions)) == 2


def test_a_table_keeps_only_the_columns_its_rows_fill():
    b = pd.DataFrame([dict(case="n=4", method="jt", seconds=0.5, baseline="", ratio="",
                           rate="", rate_unit="", note="")])
    lines = performance._table(b)
    assert lines[0] == "| case | method | time (s) |"
    assert lines[2] == "| n=4 | jt | 0.5 |"


def test_empty_results(tmp_path):
    assert "run `make bench`" in performance.performance_markdown(pd.DataFrame(), tmp_path, "_p")


def test_chapter_scorecard_shows_one_chapters_rows_in_full(monkeypatch):
    monkeypatch.delenv("MRFLIB_RESULTS_DIR", raising=False)
    note = "a long note " * 10
    experiments.record("ch-a", "p", "Figure 1", "q1", 1.0, 1.01, "reproduced", note, "quick")
    experiments.record("ch-a", "p", "Table 2", "q2", "> 1", 3, "not reproduced")
    experiments.record("ch-b", "p", "Figure 9", "q", 1, 1, "new")
    shown = report.chapter_scorecard("ch-a")
    table = shown.data
    assert list(table.columns) == ["item", "quantity", "paper", "ours", "verdict", "note"]
    assert list(table["item"]) == ["Figure 1", "Table 2"]
    assert table.loc[0, "ours"] == "1.01" and table.loc[1, "paper"] == "> 1"
    assert list(table["verdict"]) == ["reproduced", "not reproduced"]
    html = shown.to_html()
    assert "&gt; 1" in html  # text, not markup
    assert note.strip() in html and "profile quick" in html and "Figure 9" not in html
    assert report.chapter_scorecard("no-such-chapter").data.empty
    with pytest.raises(ValueError, match="chapter"):
        report.chapter_scorecard("")


def test_rows_with_a_target_get_a_verdict_and_a_panel(tmp_path):
    """Optional ``target`` column: the verdict says whether it is met and what was reached."""
    res = tmp_path / "results"
    res.mkdir()
    base = dict(benchmark="gibbs", method="ours", seconds=1.0, baseline="numpy", ratio=3.0,
                rate_unit="updates/s", note="")
    _write(res / "foundation.csv", [
        dict(base, case="small", rate=5e7, target=""),
        dict(base, case="big, tables kept", rate=4e8, target=1e8),
        dict(base, case="big, new model", rate=9e7, target=1e8)])
    md = performance.performance_markdown(performance.load_bench(res), tmp_path / "fig", "_perf")
    assert ("target 1e+08 updates/s met in part (1 of 2 rows): reached 4e+08 (big, tables "
            "kept), 9e+07 (big, new model)") in md
    assert "| big, new model | ours | 1 | 3× over numpy | 9e+07 updates/s | target 1e+08 |" in md
    assert (tmp_path / "fig" / "foundation.png").exists()
    assert "gibbs: speed-up against the strongest baseline" in md


def _bench(rows):
    base = dict(benchmark="b", case="c", method="mrflib", seconds=1.0, baseline="", ratio="",
                rate="", rate_unit="", note="", module="m")
    return pd.DataFrame([{**base, **r} for r in rows])


def test_performance_summary_leads_with_peers_doing_the_same_job():
    """Each headline compares mrflib with a peer doing the same job: learners other than
    MPLE are not set against scikit-learn, and a peer without rows says so."""
    df = _bench([
        dict(case="3x3", baseline="pgmpy BeliefPropagation", ratio=5.0),
        dict(case="4x4", baseline="pgmpy BeliefPropagation", ratio=20.0),
        dict(case="4x4", method="mrflib, plan reused", baseline="pgmpy BeliefPropagation",
             ratio=600.0),
        dict(case="4x4", method="mple", baseline="scikit-learn LogisticRegression", ratio=0.5),
        dict(case="4x4", method="cd", baseline="scikit-learn LogisticRegression", ratio=0.01),
        dict(benchmark="sampling.gibbs", case="grid", method="ours",
             baseline="numpy checkerboard", ratio=15.0)])
    md = performance.performance_summary(df)
    exact, pygms, fg_pgmpy, fg_agrum, mple, gibbs = (
        "\n".join(p) for p in zip(*[iter(md.split("\n\n"))] * 2))
    assert "Verdict: mrflib is faster**: faster in 2 of 2 cases (speed-up median 12.5×, " \
           "range 5–20×); cases: 3x3; 4x4." in exact
    assert "plan built once and reused" in exact and "range 600–600×" in exact
    assert "pyGMs" in pygms and "Not measured yet" in pygms
    assert "VariableElimination" in fg_pgmpy and "Not measured yet" in fg_pgmpy
    assert "pyAgrum" in fg_agrum and "Not measured yet" in fg_agrum
    assert "mrflib is slower**: faster in 0 of 1 cases" in mple  # cd left out
    assert "mrflib is faster" in gibbs
    with_pygms = pd.concat([df, _bench([dict(baseline="pyGMs", ratio=3.0, case="chain"),
                                        dict(baseline="pyGMs", ratio=0.5, case="grid")])])
    mixed = performance.performance_summary(with_pygms)
    assert "mrflib is mixed**: faster in 1 of 2 cases" in mixed
    with_ve = pd.concat([df, _bench([dict(baseline="pgmpy VariableElimination", ratio=9.0,
                                          case="UAI")])])
    ising, _, ve = performance.performance_summary(with_ve).split("\n\n")[1:6:2]
    assert "faster in 2 of 2 cases" in ising and "faster in 1 of 1 cases" in ve
    assert "Not measured yet" in performance.performance_summary(pd.DataFrame()).split("\n\n")[1]


def test_a_bound_against_enumeration_says_where_the_cost_curves_cross(tmp_path):
    """Two methods over sizes (a polynomial and an exponential cost): the verdict names the
    size where the curves cross, not a speed ratio at the smallest size."""
    rows = [dict(benchmark="scaling", case=f"N={n}", method="bound", seconds=0.01 * n)
            for n in (10, 20, 40)]
    rows += [dict(benchmark="scaling", case=f"N={n}", method="enumerate",
                  seconds=1e-6 * 2.0 ** n) for n in (10, 14, 18)]
    rows.append(dict(benchmark="one", case="N=10", method="bound", seconds=0.1,
                     baseline="enumerate", ratio=0.01))
    md = performance.performance_markdown(_bench(rows), tmp_path, "_perf")
    assert "100× the time of enumerate" in md and "the speed of" not in md
    found = float(md.split("cross at N ≈ ")[1].split(":")[0])
    assert 14 < found < 18  # bound 0.14 s < enumeration 0.016 s at 14, > 0.26 s at 18
    assert "bound costs more than enumerate below it" in md


def test_a_scored_benchmark_plots_each_solvers_score_not_its_seconds(tmp_path):
    """A contest under a time limit (rows whose rate is a score) plots the scores per
    problem on 0..100; its seconds are the limit's, not a result."""
    rows = [dict(module="m", benchmark="MPE score at 20 s", case=case, method=method,
                 seconds=19.5, baseline="", ratio=None, rate=score, rate_unit="score", note="")
            for case, ours, peer in (("A", 99.0, 100.0), ("B", 0.0, 97.5))
            for method, score in (("mrflib", ours), ("toulbar2", peer))]
    df = pd.DataFrame(rows)
    table = performance._per_case(df)
    assert table.attrs["score"] and table.loc["B", "toulbar2"] == 97.5
    text = performance.performance_markdown(df, tmp_path, "_perf")
    assert "score per problem" in text and "time per problem" not in text


def test_performance_draws_each_methods_time_per_case(tmp_path):
    """A benchmark timing ours and peers (their own rows, no ratio) on the same problems
    gets a per-problem time panel; skipped peers (no time) leave a gap, not an error."""
    rows = []
    for case, ours, peer in (("A", 0.1, 1.0), ("B", 0.2, float("nan"))):
        rows += [dict(module="m", benchmark="PR", case=case, method="mrflib", seconds=ours,
                      baseline="peer", ratio=peer / ours, rate=None, rate_unit="", note=""),
                 dict(module="m", benchmark="PR", case=case, method="peer", seconds=peer,
                      baseline="", ratio=None, rate=None, rate_unit="", note="")]
    df = pd.DataFrame(rows)
    table = performance._per_case(df)
    assert list(table.columns) == ["mrflib", "peer"] and table.loc["A", "peer"] == 1.0
    text = performance.performance_markdown(df, tmp_path, "_perf")
    assert "time per problem" in text and (tmp_path / "m.png").exists()
    assert performance._per_case(df[df["method"] == "mrflib"]).empty
    # read back from CSV (empty cells stay strings): the skipped peer's time is left blank
    folder = tmp_path / "results"
    folder.mkdir()
    df.drop(columns="module").to_csv(folder / "m.csv", index=False)
    text = performance.performance_markdown(performance.load_bench(folder), tmp_path, "_perf")
    assert "| B | peer |  |" in text


def test_scorecard_is_one_row_per_claim_and_opens_with_what_is_not_reproduced():
    from mrflib.repro import scorecard

    row = dict(chapter="ch", paper="p", item="Table 1", quantity="q0", paper_value="1",
               ours="2", verdict="reproduced in kind", note="same order", profile="quick")
    cells = [{**row, "quantity": f"q{k}", "ours": str(k)} for k in range(5)]
    lone = [{**row, "item": "Eq. (4)", "quantity": "bound", "verdict": "not reproduced",
             "note": "a typo"}, {**row, "item": "Table 2", "note": ""},
            {**row, "item": "Table 2", "quantity": "r", "note": ""}]
    df = pd.DataFrame(cells + lone)
    claim = scorecard.claims(df)
    assert list(claim["n"]) == [5, 1, 1, 1]  # rows without a note are claims of their own
    assert claim.loc[0, "quantity"].startswith("5 measurements: q0; q1; q2; …")
    md = report.scorecard_markdown(df)
    head, tables = md.split("**p** (chapter", 1)
    assert "| p | 4 | 1 | 3 | 0 |" in head
    assert "| paper | claims | not reproduced | in kind | reproduced |" in head
    assert "**Not reproduced** (1):" in head and "Why: a typo." in head
    claim_rows = tables.split(":::{dropdown}")[0]
    assert claim_rows.count("\n| ") == 5  # header and four claims
    assert "| claim | verdict | reason |" in claim_rows
    assert "| Table 1 | <span" in claim_rows and "| same order |" in claim_rows
    assert md.count("Details: the 8 measured numbers of p") == 1  # all of them, folded
    details = tables.split(":::{dropdown}")[1]
    # the five cells of Table 1 and the first row of Table 2; a note in full under its table
    assert len(re.findall(r"\n\| q\d ", details)) == 6 and "\na typo\n" in details
    text = scorecard.chapter_conclusion("ch", df)
    assert "4 claims of the papers (8 measured numbers): 1 not reproduced, 3 reproduced " \
           "in kind." in text
    assert "Eq. (4), bound: the paper: 1; ours: 2 (a typo)." in text
    assert "Table 1, 5 measurements: same order." in text
    assert scorecard.chapter_conclusion("other", df).startswith("_No scorecard rows")
    with pytest.raises(ValueError, match="chapter"):
        scorecard.chapter_conclusion("", df)


def test_bench_ratio_reads_the_last_case_of_one_benchmark(tmp_path):
    rows = [dict(benchmark="edge marginals", case=f"{J}x{J} lattice", method=m, seconds=0.1,
                 baseline="pgmpy BeliefPropagation", ratio=r, rate="", rate_unit="", note=m)
            for J in (3, 7) for m, r in (("mrflib", 10.0 * J), ("mrflib, plan reused", 99.0))]
    _write(tmp_path / "junction_tree.csv", rows)
    got = performance.bench_ratio("junction_tree", "edge marginals", "mrflib",
                             "pgmpy BeliefPropagation", tmp_path)
    assert got["case"] == "7x7 lattice" and got["ratio"] == 70.0  # like for like, not 99
    assert performance.bench_ratio("junction_tree", "other", "mrflib", "pgmpy BeliefPropagation",
                              tmp_path) is None
    assert performance.bench_ratio("junction_tree", "edge marginals", "mrflib", "x",
                              tmp_path / "none") is None


def test_scorecard_typesets_the_recorded_notation():
    from mrflib.repro.notation import typeset

    assert typeset("KL(p*||p_theta) >= 0") == r"$\mathrm{KL}(p^* \Vert p_\theta)$ ≥ 0"
    assert typeset("<x_i x_j> of v^1SMCI") == \
        r"$\langle x_i x_j \rangle$ of $v^{\text{1-SMCI}}$"
    assert typeset("<dH>, sigma_w = 1 & a <b") == \
        r"$\langle dH \rangle$, $\sigma_w$ = 1 &amp; a &lt;b"
    assert typeset("plain words, exact_inference 4x5") == "plain words, exact_inference 4x5"
    assert "|" not in typeset("KL(p_d||p_theta)"), "no table-cell separator in the math"


def test_a_table_cell_is_one_line_with_its_bars_escaped():
    from mrflib.repro.notation import table_cell

    assert table_cell("a | b\nc <d") == "a \\| b c &lt;d"
    assert table_cell(1.5) == "1.5"


def _rows(*rows):
    base = dict(chapter="ch", paper="p", item="Figure 1", quantity="q", paper_value="1",
                ours="1", verdict="reproduced", note="", profile="quick")
    return pd.DataFrame([{**base, **r} for r in rows])


def test_the_papers_summary_counts_only_their_claims():
    """The book's own checks and new results sit in tables of their own, never among the
    claims of a paper, in the scorecard and in a chapter's closing paragraph."""
    from mrflib.repro import scorecard

    df = _rows({"item": "Theorem 2"},
               {"item": "Figure 5", "verdict": "not reproduced", "note": "reversed"},
               {"item": "MAR score", "paper_value": "above 85", "ours": "90",
                "verdict": "check passed", "note": "the project's target"},
               {"item": "peer", "paper_value": "(exact)", "ours": "1e-15",
                "verdict": "check failed", "note": "pgmpy"},
               {"item": "real data", "paper_value": "", "ours": "0.9", "verdict": "new"})
    md = report.scorecard_markdown(df)
    head = md.split("**p** (chapter", 1)[0]
    assert "| p | 2 | 1 | 0 | 1 |" in head and "| all | 2 | 1 | 0 | 1 |" in head
    assert "2 claims of the papers, measured by 2 recorded numbers" in head
    assert "2 checks of the book's own (1 failed) and 1 new result," in head
    claims_part, checks_part = md.split("**The book's own checks.**", 1)
    checks_part, new_part = checks_part.split("**New results.**", 1)
    assert "MAR score" not in claims_part and "real data" not in claims_part
    assert "MAR score" in checks_part and "check-failed" in checks_part
    assert "| quantity | expected | ours |" in checks_part
    assert "real data" in new_part and "| quantity | reference | ours |" in new_part
    summary = scorecard.paper_summary(df)
    assert summary.loc["p", "claims"] == 2 and "new" not in summary.columns
    text = scorecard.chapter_conclusion("ch", df)
    assert text.startswith("This run at profile quick checked 2 claims of the papers (2 "
                           "measured numbers): 1 not reproduced, 1 reproduced. It also ran "
                           "2 checks of the book's own (1 failed)")
    assert "failed:" in text and "peer, q: the paper: (exact); ours: 1e-15 (pgmpy)" in text
    with pytest.raises(ValueError, match="verdict"):
        scorecard.kind("new (not in the paper)")


def test_a_claims_cells_list_a_shared_value_once_and_no_empty_separators():
    from mrflib.repro import scorecard

    same = scorecard.claims(_rows({"quantity": "a", "paper_value": "> 1", "note": "n"},
                                  {"quantity": "b", "paper_value": "> 1", "note": "n"}))
    assert same.loc[0, "paper_value"] == "> 1"
    empty = scorecard.claims(_rows({"quantity": "a", "paper_value": "", "note": "n"},
                                   {"quantity": "b", "paper_value": "", "note": "n"}))
    assert empty.loc[0, "paper_value"] == ""
    mixed = scorecard.claims(_rows({"quantity": "a", "paper_value": "", "note": "n"},
                                   {"quantity": "b", "paper_value": "2", "note": "n"}))
    assert mixed.loc[0, "paper_value"] == "-; 2"


def test_generated_text_reads_as_prose(tmp_path):
    """A table of one row says "1 measurement"; a rate with no target or ratio is named as a
    measurement, not a verdict of "up to"."""
    res = tmp_path / "results"
    res.mkdir()
    _write(res / "uai.csv", [dict(benchmark="MAR score", case="hard problems", method="ours",
                                  seconds=20.0, baseline="", ratio="", rate=100.0,
                                  rate_unit="score", note="")])
    md = performance.performance_markdown(performance.load_bench(res), tmp_path / "fig", "_perf")
    assert "1 measurements" not in md and "(1 measurement)" in md
    assert "up to" not in md
    assert "**Verdict:** the best score measured is 100, on hard problems." in md


def test_the_provenance_shows_no_path_of_the_machine_that_ran_it():
    from mrflib.repro.paper import portable_command, provenance_markdown, read_provenance

    assert portable_command("python -m mrflib paper nb.ipynb --out /work/runs --publish "
                            "book/results/paper") == \
        "python -m mrflib paper nb.ipynb --out DIR --publish book/results/paper"
    assert portable_command("x --out=/tmp/a C:\\runs\\b") == "x --out=DIR DIR"
    md = provenance_markdown(read_provenance(report.PAPER_RESULTS))
    assert "/work" not in md and "/home" not in md and "/tmp" not in md
    narrow = provenance_markdown(read_provenance(report.PAPER_RESULTS), narrow=True)
    rows = [ln for ln in narrow.splitlines() if ln.startswith("| ")]
    assert rows[0] == "| chapter | run | wall time | command |"
    assert len(rows) > 1 and {ln.count(" | ") for ln in rows} == {3}  # four columns


def test_the_intros_outcome_counts_the_papers_claims_in_three_sentences(tmp_path):
    from mrflib.repro import scorecard

    df = _rows({"item": "Theorem 2"}, {"item": "Table 1", "verdict": "reproduced in kind"},
               {"item": "Figure 5", "verdict": "not reproduced", "note": "reversed"},
               {"item": "MAR score", "verdict": "check passed"},
               {"item": "real data", "paper_value": "", "verdict": "new"})
    text = scorecard.outcome(df)
    assert text.startswith("Of the 3 claims of the papers that the chapters check, 1 is "
                           "reproduced in number, 1 in kind (the claim holds, the numbers "
                           "differ) and 1 is not.")
    assert "The claims not reproduced are 1 of p" in text
    assert "{doc}`reproduction scorecard <scorecard>`" in text
    assert "own checks (1, 0 failed) and its new results (1, numbers" in text
    assert text.count(". ") == 2  # three sentences
    assert scorecard.outcome(df.iloc[:0]).startswith("_No chapter has been run yet")
    res = tmp_path / "results"
    res.mkdir()
    df.to_csv(res / "ch.csv", index=False)
    report.write_pages(res, tmp_path / "bench", tmp_path)
    assert (tmp_path / "_outcome.md").read_text() == text


def test_performance_figures_fit_the_column_with_readable_text_and_no_single_bar(tmp_path):
    """Every Performance figure is drawn no wider than the 672 px column, so its text of
    FIG_FONT_PT reads at 9 pt or more; one figure per module, a panel per benchmark with two
    values or more (a lone speed-up is said in the verdict, not drawn as one bar); a contest
    plots its scores; the headline figure sets every peer comparison on one axis."""
    from PIL import Image

    rows = [dict(benchmark="PR", case=f"UAI {k}", seconds=0.1, baseline=peer, ratio=r)
            for k, (peer, r) in enumerate((("pyGMs JTree", 3.0), ("pyGMs JTree", 30.0),
                                           ("pgmpy VariableElimination", 900.0)))]
    rows.append(dict(benchmark="lone", case="one case", seconds=1.0, baseline="numpy",
                     ratio=4.0))
    rows += [dict(benchmark="MAR score at 20 s", case=f"P{k}", method=m, seconds=20.0,
                  rate=s, rate_unit="score") for k in range(3)
             for m, s in (("mrflib", 90.0 + k), ("toulbar2", 99.0))]
    df = _bench(rows)
    md = performance.performance_markdown(df, tmp_path, "_perf")
    assert sorted(p.name for p in tmp_path.glob("*.png")) == ["m.png"]
    assert "PR: speed-up against the strongest baseline" in md
    assert "MAR score at 20 s: each solver's score per problem" in md
    assert "lone:" not in md.split("#### lone")[0]  # no panel of a single value
    assert "4× faster than numpy" in md
    summary = performance.performance_summary(df, tmp_path, "_perf")
    assert ":::{figure} _perf/peers.png" in summary
    for png in tmp_path.glob("*.png"):
        width = Image.open(png).size[0]
        assert width <= 672, (png.name, width)
    assert performance.FIG_FONT_PT * 100 / 96 >= 9


def test_long_lists_of_paper_scale_items_are_folded():
    """Items measured only at paper scale, and more than a few differing verdicts, are listed
    in folded blocks, one item a line, not in one paragraph that runs down the page."""
    build = _rows(*({"quantity": f"q{k}"} for k in range(4)))
    paper = _rows(*({"quantity": f"q{k}", "verdict": "not reproduced", "profile": "paper"}
                    for k in range(4)), *({"quantity": f"extra{k}", "profile": "paper"}
                                          for k in range(5)))
    md = report.scorecard_markdown(build, paper)
    assert "verdict differs from this build's for 4." in md
    assert ":::{dropdown} The 4 items whose verdict differs" in md
    assert ":::{dropdown} Measured only at the paper profile (5 items)" in md
    assert md.count("\n* ch: Figure 1, extra") == 5 and "\n* ch: Figure 1, q3" in md


def test_a_contest_verdict_gives_each_solvers_mean_score():
    """A scored benchmark's verdict: each method's mean score, best first, and on how many
    problems the first scored at least each other's."""
    rows = [dict(benchmark="PR score", case=c, method=m, seconds=1.0, rate=r,
                 rate_unit="score", baseline="", ratio=float("nan"), note="")
            for c, m, r in [("p1", "ours", 100.0), ("p1", "peer", 90.0),
                            ("p2", "ours", 80.0), ("p2", "peer", 85.0),
                            ("p3", "ours", 99.0), ("p3", "peer", 99.0)]]
    b = pd.DataFrame(rows)
    assert performance._verdict(b, []) == (
        "**Verdict:** mean score over 3 problems: ours 93.00, peer 91.33; ours at least "
        "peer's score on 2 of 3.")
    unscored = pd.DataFrame([dict(rows[0], case="p4", rate=float("nan"))])
    assert performance._verdict(pd.concat([b, unscored]), []).startswith(
        "**Verdict:** mean score over 3 problems (1 more not scored): ours 93.00")
