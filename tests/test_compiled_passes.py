"""The compiled passes of small junction trees: the same ``log Z`` and marginals as the
Python passes to the last bit, equal to enumeration, and the Python passes where a clique
leaves linear space."""

import ast
import importlib
import inspect
import math
from pathlib import Path

import numpy as np
import pytest

from mrflib import FactorGraph
from mrflib.inference import _factor_ops
from mrflib.inference.exact import _compiled_passes as cp
from mrflib.inference.exact import elimination
from mrflib.inference.exact import enumeration as fe
from mrflib.inference.exact._compiled_passes_kernels import fsum
from mrflib.io.uai import read_uai

TOL = 1e-9
SHIPPED = Path(__file__).resolve().parents[1] / "mrflib" / "data" / "uai"


def random_model(seed, n=9, n_factors=12, zeros=0.2, scale=1.0):
    """Factors of 1-3 variables with 2-4 states, some zeros; evidence on odd seeds; a
    variable in no factor and two components on seeds divisible by 3."""
    rng = np.random.default_rng(seed)
    card = rng.integers(2, 5, n)
    scopes, tables = [], []
    low = 3 if seed % 3 == 0 else 0  # variables 0-2 apart from the rest (then 2 is free)
    for _ in range(n_factors):
        pool = [0, 1] if low and rng.random() < 0.3 else list(range(low, n))
        k = int(rng.integers(1, min(3, len(pool)) + 1))
        s = tuple(rng.choice(pool, size=k, replace=False).tolist())
        t = scale * rng.normal(size=tuple(card[v] for v in s))
        t[rng.random(t.shape) < zeros] = -np.inf
        t.flat[0] = 0.0  # never all zero
        scopes.append(s)
        tables.append(t)
    model = FactorGraph(card, scopes, tables)
    return model.condition({n - 1: 0}) if seed % 2 else model


def python_passes(model, monkeypatch):
    """``(marginals, log Z, log Z by the upward pass alone)`` by the Python passes."""
    with monkeypatch.context() as m:
        m.setattr(cp, "MAX_ENTRIES", 0)
        out, logz = elimination.marginals_and_log_partition(model, zero_ok=True)
        return out, logz, elimination.log_partition(model)


def assert_same_bits(model, monkeypatch):
    ref, ref_logz, ref_pr = python_passes(model, monkeypatch)
    jt = elimination.plan(model)
    assert cp.marginals(jt) is not None  # the compiled passes ran
    out, logz = elimination.marginals_and_log_partition(model, jt)
    assert logz == ref_logz
    assert elimination.log_partition(model) == ref_pr
    for a, b in zip(out, ref):
        assert np.array_equal(a, b)
    return out, logz


@pytest.mark.parametrize("xs", [[1.0], [1e16, 1.0, -1e16], [0.1] * 10, [1e308, -1e308, 3.5],
                                [2.0**-1074, 1.0, -1.0], [0.0, -0.0], []])
def test_fsum_is_math_fsum(xs):
    a = np.asarray(xs, dtype=np.float64)
    assert fsum(a, len(a)) == math.fsum(xs)


@pytest.mark.parametrize("seed", range(20))
def test_fsum_is_math_fsum_bit_for_bit_on_random_sums(seed):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=int(rng.integers(1, 12))) * 10.0 ** rng.integers(-20, 20, 1)
    a = np.concatenate([a, -a[: len(a) // 2] * (1 + 1e-15)])
    assert fsum(a, len(a)).hex() == math.fsum(a.tolist()).hex()


@pytest.mark.parametrize("seed", range(16))
def test_compiled_passes_give_the_python_passes_bits_and_enumeration(seed, monkeypatch):
    model = random_model(seed)
    out, logz = assert_same_bits(model, monkeypatch)
    assert logz == pytest.approx(fe.log_partition(model), abs=TOL)
    for a, b in zip(out, fe.marginals(model)):
        np.testing.assert_allclose(a, b, atol=TOL)


@pytest.mark.parametrize("name", ["Grids_12", "Promedus_24"])
def test_compiled_passes_give_the_python_passes_bits_on_shipped_problems(name, monkeypatch):
    model = read_uai(SHIPPED / f"{name}.uai", SHIPPED / f"{name}.uai.evid")
    assert_same_bits(model, monkeypatch)


def test_a_wide_span_is_left_to_the_python_passes():
    # log-weights of +-300 on 3 inputs of a clique: the spans add up past 700
    model = random_model(4, scale=300.0)
    jt = elimination.plan(model)
    assert cp.marginals(jt) is None and cp.log_partition(jt) is None
    out, logz = elimination.marginals_and_log_partition(model)
    assert logz == pytest.approx(fe.log_partition(model), rel=1e-12)
    for a, b in zip(out, fe.marginals(model)):
        np.testing.assert_allclose(a, b, atol=TOL)


def test_zero_partition_function_is_left_to_the_python_passes():
    same = np.array([[0.0, -np.inf], [-np.inf, 0.0]])
    # x0 = x1 = x2 and x0 != x2: no state has weight
    model = FactorGraph([2, 2, 2], [(0, 1), (1, 2), (0, 2)], [same, same, same[::-1]])
    # evidence where a factor is zero: Z = 0 with the other variables' passes well defined
    observed = FactorGraph([2, 2, 2], [(0, 1), (1, 2)], [same, np.zeros((2, 2))])
    for m in (model, observed.condition({0: 0, 1: 1})):
        assert cp.marginals(elimination.plan(m)) is None
        assert elimination.marginals_and_log_partition(m, zero_ok=True) == (None, -np.inf)
        with pytest.raises(ValueError, match="Z = 0"):
            elimination.marginals(m)


def test_large_plans_are_not_compiled(monkeypatch):
    model = random_model(2)
    monkeypatch.setattr(cp, "MAX_ENTRIES", 10)
    assert cp.marginals(elimination.plan(model)) is None


@pytest.mark.parametrize("seed", range(6))
def test_plans_with_few_contracted_cliques_are_compiled(seed, monkeypatch):
    """Cliques the Python passes contract with ``opt_einsum`` (made small here) keep a plan
    from the compiled passes only beyond ``CONTRACTED_PER_STEP`` entries per step; below,
    the kernel sums them and the answers are the Python passes' up to rounding."""
    model = random_model(seed)
    for module in (cp, _factor_ops):
        monkeypatch.setattr(module, "EINSUM_MIN_SIZE", 8)
    monkeypatch.setattr(_factor_ops, "EINSUM_MIN_WIDTH", 2)
    jt = elimination.plan(model)
    sizes = [math.prod(s) for s in jt.shapes]
    contracted = sum(z for t, z in enumerate(sizes) if cp._contracted(jt, t, sizes))
    if not contracted:
        pytest.skip("no clique of this model would be contracted")
    monkeypatch.setattr(cp, "CONTRACTED_PER_STEP", contracted / len(sizes) * 0.99)
    assert cp.marginals(elimination.plan(model)) is None
    ref, ref_logz, _ = python_passes(model, monkeypatch)
    monkeypatch.setattr(cp, "CONTRACTED_PER_STEP", contracted / len(sizes))
    assert cp.marginals(elimination.plan(model)) is not None
    out, logz = elimination.marginals_and_log_partition(model)
    assert logz == pytest.approx(ref_logz, rel=1e-14, abs=1e-14)
    assert logz == pytest.approx(fe.log_partition(model), abs=TOL)
    for a, b, c in zip(out, ref, fe.marginals(model)):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(a, c, atol=TOL)


def test_compiled_passes_report_their_start_to_a_progress_reporter():
    """One compiled call per pass: a reporter hears each pass start, as it hears the
    first step of a Python pass."""
    from mrflib._support import progress

    model = random_model(4)
    jt = elimination.EliminationPlan(model)
    lines: list[str] = []
    with progress.reporting(lines.append, every=0.0):
        assert cp.marginals(jt) is not None
    assert lines == ["upward pass: 0% done", "downward pass: 0% done"]


@pytest.mark.parametrize("module", ["mrflib.inference.exact._compiled_passes_kernels",
                                    "mrflib.inference._elimination_kernels"])
def test_kernels_assign_no_array_slices(module):
    """numba checks the shapes of an assignment to a slice with a formatted exception, a
    dozen string kernels that a cold cache compiles in seconds: the passes' kernels copy
    by loops."""
    def sliced(node):
        parts = node.elts if isinstance(node, ast.Tuple) else [node]
        return any(isinstance(p, ast.Slice) for p in parts)

    tree = ast.parse(inspect.getsource(importlib.import_module(module)))
    found = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Assign)
             for t in node.targets if isinstance(t, ast.Subscript) and sliced(t.slice)]
    assert found == []
