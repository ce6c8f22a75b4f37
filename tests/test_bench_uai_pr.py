"""The UAI 2014 PR benchmark (``bench/bench_uai_pr.py``): the bounds it reads from the
solver's stderr, importance sampling's (with a certified bound) and an approximate model
count's (without)."""

from __future__ import annotations

import math

from bench import bench_uai_pr as bp

SAMPLED = ("answer 2: importance sampling (wmb proposal, i-bound 17, 81856 samples, 100% of "
           "weight zero): log10 Z = 15.9807; log10 Z in [15.576, 16.168] with probability "
           "0.95, certified log10 Z <= 19.3859; wrote m.PR")
COUNTED = ("answer 3: approximate model counting (ApproxMC, epsilon 0.8, delta 0.2, 56 * 2^29 "
           "models of the formula): log10 Z = 10.4781; log10 Z in [10.2228, 10.7333] with "
           "probability 0.8; wrote m.PR")


def test_the_sampling_bounds_and_the_certified_one_are_read():
    assert bp.printed_bounds(SAMPLED) == (15.576, 16.168, 19.3859)


def test_the_count_bounds_are_read_without_a_certified_one():
    low, high, cert = bp.printed_bounds(SAMPLED + "\n" + COUNTED)
    assert (low, high) == (10.2228, 10.7333) and math.isnan(cert)


def test_no_bounds_printed_is_nan():
    assert all(math.isnan(v) for v in bp.printed_bounds("answer 1: trivial (no inference)"))


def test_the_subset_by_default_and_every_problem_in_uai_pr_all(tmp_path, monkeypatch):
    """``uai_pr`` runs the problems of ``SUBSET``, ``uai_pr_all`` every problem of the folder
    with a published answer."""
    from bench import bench_uai_pr_all
    from mrflib import FactorGraph, io

    for name in ("Grids_11", "Chain_1"):
        io.write_uai(FactorGraph([2, 2], [(0, 1)], [[[0.0, 1.0], [1.0, 0.0]]]),
                     tmp_path / f"{name}.uai")
        (tmp_path / f"{name}.uai.PR").write_text("PR\n1.0\n")
    monkeypatch.setenv(bp.ENV, str(tmp_path))
    monkeypatch.delenv(f"{bp.ENV}_PROBLEMS", raising=False)
    monkeypatch.setattr(bp, "SUBSET", ("Grids_11",))
    seen = []
    monkeypatch.setattr(bp, "problem_row", lambda p, seconds: seen.append(p.name) or {})
    assert bp.run() == [{}] and seen == ["Grids_11"]
    seen.clear()
    bench_uai_pr_all.run()
    assert sorted(seen) == ["Chain_1", "Grids_11"]
