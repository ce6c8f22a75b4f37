"""The UAI format (models, evidence, answers), the ``solve`` command line and conversions."""

from __future__ import annotations

import gzip
import math
import os
import subprocess
import sys
import tracemalloc
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest

from mrflib import FactorGraph, datasets, io
from mrflib._support.validation import memory_requests
from mrflib.io import _answers, _uai_text
from mrflib.io.solve import main as solve_main
from mrflib.models.factor_graph import all_states

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "mrflib" / "data" / "uai"


def random_model(rng: np.random.Generator, n: int = 6, factors: int = 8) -> FactorGraph:
    """Cardinalities 1..3, scopes of 0..3 variables, weights over 600 decades, 20 % zeros."""
    card = rng.integers(1, 4, n)
    scopes, tables = [], []
    for _ in range(factors):
        scope = tuple(rng.choice(n, rng.integers(0, 4), replace=False).tolist())
        shape = tuple(card[v] for v in scope)
        p = np.array(rng.random(shape) * 10.0 ** rng.integers(-300, 300)).reshape(shape)
        p[rng.random(p.shape) < 0.2] = 0.0
        with np.errstate(divide="ignore"):
            tables.append(np.log(p))
        scopes.append(scope)
    return FactorGraph(card, scopes, tables)


def write(tmp_path: Path, text: str, name: str = "m.uai") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# ---------------------------------------------------------------------- round trips
@pytest.mark.parametrize("suffix", [".uai", ".uai.gz"])
def test_write_read_round_trip_is_bit_identical(tmp_path, suffix):
    rng = np.random.default_rng(0)
    for trial in range(40):
        model = random_model(rng)
        path = tmp_path / f"m{trial}{suffix}"
        io.write_uai(model, path)
        back = io.read_uai(path)
        assert back == model, trial
        assert any(np.isneginf(t).any() for t in back.log_tables)
        io.write_uai(back, tmp_path / f"again{suffix}")  # and the file is a fixed point
        assert (tmp_path / f"again{suffix}").read_bytes() == path.read_bytes()
    if suffix.endswith(".gz"):
        assert path.read_bytes()[:2] == b"\x1f\x8b"


def test_round_trip_covers_cardinality_one_and_empty_scopes(tmp_path):
    with np.errstate(divide="ignore"):
        table = np.log([[0.5], [0.0], [3.0]])
    model = FactorGraph([1, 3, 1], [(), (1, 0), (2,), ()],
                        [np.log(2.5), table, [0.0], np.log(1e-300)])
    io.write_uai(model, tmp_path / "m.uai")
    assert io.read_uai(tmp_path / "m.uai") == model


def test_arbitrary_log_tables_come_back_within_an_ulp_of_exp(tmp_path):
    rng = np.random.default_rng(1)
    model = FactorGraph([4, 5], [(0, 1)], [rng.normal(size=(4, 5)) * 3])
    io.write_uai(model, tmp_path / "m.uai")
    back = io.read_uai(tmp_path / "m.uai").log_tables[0]
    np.testing.assert_allclose(back, model.log_tables[0], rtol=0, atol=4e-16 * 10)


def test_the_shared_problems_round_trip(tmp_path):
    for name in datasets.UAI_PROBLEMS:
        model = io.read_uai(DATA / f"{name}.uai")
        io.write_uai(model, tmp_path / "m.uai.gz")
        assert io.read_uai(tmp_path / "m.uai.gz") == model


def test_deep_subnormal_weights_round_trip_when_they_come_from_a_file(tmp_path):
    """A weight of 5e-324 in a file reads back bit for bit; a log-weight whose exp is a
    subnormal with too few digits to give it back is refused (test below)."""
    model = io.read_uai(write(tmp_path, "MARKOV 1 2 1 1 0 2 5e-324 1e-310"))
    io.write_uai(model, tmp_path / "back.uai")
    assert io.read_uai(tmp_path / "back.uai") == model


def test_unwritable_weights_are_refused(tmp_path):
    for table, what in (([0.0, 800.0], "overflows"), ([0.0, -800.0], "underflows"),
                        ([-744.0, -745.0], "subnormal float read back as")):
        with pytest.raises(ValueError, match=rf"log_tables\[0\].*{what}"):
            io.write_uai(FactorGraph([2], [(0,)], [table]), tmp_path / "m.uai")
    assert not (tmp_path / "m.uai").exists()
    with pytest.raises(TypeError, match="model must be a BoltzmannMachine or a FactorGraph"):
        io.write_uai("model", tmp_path / "m.uai")


def test_a_file_of_100k_entries_reads_fast(tmp_path):
    import time

    rng = np.random.default_rng(2)
    n = 200
    scopes = [(i, (i + 1) % n) for i in range(n)] * 5
    model = FactorGraph([10] * n, scopes, [np.log(rng.random((10, 10))) for _ in scopes])
    io.write_uai(model, tmp_path / "big.uai")
    start = time.process_time()
    back = io.read_uai(tmp_path / "big.uai")
    assert time.process_time() - start < 10.0  # CPU time: a loaded machine does not stretch it
    assert back == model


# ---------------------------------------------------------------------- reading
def test_conventions_last_variable_fastest_logs_and_zero(tmp_path):
    path = write(tmp_path, "MARKOV\n3\n2 3 2\n2\n2 1 0\n1 2\n\n6\n1 2\n3 4\n5 0\n2\n0.5 7\n")
    model = io.read_uai(path)
    assert model.scopes == ((1, 0), (2,))
    with np.errstate(divide="ignore"):
        expected = np.log(np.array([[1.0, 2], [3, 4], [5, 0]]))  # axes (x_1, x_0)
    np.testing.assert_array_equal(model.log_tables[0], expected)
    assert model.log_tables[0][2, 1] == -np.inf
    assert model.log_tables[1].tolist() == [math.log(0.5), math.log(7)]
    with pytest.raises(ValueError):
        model.log_tables[0][0, 0] = 1.0  # read-only


def test_bayes_files_are_read_like_markov_ones(tmp_path):
    text = "2\n2 2\n2\n1 0\n2 0 1\n2\n0.3 0.7\n4\n0.9 0.1\n0.2 0.8\n"
    bayes = io.read_uai(write(tmp_path, "BAYES\n" + text, "b.uai"))
    markov = io.read_uai(write(tmp_path, "MARKOV\n" + text, "m.uai"))
    assert bayes == markov
    x = all_states(bayes.cardinalities)
    assert np.exp(bayes.log_weight(x)).sum() == pytest.approx(1.0)


def test_gzip_is_recognised_by_its_bytes_whatever_the_name(tmp_path):
    text = "MARKOV 1 2 1 1 0 2 1 3"
    (tmp_path / "plain.uai").write_bytes(gzip.compress(text.encode()))
    (tmp_path / "named.uai.gz").write_bytes(gzip.compress(text.encode()))
    want = FactorGraph([2], [(0,)], [np.log([1.0, 3.0])])
    assert io.read_uai(tmp_path / "plain.uai") == want
    assert io.read_uai(str(tmp_path / "named.uai.gz")) == want


def test_reader_agrees_with_pgmpy_on_mixed_cardinalities(tmp_path):
    """pgmpy's own UAI reader, an independent parser, gives the same weights on a file with
    cardinalities 2, 3 and 4, a three-variable factor and scopes out of variable order."""
    pytest.importorskip("pgmpy")
    from pgmpy.readwrite import UAIReader

    rng = np.random.default_rng(3)
    card = [2, 3, 4, 2]
    scopes = [(2, 0, 3), (1,), (3, 1), (0, 2)]
    model = FactorGraph(card, scopes, [np.log(rng.random([card[v] for v in s]) + 0.1)
                                       for s in scopes])
    io.write_uai(model, tmp_path / "m.uai")
    peer = UAIReader(str(tmp_path / "m.uai")).get_model()
    other = io.from_pgmpy(peer, variables=[f"var_{i}" for i in range(model.n)])
    x = all_states(model.cardinalities)
    np.testing.assert_allclose(other.log_weight(x), model.log_weight(x), rtol=1e-12)


@pytest.mark.parametrize("name, n, max_card, max_scope, zeros, observed", [
    ("Grids_12", 100, 2, 2, 0, 0),
    ("ObjectDetection_11", 60, 11, 2, 3525, 0),
    ("Promedus_24", 200, 2, 3, 297, 4),
    ("CSP_12", 67, 4, 3, 0, 0),
])
def test_the_shared_problems_read(name, n, max_card, max_scope, zeros, observed):
    model = io.read_uai(DATA / f"{name}.uai")
    assert model.n == n
    assert int(model.cardinalities.max()) == max_card
    assert max(len(s) for s in model.scopes) == max_scope
    assert sum(int(np.isneginf(t).sum()) for t in model.log_tables) == zeros
    evidence = io.read_evidence(DATA / f"{name}.uai.evid", model)
    assert len(evidence) == observed
    problem = datasets.uai_problem(name)
    assert problem.model == io.read_uai(DATA / f"{name}.uai", evidence=DATA / f"{name}.uai.evid")
    assert problem.model == model.condition(evidence)
    assert len(problem.marginals) == n
    if name == "CSP_12":
        assert set(model.cardinalities.tolist()) == {2, 4}


def test_uai_problem_is_read_only_and_names_the_choices():
    p = datasets.uai_problem("Promedus_24")
    assert dict(p.evidence) == {63: 1, 25: 1, 66: 1, 44: 1}
    assert p.log10_partition == -5.86181
    with pytest.raises(TypeError):
        p.evidence[0] = 1
    with pytest.raises(ValueError):
        p.marginals[0][0] = 0.5
    with pytest.raises(ValueError, match="Grids_12"):
        datasets.uai_problem("Grids_13")


# ---------------------------------------------------------------------- malformed files
MODEL = "MARKOV\n2\n2 3\n2\n1 0\n2 0 1\n2\n1 2\n6\n1 2 3\n4 5 6\n"
# (description, text, what the message must say besides the file name)
MALFORMED = [
    ("empty file", "", r"end of file.*expected the network type MARKOV or BAYES"),
    ("unknown network type", "BAYESIAN\n2\n", r"line 1, token 'BAYESIAN'.*MARKOV or BAYES"),
    ("truncated in the header", "MARKOV\n2\n2", r"end of file.*cardinalities of 2 variables"),
    ("truncated in a table", MODEL[:-6], r"end of file.*factor 1's 6 entries.*declared on "
                                         r"line 9.*truncated"),
    ("truncated in the scopes", "MARKOV\n2\n2 3\n2\n1 0\n2 0", r"end of file.*factor 1's"),
    ("wrong entry count", MODEL.replace("\n6\n", "\n5\n"), r"line 9, token '5'.*factor 1's "
                                                           r"entry count 6"),
    ("too few factors declared", MODEL.replace("\n2\n1 0", "\n1\n1 0", 1),
     r"line 7, token '2'.*end of the file after factor 0's table"),
    ("not a number in the header", MODEL.replace("2 3", "2 three"),
     r"line 3, token 'three'.*cardinality of variable 1"),
    ("not a number in a table", MODEL.replace("4 5 6", "4 five 6"),
     r"factor 1's table, entry 4 \(line 11, token 'five'\)"),
    ("a negative entry", MODEL.replace("4 5 6", "4 -5 6"),
     r"factor 1's table, entry 4 \(line 11, token '-5'\).*>= 0"),
    ("a NaN entry", MODEL.replace("1 2 3", "1 nan 3"),
     r"factor 1's table, entry 1 \(line 10, token 'nan'\).*finite"),
    ("an inf entry", MODEL.replace("\n1 2\n", "\ninf 2\n"),
     r"factor 0's table, entry 0 \(line 8, token 'inf'\).*finite"),
    ("a variable out of range", MODEL.replace("2 0 1", "2 0 2"),
     r"line 6, token '2'.*variable 1 of factor 1's scope \(an integer 0..1\)"),
    ("a negative variable", MODEL.replace("2 0 1", "2 0 -1"),
     r"line 6, token '-1'.*variable 1 of factor 1's scope"),
    ("a duplicate variable in a scope", MODEL.replace("2 0 1", "2 1 1"),
     r"line 6, token '1'.*not already in the scope"),
    ("a cardinality of 0", MODEL.replace("2 3", "2 0"),
     r"line 3, token '0'.*cardinality of variable 1 \(an integer >= 1\)"),
    ("no variables", "MARKOV 0 0", r"line 1, token '0'.*number of variables"),
    ("a scope larger than n", "MARKOV 1 2 1 3 0 0 0", r"token '3'.*size of factor 0's scope"),
    ("trailing garbage", MODEL + "7\n", r"line 12, token '7'.*end of the file after factor 1"),
    ("a fractional count", MODEL.replace("\n6\n", "\n6.0\n"), r"token '6.0'.*entry count"),
    ("a table too large to hold", "MARKOV 2 2097152 2097152 1 2 0 1 4398046511104 1",
     r"token '4398046511104'.*at most"),
    ("a 'c' comment line (only # starts a comment)", "c a comment\n" + MODEL,
     r"line 1, token 'c'.*MARKOV or BAYES"),
    ("digit separators in an entry", MODEL.replace("4 5 6", "4 5_0 6"),
     r"factor 1's table, entry 4 \(line 11, token '5_0'\)"),
    ("a weight below float64's range", MODEL.replace("4 5 6", "4 1e-400 6"),
     r"factor 1's table, entry 4 \(line 11, token '1e-400'\).*below float64's range"),
    ("a hexadecimal entry", MODEL.replace("4 5 6", "4 0x5 6"), r"token '0x5'"),
    ("a table too large for memory", "MARKOV 2 524288 524288 1 2 0 1 274877906944 1 2",
     r"factor 0's table \(line 1; 274877906944 entries.*would need .* of memory"),
    ("a cardinality beyond int64", MODEL.replace("2 3", "2 " + "9" * 30),
     r"line 3, token '9+'.*cardinality of variable 1.*at most 9223372036854775807"),
    ("a cardinality of 5000 digits", MODEL.replace("2 3", "2 " + "9" * 5000),
     r"line 3, token '9{30}'\.\.\. \(5000 characters\).*cardinality of variable 1.*at most"),
    ("a table past 4300 digits", "MARKOV 15000 " + "2 " * 15000 + "1 15000 "
     + " ".join(map(str, range(15000))) + " 1 1", r"entry count about 10\^4515"),
    ("Arabic-Indic digits in an entry", MODEL.replace("4 5 6", "4 \u0661 6"),
     r"entry 4 \(line 11, token '\u0661'\): expected a decimal number in ASCII digits"),
    ("full-width digits in an entry", MODEL.replace("4 5 6", "4 \uff15 6"),
     r"entry 4 \(line 11, token '\uff15'\): expected a decimal number in ASCII digits"),
    ("a zero-padded count of 5000 digits beyond int64", MODEL.replace("2 3", "2 " + "0" * 5000
                                                                      + "9" * 20),
     r"line 3, token '0{30}'\.\.\. \(5020 characters\).*cardinality of variable 1.*at most"),
    ("one variable too many in the header", MODEL.replace("MARKOV\n2\n", "MARKOV\n3\n"),
     r"line 6, token '2'.*the header declares 3 variables on line 2 and 1 factors on line 5; "
     r"if a count is wrong"),
    ("one variable too few in the header", MODEL.replace("MARKOV\n2\n", "MARKOV\n1\n"),
     r"the header declares 1 variables on line 2 and 3 factors on line 3"),
]


@pytest.mark.parametrize("what, text, message", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_files_are_refused_naming_file_and_place(tmp_path, what, text, message):
    path = write(tmp_path, text, "bad model.uai")
    with pytest.raises(ValueError, match=message) as err:
        io.read_uai(path)
    assert str(err.value).startswith(f"{path}: "), err.value


@pytest.mark.parametrize("text", [MODEL.replace("\n", "\r\n"), "\ufeff" + MODEL,
                                  MODEL.replace("4 5 6", "4 5e0 6.000"),
                                  MODEL.replace("1 2 3", "0 0.0e5 -0"),
                                  MODEL.replace("2 3", "2 " + "0" * 5000 + "3"),
                                  MODEL.replace("\n6\n", "\n" + "0" * 4400 + "6\n"),
                                  MODEL.replace("2\n2 3", "2 # two\n2 3")])
def test_harmless_variants_read_the_same(tmp_path, text):
    """CRLF line ends, a byte-order mark, other spellings of the same numbers and zeros,
    a comment."""
    want = io.read_uai(write(tmp_path, MODEL, "plain.uai"))
    got = io.read_uai(write(tmp_path, text))
    if "0.0e5" in text:
        assert all(np.isneginf(got.log_tables[1][0])) and got.log_tables[0].tolist() == \
            want.log_tables[0].tolist()
    else:
        assert got == want


def test_huge_declared_tables_are_refused_before_allocating(tmp_path):
    path = write(tmp_path, {m[0]: m[1] for m in MALFORMED}["a table too large for memory"])
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="of memory"):
            io.read_uai(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1e6


def test_binary_and_broken_gzip_files_are_refused(tmp_path):
    (tmp_path / "bin.uai").write_bytes(b"MARKOV \xff\xfe")
    with pytest.raises(ValueError, match=r"bin.uai: byte 7 is not text"):
        io.read_uai(tmp_path / "bin.uai")
    (tmp_path / "cut.uai.gz").write_bytes(gzip.compress(MODEL.encode())[:-10])
    with pytest.raises(ValueError, match=r"cut.uai.gz: not a readable gzip file"):
        io.read_uai(tmp_path / "cut.uai.gz")


# ---------------------------------------------------------------------- evidence
@pytest.mark.parametrize("text, want", [
    ("", {}), ("0", {}), ("0\n", {}), ("2 1 2 0 1", {1: 2, 0: 1}),
    ("1\n2 1 2 0 1\n", {1: 2, 0: 1}),  # the older form: one sample
    ("1 0", {}), ("1 1 0", {1: 0}),
])
def test_evidence_forms(tmp_path, text, want):
    assert io.read_evidence(write(tmp_path, text, "e.evid")) == want


def test_evidence_round_trip_and_application(tmp_path):
    model = io.read_uai(write(tmp_path, MODEL))
    io.write_evidence(tmp_path / "e.evid", {1: 2, 0: 1}, model)
    assert (tmp_path / "e.evid").read_text() == "2 0 1 1 2\n"
    assert io.read_evidence(tmp_path / "e.evid", model) == {0: 1, 1: 2}
    conditioned = io.read_uai(tmp_path / "m.uai", evidence=tmp_path / "e.evid")
    assert conditioned == model.condition({0: 1, 1: 2})
    assert io.read_uai(tmp_path / "m.uai", evidence={1: 0}) == model.condition({1: 0})
    io.write_evidence(tmp_path / "none.evid", {})
    assert io.read_evidence(tmp_path / "none.evid") == {}


@pytest.mark.parametrize("text, message", [
    ("2 1 2 0", r"line 1, token '2'.*UAI 2014 form.*older one.*4 tokens"),
    ("2 1 2", r"end of file.*2 pairs"),
    ("2 1 2 1 0", r"line 1, token '1'.*observed variable 1.*not observed before"),
    ("1 2 0", r"line 1, token '2'.*observed variable 0 \(an integer 0..1"),
    ("1 1 3", r"line 1, token '3'.*value of variable 1 \(an integer 0..2\)"),
    ("1 1 x", r"token 'x'.*value of variable 1"),
    ("2 1 1 0 0 1 1 0 1 1", r"line 1, token '2'.*several samples are not supported"),
    ("1 1 0 7 7", r"token '7'.*end of the file after the 1 observed"),
    ("1 " + "9" * 20 + " 0", r"token '9+'.*observed variable 0.*at most"),
])
def test_malformed_evidence_is_refused(tmp_path, text, message):
    model = io.read_uai(write(tmp_path, MODEL))
    path = write(tmp_path, text, "e.evid")
    with pytest.raises(ValueError, match=message) as err:
        io.read_evidence(path, model)
    assert str(err.value).startswith(f"{path}: ")
    with pytest.raises(ValueError, match=message):
        io.read_uai(tmp_path / "m.uai", evidence=path)


def test_write_evidence_checks_its_input(tmp_path):
    model = io.read_uai(write(tmp_path, MODEL))
    with pytest.raises(ValueError, match="outside 0..2"):
        io.write_evidence(tmp_path / "e.evid", {1: 3}, model)
    with pytest.raises(ValueError, match="integer variables >= 0"):
        io.write_evidence(tmp_path / "e.evid", {-1: 0})
    with pytest.raises(ValueError, match="mapping"):
        io.write_evidence(tmp_path / "e.evid", [(1, 0)])
    for beyond in ({0: np.uint64(2**64 - 1)}, {2**70: 0}):  # read_evidence refuses them
        with pytest.raises(ValueError, match="int64"):
            io.write_evidence(tmp_path / "e.evid", beyond)
    assert not (tmp_path / "e.evid").exists()


# ---------------------------------------------------------------------- answers
def test_the_sample_answer_files_are_read_exactly():
    pr = io.read_answer(DATA / "Grids_12.uai.PR")
    assert pr == ("PR", 303.086)
    mar = io.read_answer(DATA / "Promedus_24.uai.MAR")
    assert mar.task == "MAR" and len(mar.value) == 200
    assert mar.value[0].tolist() == [0.994159, 0.00584149]
    assert mar.value[1].tolist() == [0.999926, 7.37983e-05]
    ob = io.read_answer(DATA / "ObjectDetection_11.uai.MAR").value
    assert [len(p) for p in ob] == io.read_uai(DATA / "ObjectDetection_11.uai"
                                               ).cardinalities.tolist()
    for name in datasets.UAI_PROBLEMS:
        for p in io.read_answer(DATA / f"{name}.uai.MAR").value:
            assert p.sum() == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_answers_round_trip(tmp_path, suffix):
    path = tmp_path / f"a{suffix}"
    values = {"PR": -123.45678901234567, "MAR": [np.array([0.25, 0.75]), np.array([1.0]),
                                                 np.array([0.1, 0.2, 0.7])],
              "MPE": np.array([0, 3, 1])}
    for task, value in values.items():
        io.write_answer(path, task, value)
        back = io.read_answer(path)
        assert back.task == task
        if task == "MAR":
            assert all(np.array_equal(a, b) for a, b in zip(back.value, value))
        else:
            assert np.array_equal(back.value, value)
    io.write_answer(path, "PR", -math.inf)  # Z = 0: impossible evidence
    assert io.read_answer(path).value == -math.inf
    io.write_answer(tmp_path / "m", "MPE", [1, 0])
    assert (tmp_path / "m").read_text() == "MPE\n2 1 0\n"
    io.write_answer(tmp_path / "m", "MAR", [[0.5, 0.5], [1.0]])
    assert (tmp_path / "m").read_text() == "MAR\n2 2 0.5 0.5 1 1.0\n"


@pytest.mark.parametrize("task, value, message", [
    ("XX", 1.0, "task must be one of"), ("PR", math.nan, "log10 Z"),
    ("PR", math.inf, "log10 Z"), ("MPE", [0, -1], "integers >= 0"),
    ("MPE", [0.5], "integers"), ("MAR", [[0.5, np.nan]], r"value\[0\]"),
    ("MAR", [[]], r"value\[0\]"), ("MAR", np.ones((2, 2)), "sequence"),
    ("PR", "1.5", "log10 Z"), ("PR", True, "log10 Z"),
    ("MPE", np.array([2**64 - 1], np.uint64), "int64"),
])
def test_bad_answers_are_refused(tmp_path, task, value, message):
    with pytest.raises(ValueError, match=message):
        io.write_answer(tmp_path / "a", task, value)


@pytest.mark.parametrize("text, message", [
    ("", r"end of file.*task PR, MAR or MPE"), ("BEL\n1.0", r"token 'BEL'"),
    ("PR\n", r"end of file.*log10 Z"), ("PR\nnan", r"token 'nan'.*log10 Z"),
    ("PR\n1.0 2.0", r"token '2.0'.*end of the file after the PR answer"),
    ("MAR\n2 2 0.5 0.5 2 0.5", r"end of file.*probabilities of variable 1"),
    ("MAR\n1 2 0.5 -0.5", r"line 2, token '-0.5'.*probability of variable 0"),
    ("MAR\n1 0 0.5", r"token '0'.*cardinality of variable 0"),
    ("MPE\n3 0 1", r"end of file.*states of 3 variables"),
    ("MPE\n2 0 1.5", r"token '1.5'.*state of variable 1"),
    ("MPE\n1 " + "9" * 20, r"token '9+'.*state of variable 0.*at most"),
    ("PR\n\u0661", r"token '\u0661'.*log10 Z.*decimal number in ASCII digits"),
    ("PR\n1_0", r"token '1_0'.*log10 Z.*decimal number in ASCII digits"),
    ("MAR\n1 2 0.5 \uff10.5", r"token '\uff10.5'.*probability of variable 0.*ASCII"),
    ("MPE\n1 " + "0" * 5000 + "1" + "9" * 19, r"state of variable 0.*at most"),
])
def test_malformed_answers_are_refused(tmp_path, text, message):
    path = write(tmp_path, text, "a.MAR")
    with pytest.raises(ValueError, match=message) as err:
        io.read_answer(path)
    assert str(err.value).startswith(f"{path}: ")


# ---------------------------------------------------------------------- conversions
def test_alarm_as_a_factor_graph_has_the_joint_log_probabilities():
    net = datasets.expert_network("alarm")
    fg = net.to_factor_graph()
    assert fg.n == net.n == 37 and fg.cardinalities.tolist() == list(net.cardinalities)
    rng = np.random.default_rng(4)
    x = np.vstack([net.sample(500, rng=rng).astype(np.int64),  # likely states and any states
                   rng.integers(0, net.cardinalities, (500, net.n))])
    with np.errstate(divide="ignore"):
        ref = sum(np.log(net.cpds[i][net._configuration(x, i), x[:, i]]) for i in range(net.n))
    assert np.isneginf(ref).any() and np.isfinite(ref).any()
    np.testing.assert_array_equal(fg.log_weight(x), ref)


def test_asia_as_a_factor_graph_gives_the_joint_table():
    net = datasets.expert_network("asia")
    fg = net.to_factor_graph()
    x = all_states(fg.cardinalities)  # variable 0 fastest: the joint's flat order
    np.testing.assert_allclose(np.exp(fg.log_weight(x)), net.joint(), rtol=1e-12, atol=1e-300)


def test_from_pgmpy_bayesian_network_matches_the_expert_network():
    pytest.importorskip("pgmpy")
    net = datasets.expert_network("child")
    fg = io.from_pgmpy(datasets.pgmpy_model("child"), variables=net.variables)
    x = np.random.default_rng(5).integers(0, net.cardinalities, (300, net.n))
    np.testing.assert_allclose(fg.log_weight(x), net.to_factor_graph().log_weight(x),
                               rtol=1e-12)


def test_to_pgmpy_and_back_keeps_the_weights_and_the_partition_function():
    pytest.importorskip("pgmpy")
    rng = np.random.default_rng(6)
    model = FactorGraph([2, 3, 2, 1], [(), (1, 0), (2,), (0, 1)],
                        [0.7, np.log(rng.random((3, 2))), [-np.inf, np.log(2.0)],
                         rng.normal(size=(2, 3))])  # variable 3 is in no factor
    net = io.to_pgmpy(model)
    assert net.check_model()
    x = all_states(model.cardinalities)
    lw = model.log_weight(x)
    assert math.log(net.get_partition_function()) == pytest.approx(np.logaddexp.reduce(lw),
                                                                   rel=1e-12)
    back = io.from_pgmpy(net, variables=range(model.n))
    np.testing.assert_allclose(back.log_weight(x), lw, rtol=1e-12)
    with pytest.raises(ValueError, match="distinct node names"):
        io.to_pgmpy(model, names=["a", "a", "b", "c"])
    with pytest.raises(TypeError, match="DiscreteBayesianNetwork"):
        io.from_pgmpy(model)


def test_pgmpy_missing_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pgmpy.models", None)
    with pytest.raises(ImportError, match=r'pip install "mrflib\[datasets\]"'):
        io.to_pgmpy(FactorGraph([2], [(0,)], [[0.0, 0.0]]))


# ---------------------------------------------------------------------- command line
def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mrflib", "solve", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def test_cli_refuses_a_malformed_file_in_one_line(tmp_path):
    path = write(tmp_path, MODEL.replace("4 5 6", "4 -5 6"))
    res = run_cli(str(path), "--task", "PR", "-q")
    assert res.returncode == 1
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr
    assert str(path) in res.stderr and "factor 1's table, entry 4" in res.stderr
    assert res.stdout == ""
    loud = run_cli(str(path), "--task", "PR")  # progress lines, then the reason, last
    assert loud.returncode == 1 and loud.stderr.splitlines()[-1].startswith("mrflib solve: error")
    assert "Traceback" in run_cli(str(path), "--task", "PR", "--debug").stderr


def test_cli_usage_errors(tmp_path, capsys):
    with pytest.raises(SystemExit) as err:
        solve_main([str(tmp_path / "m.uai"), "--task", "XYZ"])
    assert err.value.code == 2
    assert solve_main([str(tmp_path / "missing.uai"), "--task", "PR", "-q"]) == 1
    assert "missing.uai' does not exist" in capsys.readouterr().err


@pytest.mark.parametrize("name", datasets.UAI_PROBLEMS)
def test_cli_answers_the_shared_problems(tmp_path, name):
    problem = datasets.uai_problem(name)
    for task in ("PR", "MAR"):
        out = tmp_path / f"{name}.{task}"
        res = run_cli(str(problem.path), "--evid", str(problem.evidence_path), "--task", task,
                      "--out", str(out))
        assert res.returncode == 0, res.stderr
        assert "treewidth" in res.stderr and res.stdout == ""
        answer = io.read_answer(out)
        if task == "PR":
            assert abs(answer.value - problem.log10_partition) <= 5e-6 * abs(
                problem.log10_partition)
        else:
            for got, want in zip(answer.value, problem.marginals):
                np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)


def test_cli_mpe_and_stdout_on_a_small_model_against_enumeration(tmp_path, capsys):
    model = random_model(np.random.default_rng(7), n=5, factors=6)
    io.write_uai(model, tmp_path / "m.uai")
    io.write_evidence(tmp_path / "m.evid", {2: 0})
    conditioned = model.condition({2: 0})
    lw = conditioned.log_weight(all_states(model.cardinalities))
    assert solve_main([str(tmp_path / "m.uai"), "--evid", str(tmp_path / "m.evid"),
                       "--task", "PR", "-q"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("PR\n")
    assert float(text.split()[1]) == pytest.approx(np.logaddexp.reduce(lw) / math.log(10),
                                                   rel=1e-12)
    assert solve_main([str(tmp_path / "m.uai"), "--evid", str(tmp_path / "m.evid"),
                       "--task", "MPE", "--out", str(tmp_path / "m.MPE"), "-q"]) == 0
    states = io.read_answer(tmp_path / "m.MPE").value
    assert states[2] == 0 and conditioned.log_weight(states) == pytest.approx(lw.max())


def test_cli_refuses_an_unwritable_out_before_solving(tmp_path, capsys):
    """--out a directory, a device or a named pipe, '' or under a file: one line naming
    --out, status 1, nothing replaced (an atomic rename over /dev/full would replace the
    device itself)."""
    model = write(tmp_path, MODEL)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for out in (str(tmp_path), str(fifo), "", str(model / "x"), "/dev/null"):
        assert solve_main([str(model), "--task", "PR", "--out", out, "-q"]) == 1, out
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("mrflib solve: error: --out"), err
    assert fifo.is_fifo() and model.read_text() == MODEL


def test_cli_refuses_an_out_that_is_its_model_or_evidence(tmp_path, capsys):
    """--out naming the model (or the evidence) replaced it with the answer."""
    model = write(tmp_path, MODEL)
    evid = write(tmp_path, "1 0 1", "e.evid")
    (tmp_path / "link.uai").symlink_to(model)
    for out in (str(model), str(evid), str(tmp_path / "link.uai")):
        argv = [str(model), "--evid", str(evid), "--task", "PR", "--out", out, "-q"]
        assert solve_main(argv) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "is the input file" in err, err
    assert model.read_text() == MODEL and evid.read_text() == "1 0 1"


def test_cli_replaces_an_existing_answer_file(tmp_path, capsys, monkeypatch):
    """A second run with the same --out (absolute or relative) replaces the answer: the
    existing file was once taken for the folder to write in and refused."""
    model = write(tmp_path, MODEL)
    out = tmp_path / "a.PR"
    out.write_text("PR\n0.0\n")
    assert solve_main([str(model), "--task", "PR", "--out", str(out), "-q"]) == 0
    first = out.read_text()
    assert first != "PR\n0.0\n" and io.read_answer(out).task == "PR"
    monkeypatch.chdir(tmp_path)
    assert solve_main([str(model), "--task", "PR", "--out", "a.PR", "-q"]) == 0
    assert out.read_text() == first and capsys.readouterr().err == ""


@pytest.mark.parametrize("target", ["dir", "fifo"])
def test_writers_refuse_special_files_naming_the_path(tmp_path, target):
    path = tmp_path / "x"
    path.mkdir() if target == "dir" else os.mkfifo(path)
    for call in (lambda: io.write_answer(path, "PR", -1.0),
                 lambda: io.write_uai(io.read_uai(write(tmp_path, MODEL)), path),
                 lambda: io.write_evidence(path, {0: 1})):
        with pytest.raises(ValueError, match=r"path '.*x' is (a directory|not a regular file)"):
            call()
    assert path.is_dir() if target == "dir" else path.is_fifo()
    with pytest.raises(ValueError, match="path '/proc/no-such/x' cannot be written"):
        io.write_answer("/proc/no-such/x", "PR", -1.0)


def test_cli_zero_probability_evidence(tmp_path, capsys):
    """Evidence of probability zero: PR answers log10 Z = -inf with a one-line warning;
    MAR and MPE are refused in one line, status 1."""
    model = write(tmp_path, "MARKOV 2 2 2 1 2 0 1 4 1 0 0 0")
    evid = write(tmp_path, "1 1 1", "e.evid")
    assert solve_main([str(model), "--evid", str(evid), "--task", "PR", "-q"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "PR\n-inf\n"
    assert captured.err.count("\n") == 1 and captured.err.startswith("mrflib solve: warning:")
    for task in ("MAR", "MPE"):
        assert solve_main([str(model), "--evid", str(evid), "--task", task, "-q"]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Z = 0" in err


def test_a_gzip_bomb_is_refused_before_it_is_inflated(tmp_path, monkeypatch):
    """200 MB of blanks in a 200 kB gzip file, with 100 MiB available: refused after at
    most a few 16 MiB chunks, naming the file and the bytes."""
    path = tmp_path / "bomb.uai"
    path.write_bytes(gzip.compress(b" " * (2 * 10**8)))
    monkeypatch.setattr(_uai_text, "available_memory", lambda: 100 * 2**20)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"bomb.uai: its text, more than \d+ bytes once "
                                             r"decompressed.*of memory"):
            io.read_uai(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 80 * 2**20


@pytest.mark.parametrize("text, message", [
    ("MAR 1 2 0.5 0.7", r"line 1, token '0.5'.*2 probabilities of variable 0 to sum to 1"),
    ("MAR 2 1 1.0 2 0 0", r"token '0'.*probabilities of variable 1 to sum to 1.*sum to 0"),
])
def test_marginals_that_are_not_distributions_are_refused(tmp_path, text, message):
    with pytest.raises(ValueError, match=message):
        io.read_answer(write(tmp_path, text, "a.MAR"))
    with pytest.raises(ValueError, match=r"value\[\d\] must be a distribution"):
        io.format_answer("MAR", [[0.5, 0.7]] if "0.7" in text else [[1.0], [0.0, 0.0]])


class PairMapping(Mapping):
    """A mapping whose keys are distinct objects that are the same integer."""

    def __init__(self, pairs):
        self.pairs = pairs

    def __getitem__(self, key):
        return dict(self.pairs)[key]

    def __iter__(self):
        return iter(k for k, _ in self.pairs)

    def __len__(self):
        return len(self.pairs)

    def items(self):
        return list(self.pairs)


def test_evidence_naming_a_variable_twice_is_refused(tmp_path):
    model = io.read_uai(write(tmp_path, MODEL))
    twice = PairMapping([(0, 1), (np.int64(0), 0)])
    with pytest.raises(ValueError, match="evidence names variable 0 twice"):
        model.condition(twice)
    for m in (model, None):
        with pytest.raises(ValueError, match="evidence names variable 0 twice"):
            io.write_evidence(tmp_path / "e.evid", twice, m)


def _lattice_text(side: int, q: int) -> str:
    from mrflib import graphs

    edges = graphs.square_grid(side, side).tolist()
    table = " ".join(["1"] * (q * q))
    return "\n".join(["MARKOV", str(side * side), " ".join([str(q)] * side * side),
                      str(len(edges)), *(f"2 {i} {j}" for i, j in edges),
                      *(f"{q * q} {table}" for _ in edges)])


@pytest.mark.parametrize("kind", ["binary", "latin-1", "cut gzip", "folder", "too large",
                                  "empty"])
def test_cli_refuses_hostile_models_in_one_line(tmp_path, capsys, kind):
    path = tmp_path / "m.uai"
    if kind == "binary":
        path.write_bytes(bytes(range(256)) * 4)
    elif kind == "latin-1":
        path.write_bytes("MARKOV 1 2 0 é".encode("latin-1"))
    elif kind == "cut gzip":
        path.write_bytes(gzip.compress(MODEL.encode())[:-12])
    elif kind == "folder":
        path.mkdir()
    elif kind == "too large":  # a 30 x 30 lattice of 10 states: treewidth 30
        path.write_text(_lattice_text(30, 10))
    else:
        path.write_text("")
    for task in ("PR", "MAR", "MPE"):
        assert solve_main([str(path), "--task", task, "-q"]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("mrflib solve: error:"), err
        assert "Traceback" not in err and (str(path) in err or "treewidth" in err), err


def test_mar_answer_text_is_sized_before_it_is_built(tmp_path, capsys):
    """A variable of 10^9 states in no factor: log Z is easy, but its MAR answer would be
    ~10^11 bytes of text; refused before the marginals are computed, and the estimate
    covers the measured peak of formatting a million probabilities."""
    path = write(tmp_path, "MARKOV 1 1000000000 0")
    assert solve_main([str(path), "--task", "PR", "-q"]) == 0
    capsys.readouterr()
    assert solve_main([str(path), "--task", "MAR", "-q"]) == 1
    assert "the text of a MAR answer of 1000000000 probabilities would need" in \
        capsys.readouterr().err
    p = np.random.default_rng(0).dirichlet(np.ones(10**6))
    tracemalloc.start()
    try:
        io.format_answer("MAR", [p])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= _answers._ANSWER_ENTRY_BYTES * p.size


@pytest.mark.parametrize("blank", ["\f", "\v", "\x1c", "\u2003", "\u3000"])
def test_the_token_memory_bound_counts_every_whitespace(tmp_path, blank):
    """str.split() also splits on form feeds, 0x1c-0x1f and Unicode spaces: a file of
    ``1<FF>1<FF>...`` was sized as one token, so its million tokens were made unchecked."""
    path = tmp_path / "m.uai"
    path.write_text(blank.join(["1"] * 10**5), encoding="utf-8")
    with memory_requests() as log, pytest.raises(ValueError):
        io.read_uai(path)
    want = [b for what, b in log if "tokens" in what]
    assert want and want[0] >= 64 * 10**5, log


def test_an_empty_path_is_refused_as_empty(tmp_path):
    """``Path("")`` is the current folder: an empty path was reported as "'.' cannot be
    read: Is a directory"."""
    for call, name in ((lambda: io.read_uai(""), "path"),
                       (lambda: io.read_uai(write(tmp_path, MODEL), evidence=""), "evidence"),
                       (lambda: io.read_answer(""), "path"),
                       (lambda: io.write_answer("", "PR", 0.0), "path")):
        with pytest.raises(ValueError, match=rf"^{name} must name a file, got an empty string"):
            call()


# ---------------------------------------------------------------------- comments
COMMENTED = [
    ("a comment line first", "# written by hand\n" + MODEL),
    ("a comment after a count", MODEL.replace("2\n2 3", "2   # two variables\n2 3")),
    ("a comment glued to a token", MODEL.replace("2\n2 3", "2#two\n2 3")),
    ("comments after the scopes", MODEL.replace("1 0\n2 0 1", "1 0   # a\n2 0 1   # b")),
    ("a comment line in a table", MODEL.replace("1 2 3\n", "1 2 3\n# the second row\n")),
    ("a last comment without a line end", MODEL + "# the end"),
    ("comments with CRLF", MODEL.replace("1 0\n", "1 0 # a\r\n").replace("\n", "\r\n")),
    ("a comment of any text", MODEL.replace("1 0\n", "1 0 # caf\u00e9 5_0 0x5 nan\n")),
]


@pytest.mark.parametrize("what, text", COMMENTED, ids=[c[0] for c in COMMENTED])
def test_hash_comments_are_whitespace(tmp_path, what, text):
    """``#`` to the end of its line reads as whitespace, wherever whitespace may stand."""
    assert io.read_uai(write(tmp_path, text)) == io.read_uai(write(tmp_path, MODEL, "p.uai"))


@pytest.mark.parametrize("text, message", [
    ("# one\n# two\n" + MODEL.replace("4 5 6", "4 five 6"),
     r"factor 1's table, entry 4 \(line 13, token 'five'\)"),
    ("# one\n" + MODEL.replace("2 0 1", "2 0 2 # out of range"),
     r"line 7, token '2'.*variable 1 of factor 1's scope"),
    ("# one\nMARKOV # the type\n# two\n2\n2 3\n2\n1 0\n2 0 1\n2\n1 2\n6\n1 2 3\n4 -5 6\n",
     r"entry 4 \(line 13, token '-5'\).*declares 2 variables on line 4 and 2 factors on line 6"),
    ("# one\n" + MODEL[:-6] + "# cut short", r"end of file \(after line 11\).*declared on line 10"),
])
def test_errors_after_comments_count_their_lines(tmp_path, text, message):
    with pytest.raises(ValueError, match=message):
        io.read_uai(write(tmp_path, text))


def test_evidence_and_answer_files_take_comments_too(tmp_path):
    model = io.read_uai(write(tmp_path, MODEL))
    assert io.read_evidence(write(tmp_path, "# observed\n1 1 2 # x1 = 2\n", "e.evid"),
                            model) == {1: 2}
    answer = io.read_answer(write(tmp_path, "MPE # by hand\n2 1 0\n", "a.MPE"))
    assert answer.value.tolist() == [1, 0]


def _gum():
    try:
        return pytest.importorskip("pyagrum")
    except pytest.skip.Exception:
        return pytest.importorskip("pyAgrum")


@pytest.mark.parametrize("structure", ["a[3]->b->c;a->d[4];e", "a[3]->b->c;d[4]->c",
                                       "a[2]->d;b[3]->d[3];c[4]->d;a->c"],
                         ids=["one parent", "two parents", "three parents"])
def test_a_pyagrum_file_reads_with_pyagrums_marginals(tmp_path, structure):
    """``gum.saveBN`` writes ``# name`` after each scope, and a table of two or more
    parents with the first parent fastest after the child (against the format): read in
    that order, the file gives pyAgrum's own posteriors."""
    gum = _gum()
    gum.initRandom(1)
    bn = gum.fastBN(structure)
    gum.saveBN(bn, str(tmp_path / "bn.uai"))
    assert "#" in (tmp_path / "bn.uai").read_text()
    model = io.read_uai(tmp_path / "bn.uai")
    names = [bn.variable(i).name() for i in range(model.n)]  # the file's variables in id order
    x = all_states(model.cardinalities)
    p = np.exp(model.log_weight(x))
    assert p.sum() == pytest.approx(1.0, abs=1e-5)
    engine = gum.LazyPropagation(bn)
    engine.makeInference()
    for i, name in enumerate(names):
        mine = np.bincount(x[:, i], weights=p, minlength=model.cardinalities[i]) / p.sum()
        np.testing.assert_allclose(mine, engine.posterior(name).tolist(), atol=2e-6)


def test_only_a_file_commented_as_pyagrum_writes_is_read_in_its_order(tmp_path):
    """The same multi-parent table with a comment on some scope lines only is read in the
    format's order: the signature is a ``# name`` on every scope line of a BAYES file."""
    body = ("3\n2 2 2\n3\n1 0{c}\n1 1{c}\n3 0 1 2{c}\n2\n0.5 0.5\n2\n0.5 0.5\n8\n"
            "0.1 0.9\n0.2 0.8\n0.3 0.7\n0.4 0.6\n")
    plain = io.read_uai(write(tmp_path, "BAYES\n" + body.format(c="")))
    agrum = io.read_uai(write(tmp_path, "BAYES\n" + body.format(c=" # v"), "b.uai"))
    some = io.read_uai(write(tmp_path, "BAYES\n" + body.replace("1 0{c}", "1 0 # a")
                             .format(c=""), "c.uai"))
    np.testing.assert_array_equal(plain.log_tables[2], some.log_tables[2])
    np.testing.assert_array_equal(np.exp(agrum.log_tables[2][:, :, 1]),
                                  [[0.9, 0.7], [0.8, 0.6]])  # x0 fastest in pyAgrum's order
    np.testing.assert_array_equal(np.exp(plain.log_tables[2][:, :, 1]),
                                  [[0.9, 0.8], [0.7, 0.6]])


# ---------------------------------------------------------------------- BAYES tables
BAYES_ABC = "BAYES\n3\n2 3 2\n3\n1 0\n1 1\n3 0 1 2\n2\n0.3 0.7\n3\n0.2 0.5 0.3\n12\n"
BAD_BAYES = [
    ("a row of the last table", BAYES_ABC + "0.9 0.1\n0.8 0.2\n0.6 0.4\n0.4 0.6\n0.25 0.7\n"
     "0.1 0.9\n", r"function 2 \(scope \[0, 1, 2\]: child x2, parents x0, x1\).*given x0=1, "
     r"x1=1 sum to 0.95, not 1 \(within 2e-06; line 17, token '0.25'\)"),
    ("a root's table", BAYES_ABC.replace("0.2 0.5 0.3", "0.2 0.5 0.4") + "0.5 0.5\n" * 6,
     r"function 1 \(scope \[1\]: child x1, parents none\).*entries sum to 1.1"),
    ("a table in pgmpy's order", BAYES_ABC + "0.9 0.8 0.6 0.4 0.25 0.1\n0.1 0.2 0.4 0.6 0.75 "
     "0.9\n", r"function 2 .*given x0=0, x1=0 sum to 1.7"),
    ("probabilities to 3 digits", BAYES_ABC.replace("0.2 0.5 0.3", "0.333 0.333 0.333")
     + "0.5 0.5\n" * 6, r"function 1 .*sum to 0.999.*within 3e-06"),
    ("a function of no variable", "BAYES 1 2 2 1 0 0 2 0.5 0.5 1 2",
     r"function 1 \(scope \[\]: function of no variable\).*its one entry is 2.0, not 1"),
    ("a table of weights", "BAYES 1 2 1 1 0 2 1 3", r"function 0 .*sum to 4"),
]


@pytest.mark.parametrize("what, text, message", BAD_BAYES, ids=[b[0] for b in BAD_BAYES])
def test_bayes_tables_must_be_conditional_distributions(tmp_path, what, text, message):
    path = write(tmp_path, text, "bad bayes.uai")
    with pytest.raises(ValueError, match=message) as err:
        io.read_uai(path)
    assert str(err.value).startswith(f"{path}: "), err.value
    io.read_uai(write(tmp_path, text.replace("BAYES", "MARKOV")))  # any weights will do


def test_bayes_rows_rounded_to_six_digits_are_read(tmp_path):
    text = BAYES_ABC.replace("0.2 0.5 0.3", "0.333333 0.333333 0.333333") + "0.5 0.5\n" * 6
    model = io.read_uai(write(tmp_path, text))
    assert np.exp(model.log_tables[1]).tolist() == [0.333333] * 3


def _pgmpy_chain():
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.models import DiscreteBayesianNetwork

    net = DiscreteBayesianNetwork([("a", "c"), ("b", "c")])
    net.add_cpds(TabularCPD("a", 2, [[0.3], [0.7]]), TabularCPD("b", 3, [[0.2], [0.5], [0.3]]),
                 TabularCPD("c", 2, [[0.9, 0.8, 0.6, 0.4, 0.25, 0.1],
                                     [0.1, 0.2, 0.4, 0.6, 0.75, 0.9]],
                            evidence=["a", "b"], evidence_card=[2, 3]))
    return net


def test_a_pgmpy_bayes_file_in_its_own_order_is_refused(tmp_path):
    """pgmpy's ``UAIWriter`` lists a table child first (slowest), its scope child last:
    the child's rows do not sum to 1, and the file is refused naming the function."""
    pytest.importorskip("pgmpy")
    from pgmpy.readwrite import UAIWriter

    UAIWriter(_pgmpy_chain()).write(str(tmp_path / "net.uai"))
    with pytest.raises(ValueError, match=r"net.uai: function 2 \(scope \[2, 0, 1\]: child x1, "
                                         r"parents x2, x0\).*given x2=0, x0=0 sum to 1.7"):
        io.read_uai(tmp_path / "net.uai")


def test_pgmpy_files_whose_tables_are_right_read_with_pgmpys_marginals(tmp_path):
    """A pgmpy BAYES file whose tables do not depend on the order (roots, a symmetric
    binary conditional) and a pgmpy MARKOV file: marginals as pgmpy's exact query."""
    pytest.importorskip("pgmpy")
    from pgmpy.factors.discrete import DiscreteFactor, TabularCPD
    from pgmpy.inference import VariableElimination
    from pgmpy.models import DiscreteBayesianNetwork, DiscreteMarkovNetwork
    from pgmpy.readwrite import UAIWriter

    bayes = DiscreteBayesianNetwork([("a", "b")])
    bayes.add_node("r")
    bayes.add_cpds(TabularCPD("a", 2, [[0.3], [0.7]]),
                   TabularCPD("b", 2, [[0.9, 0.1], [0.1, 0.9]], evidence=["a"],
                              evidence_card=[2]),
                   TabularCPD("r", 3, [[0.2], [0.5], [0.3]]))
    markov = DiscreteMarkovNetwork([("a", "b"), ("b", "c")])
    rng = np.random.default_rng(8)
    markov.add_factors(DiscreteFactor(["a", "b"], [2, 3], rng.random(6) + 0.1),
                       DiscreteFactor(["b", "c"], [3, 2], rng.random(6) + 0.1))
    for net in (bayes, markov):
        UAIWriter(net).write(str(tmp_path / "net.uai"))
        model = io.read_uai(tmp_path / "net.uai")
        # pgmpy numbers the variables by (cardinality as text, name)
        card = {v: net.get_cardinality(v) for v in net.nodes()}
        names = sorted(card, key=lambda v: (str(card[v]), v))
        x = all_states(model.cardinalities)
        p = np.exp(model.log_weight(x))
        engine = VariableElimination(net)
        for i, name in enumerate(names):
            want = engine.query([name], show_progress=False).values
            want = want / want.sum()  # a Markov network's query is not normalised
            mine = np.bincount(x[:, i], weights=p, minlength=model.cardinalities[i]) / p.sum()
            np.testing.assert_allclose(mine, want, rtol=1e-12)


# ---------------------------------------------------------------------- Boltzmann machines
def test_a_boltzmann_machine_is_written_as_its_factor_graph(tmp_path):
    from mrflib import BoltzmannMachine, exact

    bm = BoltzmannMachine([0.3, -0.2, 0.1, 0.0], [(0, 1), (0, 3), (1, 2), (2, 3)],
                          [0.5, -0.4, 0.8, 0.2])
    io.write_uai(bm, tmp_path / "bm.uai.gz")
    back = io.read_uai(tmp_path / "bm.uai.gz")
    want = FactorGraph.from_boltzmann(bm)
    assert back.scopes == want.scopes and back.cardinalities.tolist() == [2] * 4
    for got, table in zip(back.log_tables, want.log_tables):  # exp, then log: within ulps
        np.testing.assert_allclose(got, table, rtol=0, atol=1e-15)
    assert exact.log_partition(back) == pytest.approx(exact.log_partition(bm), rel=1e-12)
    spins = np.array([[-1, 1, 1, -1]], dtype=np.int8)  # spin -1 is state 0
    assert back.log_weight(spins.clip(0)) == pytest.approx(bm.log_weight(spins), rel=1e-12)
