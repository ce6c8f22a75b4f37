"""pgmpy's models and its BIF/XMLBIF files, with their variable and state names, and evidence
given by name to the inference fronts."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pgmpy")

from mrflib.inference import approx, exact  # noqa: E402
from mrflib.io import datasets  # noqa: E402
from mrflib.io import pgmpy_models as pm  # noqa: E402
from mrflib.models.boltzmann import BoltzmannMachine  # noqa: E402
from mrflib.models.factor_graph import FactorGraph  # noqa: E402


@pytest.fixture(scope="module")
def asia():
    """pgmpy's asia network, read offline from the copy bundled in its wheel."""
    return datasets.pgmpy_model("asia")


@pytest.fixture(scope="module")
def model(asia):
    return pm.from_pgmpy(asia)


def _ve_marginals(net, names, evidence=None):
    """pgmpy's VariableElimination marginal of every variable of ``names`` (one query each)."""
    from pgmpy.inference import VariableElimination

    ve = VariableElimination(net)
    out = []
    for v in names:
        if evidence and v in evidence:  # pgmpy refuses to query an observed variable
            out.append(None)
            continue
        q = ve.query([v], evidence=evidence, show_progress=False)
        out.append((np.asarray(q.values), tuple(str(s) for s in q.state_names[v])))
    return out


def _write(net, path, kind):
    from pgmpy.readwrite import BIFWriter, XMLBIFWriter

    writer = BIFWriter(net) if kind == "bif" else XMLBIFWriter(net)
    write = getattr(writer, "write", None) or getattr(writer, f"write_{kind}")
    write(str(path))


# ------------------------------------------------------------------------- round trips
def test_from_pgmpy_keeps_names_states_and_tables(asia, model):
    assert model.names == tuple(asia.nodes())
    for i, v in enumerate(model.names):
        cpd = asia.get_cpds(v)
        assert model.state_names[i] == tuple(cpd.state_names[v])
        k = next(k for k, s in enumerate(model.scopes) if s[0] == i)  # (child, *evidence)
        assert model.scopes[k] == tuple(model.index(u) for u in cpd.variables)
        with np.errstate(divide="ignore"):  # a zero probability is a log-weight of -inf
            np.testing.assert_array_equal(model.log_tables[k], np.log(cpd.values))


def test_names_survive_a_pgmpy_round_trip(model):
    net = pm.to_pgmpy(model)
    assert list(net.nodes()) == list(model.names)
    back = pm.from_pgmpy(net)
    assert back.names == model.names and back.state_names == model.state_names
    assert back.scopes == model.scopes
    for a, b in zip(back.log_tables, model.log_tables):
        np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-14)


def test_a_named_factor_graph_goes_to_pgmpy_with_its_names():
    fg = FactorGraph([2, 3], [(0, 1), ()], [np.log([[1.0, 2, 3], [4, 5, 6]]), np.array(0.5)],
                     names=["rain", "sky"], state_names=[["no", "yes"], ["sun", "fog", "dark"]])
    net = pm.to_pgmpy(fg)
    (f,) = net.get_factors()
    assert f.state_names == {"rain": ["no", "yes"], "sky": ["sun", "fog", "dark"]}
    back = pm.from_pgmpy(net)
    assert back.names == fg.names and back.state_names == fg.state_names
    np.testing.assert_allclose(exact.log_partition(back), exact.log_partition(fg), rtol=1e-14)


# ------------------------------------------------------------------------- files
@pytest.mark.parametrize("kind", ["bif", "xmlbif"])
def test_a_file_written_by_pgmpy_reads_back_with_pgmpys_marginals(asia, kind, tmp_path):
    path = tmp_path / f"asia.{kind}"
    _write(asia, path, kind)
    fg = pm.read_bif(path) if kind == "bif" else pm.read_xmlbif(path)
    assert sorted(fg.names) == sorted(asia.nodes())
    ours = exact.marginals(fg)
    for v, (ref, states) in zip(fg.names, _ve_marginals(asia, fg.names)):
        i = fg.index(v)
        assert fg.state_names[i] == states
        np.testing.assert_allclose(ours[i], ref, rtol=0, atol=1e-10)


def test_a_gzipped_bif_file_reads_as_the_plain_one(asia, tmp_path):
    import gzip

    path = tmp_path / "asia.bif"
    _write(asia, path, "bif")
    (tmp_path / "asia.bif.gz").write_bytes(gzip.compress(path.read_bytes()))
    assert pm.read_bif(tmp_path / "asia.bif.gz") == pm.read_bif(path)


@pytest.mark.parametrize("reader", [pm.read_bif, pm.read_xmlbif])
@pytest.mark.parametrize("content", [None, b"network {", b"\xff\xfe garbage", b""])
def test_a_bad_file_is_a_value_error_naming_it(reader, content, tmp_path):
    path = tmp_path / "bad.net"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ValueError, match="bad.net"):
        reader(path)


def test_a_path_of_another_type_is_a_type_error():
    with pytest.raises(TypeError, match="path"):
        pm.read_bif(3)


# ------------------------------------------------------------------------- evidence by name
def test_evidence_by_name_gives_pgmpys_conditional_marginals(asia, model):
    ours = exact.marginals(model, evidence={"smoke": "yes"})
    smoke = model.index("smoke")
    np.testing.assert_allclose(ours[smoke], np.eye(2)[model.state_index("smoke", "yes")],
                               rtol=0, atol=1e-15)
    for i, got in enumerate(_ve_marginals(asia, model.names, {"smoke": "yes"})):
        if got is not None:
            ref, states = got
            assert states == model.state_names[i]
            np.testing.assert_allclose(ours[i], ref, rtol=0, atol=1e-10)


def _fronts(model, evidence):
    """Every front's answer with ``evidence``, as numbers to compare."""
    x, logw = exact.map_assignment(model, evidence=evidence)
    return [*exact.marginals(model, evidence=evidence),
            exact.log_partition(model, evidence=evidence), x, logw,
            *approx.marginals(model, "lbp", evidence=evidence).marginals,
            approx.log_partition(model, "mean-field", evidence=evidence),
            *approx.log_partition_bounds(model, evidence=evidence)]


def test_evidence_by_index_equals_evidence_by_name_and_condition(model):
    by_name = {"smoke": "yes", "xray": "no"}
    by_index = {model.index("smoke"): 0, model.index("xray"): 1}
    mixed = {"smoke": 0, model.index("xray"): "no"}
    want = _fronts(model.condition(by_index), None)
    for evidence in (by_name, by_index, mixed):
        for a, b in zip(_fronts(model, evidence), want, strict=True):
            np.testing.assert_array_equal(a, b)


def test_evidence_on_a_boltzmann_machine_is_in_spins():
    bm = BoltzmannMachine(np.array([0.3, -0.2, 0.1]), np.array([[0, 1], [1, 2]]),
                          np.array([0.5, -0.7]))
    fg = FactorGraph.from_boltzmann(bm).condition({1: 0})  # state 0 is spin -1
    np.testing.assert_array_equal(exact.log_partition(bm, evidence={1: -1}),
                                  exact.log_partition(fg))
    for a, b in zip(exact.marginals(bm, evidence={1: -1}), exact.marginals(fg)):
        np.testing.assert_array_equal(a, b)
    x, _ = exact.map_assignment(bm, evidence={1: -1})
    assert x.dtype == np.int8 and x[1] == -1
    lo, hi = approx.log_partition_bounds(bm, evidence={1: 1})
    assert lo <= exact.log_partition(bm, evidence={1: 1}) + 1e-12 and lo <= hi
    for bad in (0, 2, "yes", True):
        with pytest.raises(ValueError, match="evidence"):
            exact.marginals(bm, evidence={1: bad})


BAD_EVIDENCE = [
    ({"smok": "yes"}, "'smok'"),       # an unknown variable: close names are listed
    ({"smoke": "maybe"}, "'maybe'"),   # an unknown state
    ({"smoke": 2}, "outside 0..1"),
    ({8: 0}, "8"),
    ({"smoke": "yes", 5: 1}, "twice"),  # smoke is variable 5 of the file's order
    ({"smoke": 1.0}, "1.0"),
    ({"smoke": None}, "None"),
]


@pytest.mark.parametrize("front", [
    exact.marginals, exact.log_partition, exact.map_assignment, approx.marginals,
    approx.log_partition, approx.log_partition_bounds])
@pytest.mark.parametrize("evidence, says", BAD_EVIDENCE)
def test_bad_evidence_is_a_value_error_naming_evidence_and_the_name(model, front, evidence,
                                                                     says):
    if "twice" in says and model.index("smoke") != 5:
        evidence = {"smoke": "yes", model.index("smoke"): 1}
    with pytest.raises(ValueError, match="evidence") as err:
        front(model, evidence=evidence)
    assert says in str(err.value)


def test_an_unknown_name_lists_close_names(model):
    with pytest.raises(ValueError, match=r"variable: unknown variable 'smok'.*'smoke'"):
        model.index("smok")
    with pytest.raises(ValueError, match=r"state: unknown state 'yess' .*'yes'"):
        model.state_index("smoke", "yess")
    with pytest.raises(ValueError, match=r"evidence: unknown variable 'lungg'.*'lung'"):
        exact.marginals(model, evidence={"lungg": "yes"})


def test_names_on_a_model_without_names_are_refused():
    fg = FactorGraph([2, 2], [(0, 1)], [np.zeros((2, 2))])
    with pytest.raises(ValueError, match="evidence: variable 'a' is a name, but the model has "
                                         "no variable names"):
        exact.marginals(fg, evidence={"a": 0})
    with pytest.raises(ValueError, match="evidence: state 'on' .* no state names"):
        exact.marginals(fg, evidence={0: "on"})


# ------------------------------------------------------------------------- bad models
def test_from_pgmpy_refuses_other_objects_naming_model():
    for junk in (None, 3, FactorGraph([2], [(0,)], [np.zeros(2)])):
        with pytest.raises(TypeError, match="model must be a pgmpy"):
            pm.from_pgmpy(junk)


def test_to_pgmpy_refuses_bad_names():
    fg = FactorGraph([2, 2], [(0, 1)], [np.zeros((2, 2))], names=["a", "b"])
    with pytest.raises(ValueError, match="names"):
        pm.to_pgmpy(fg, names=["a", "a"])
    with pytest.raises(ValueError, match="names"):
        pm.to_pgmpy(fg, names=["a"])
