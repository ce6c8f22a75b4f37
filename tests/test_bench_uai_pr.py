"""The UAI 2014 PR benchmark (``bench/bench_uai_pr.py``): the bounds it reads from the
solver's stderr, importance sampling's (with a certified bound) and an approximate model
count's (without)."""

from __future__ import annotations

import math

import numpy as np
import pytest

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


def test_sample_search_prints_a_lower_bound_only():
    searched = ("answer 7: SampleSearch (74 samples, 29327 SAT calls): log10 Z = 368.341; "
                "log10 Z >= 367.04 with probability 0.95; wrote m.PR")
    low, high, cert = bp.printed_bounds(SAMPLED + "\n" + searched)
    assert low == 367.04 and math.isnan(high) and math.isnan(cert)


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


def _problem(tmp_path, name, model, published):
    from bench.bench_uai_mpe import Problem
    from mrflib import io

    io.write_uai(model, tmp_path / f"{name}.uai")
    (tmp_path / f"{name}.uai.PR").write_text(f"PR\n{published}\n")
    return Problem(name, "relational", tmp_path / f"{name}.uai", None,
                   tmp_path / f"{name}.uai.PR")


def test_a_published_value_above_the_trivial_bound_is_not_scored(tmp_path):
    """``Z <= Π |X_v| Π max ψ_k``: a published value above it is wrong, and such a row is
    not scored (NaN) unless an exact value replaces it."""
    from mrflib import FactorGraph

    model = FactorGraph([2, 2], [(0, 1)], [[[0.0, 1.0], [1.0, 0.0]]])
    bound = (1.0 + 2 * math.log(2.0)) / math.log(10.0)
    p = _problem(tmp_path, "Chain_1", model, bound + 1.0)
    reference, note = bp.reference_log10_z(p, bound + 1.0, bound)
    assert math.isnan(reference) and note.startswith("not scored") and "upper bound" in note
    assert bp.reference_log10_z(p, bound - 0.1, bound) == (bound - 0.1, "")


def test_pygms_exact_log_z_replaces_a_wrong_published_value(tmp_path, monkeypatch):
    """A problem of ``PEER_EXACT`` is scored against pyGMs' exact ``log10 Z``, with its
    evidence; it equals enumeration's."""
    from mrflib import FactorGraph, exact, io

    rng = np.random.default_rng(3)
    scopes = [(0, 1), (1, 2), (0, 2, 3), (3,)]
    tables = [rng.normal(size=(2, 3)), rng.normal(size=(3, 2)),
              rng.normal(size=(2, 2, 2)), rng.normal(size=2)]
    model = FactorGraph([2, 3, 2, 2], scopes, tables)
    p = _problem(tmp_path, "relational_9", model, 99.0)
    (tmp_path / "relational_9.uai.evid").write_text("1 1 2\n")
    p = p._replace(evidence=tmp_path / "relational_9.uai.evid")
    monkeypatch.setattr(bp, "PEER_EXACT", ("relational_9",))
    reference, note = bp.reference_log10_z(p, 99.0, 120.0)
    evidence = io.read_evidence(p.evidence, model)
    truth = exact.enumeration.log_partition(model.condition(evidence)) / math.log(10.0)
    assert reference == pytest.approx(truth, abs=1e-12)
    assert "pyGMs" in note and "99 is wrong" in note


def test_a_disputed_published_value_is_not_scored_and_our_exact_value_noted(tmp_path,
                                                                             monkeypatch):
    """A problem of ``DISPUTED`` is not scored; the note gives our exact ``log10 Z``
    (computed at bench time, with the evidence) and how far the published value is."""
    from mrflib import FactorGraph, exact, io

    rng = np.random.default_rng(4)
    model = FactorGraph([2, 3, 2], [(0, 1), (1, 2), (2,)],
                        [rng.normal(size=(2, 3)), rng.normal(size=(3, 2)), rng.normal(size=2)])
    p = _problem(tmp_path, "linkage_9", model, -5.0)
    (tmp_path / "linkage_9.uai.evid").write_text("1 0 1\n")
    p = p._replace(evidence=tmp_path / "linkage_9.uai.evid")
    monkeypatch.setattr(bp, "DISPUTED", ("linkage_9",))
    reference, note = bp.reference_log10_z(p, -5.0, 3.0)
    evidence = io.read_evidence(p.evidence, model)
    truth = exact.enumeration.log_partition(model.condition(evidence)) / math.log(10.0)
    assert math.isnan(reference) and note.startswith("not scored")
    assert f"{truth:.6f}" in note and "published -5," in note
