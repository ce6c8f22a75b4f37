"""The learners' parameter layout built by groups of terms against the term-by-term
definition: the same terms, owners, offsets, sparse map and models."""

import math

import numpy as np
import pytest
import scipy.sparse as sp

from mrflib import FactorGraph
from mrflib.learning import _layout
from mrflib.learning._layout import Layout, _term_entries, model_of
from mrflib.learning._layout_groups import layout_size
from mrflib.learning.potentials import clique_owners
from mrflib.learning.tying import Tie
from mrflib.models.lattices import potts_lattice, triangle_lattice


def _reference_terms(lay):
    """Terms ordered by owner, size and variables; owners, offsets and ``A`` term by term."""
    owners = clique_owners(lay.scopes)
    terms = sorted(owners, key=lambda B: (owners[B], len(B), B))
    owner = [owners[B] for B in terms]
    free = [math.prod(int(lay.card[v]) - 1 for v in B) for B in terms]
    term_offsets = np.concatenate([[0], np.cumsum(free)]).astype(np.int64)
    rows, cols = [], []
    for t, (B, k) in enumerate(zip(terms, owner)):
        r, c = _term_entries(lay.shapes[k], tuple(lay.scopes[k].index(v) for v in B))
        rows.append(lay.offsets[k] + r)
        cols.append(term_offsets[t] + c)
    r = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    c = np.concatenate(cols) if cols else np.zeros(0, np.int64)
    A = sp.csr_matrix((np.ones(len(r)), (r, c)), shape=(int(lay.offsets[-1]),
                                                         int(term_offsets[-1])))
    return terms, owner, term_offsets, A


def _reference_model(lay, flat):
    tables = []
    for k, shape in enumerate(lay.shapes):
        t = flat[lay.offsets[k]:lay.offsets[k + 1]].reshape(shape).copy()
        t.flags.writeable = False
        tables.append(t)
    return tables


def _reference_size(model):
    need, nnz = 0, 0
    for s, t in zip(model.scopes, model.log_tables):
        cards = [int(model.cardinalities[v]) for v in s]
        nnz += math.prod(2 * c - 1 for c in cards) - t.size
        need = max(need, 8 * len(s) * t.size)
    return need, nnz


def _random_model(seed, n=7, F=30, top=4, unary=True):
    rng = np.random.default_rng(seed)
    card = rng.integers(1, top, n)
    sizes = [0, 1, 1, 2, 2, 2, 3] if unary else [2, 2, 3]
    scopes = [tuple(int(v) for v in rng.choice(n, int(rng.choice(sizes)), replace=False))
              for _ in range(F)]
    scopes += scopes[::5]  # repeated scopes, unsorted ones drawn above
    tables = [rng.normal(size=tuple(card[list(s)])) for s in scopes]
    return FactorGraph(card, scopes, tables)


def _models():
    for seed in range(8):
        yield _random_model(seed, unary=seed % 2 == 0)
    yield _random_model(20, n=5, F=12, top=2)
    yield potts_lattice(4, 5, 3, rng=1)
    yield triangle_lattice(3, 4, 2, rng=2)
    yield FactorGraph([2, 3], [], [])
    yield FactorGraph([3, 1, 2], [(2, 0), (1,), (0, 1, 2), ()], [np.zeros((2, 3)), np.ones(1),
                                                                np.ones((3, 1, 2)), 0.5])


@pytest.mark.parametrize("model", list(_models()), ids=repr)
def test_layout_is_the_term_by_term_layout(model):
    lay = Layout(model)
    terms, owner, term_offsets, A = _reference_terms(lay)
    assert type(lay.terms) is list and lay.terms == terms
    assert all(type(B) is tuple and all(type(v) is int for v in B) for B in lay.terms)
    assert type(lay.owner) is list and lay.owner == owner
    assert all(type(k) is int for k in lay.owner)
    assert lay.term_offsets.dtype == np.int64 and np.array_equal(lay.term_offsets, term_offsets)
    assert lay.A.shape == A.shape and lay.A.format == "csr"
    for name in ("indptr", "indices", "data"):
        a, b = getattr(lay.A, name), getattr(A, name)
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert lay.one_term_per_entry == bool(np.all(np.diff(A.indptr) <= 1))
    assert layout_size(model.scopes, model.cardinalities) == _reference_size(model)


@pytest.mark.parametrize("model", list(_models())[::3], ids=repr)
def test_models_of_flat_tables_are_the_term_by_term_ones(model):
    lay = Layout(model)
    flat = np.random.default_rng(0).normal(size=int(lay.offsets[-1]))
    built = model_of(lay, flat)
    assert built.scopes == model.scopes and len(built.log_tables) == model.n_factors
    for a, b in zip(built.log_tables, _reference_model(lay, flat)):
        assert a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()
        assert not a.flags.writeable and type(a) is np.ndarray
    groups = [str(t.shape) for t in model.log_tables]
    tie = Tie(model, groups)
    phi = np.linspace(-1, 1, tie.n_params)
    for a, b in zip(tie.model(phi).log_tables, _reference_model(tie, tie.tables(phi))):
        assert a.shape == b.shape and a.tobytes() == b.tobytes()


def test_a_scope_of_more_than_24_variables_is_refused_as_before():
    model = FactorGraph(np.ones(26, dtype=np.int64), [(0,), tuple(range(1, 26))],
                        [np.zeros(1), np.zeros((1,) * 25)])
    with pytest.raises(ValueError, match=r"scopes\[1\] must hold at most 24"):
        clique_owners(model.scopes)
    with pytest.raises(ValueError, match=r"scopes\[1\] must hold at most 24"):
        Layout(model)


def test_memory_bound_counts_as_before_beyond_int64():
    model = FactorGraph([2**20] * 3, [(0,), (1,)], [np.zeros(2**20), np.zeros(2**20)])
    assert layout_size(model.scopes, model.cardinalities) == _reference_size(model)
    big = FactorGraph.__new__(FactorGraph)  # a structure only its sizes are read from
    card = np.full(4, 2**12, dtype=np.int64)
    fake = [np.broadcast_to(np.zeros(()), (2**12,) * 4)]
    big._set(card, ((0, 1, 2, 3),), tuple(fake))
    assert layout_size(big.scopes, big.cardinalities) is None
    assert _layout._layout_size_exact(big) == _reference_size(big)
    with pytest.raises(ValueError, match="would need"):
        Layout(big)


def _reference_groups(labels):
    out = {}
    for k, label in enumerate(labels):
        if label is None or isinstance(label, float) and np.isnan(label):
            raise ValueError(f"groups[{k}] must be a label (an int or a string), got {label!r}")
        try:
            out.setdefault(label, []).append(k)
        except TypeError:
            raise ValueError(f"groups[{k}] must be hashable, got {type(label).__name__}"
                             ) from None
    return out


@pytest.mark.parametrize("labels", [
    ["a", "b", "a", 1, 1.0, True, (1, 2), np.int64(1), "b", 0, False],
    list(np.array([3, 1, 3, 2, 1])),
    ["x"] * 7,
])
def test_tie_groups_are_those_of_the_label_by_label_loop(labels):
    from mrflib.learning.tying import _groups
    got, ref = _groups(labels, len(labels)), _reference_groups(labels)
    assert got == ref and list(got) == list(ref)
    assert [type(k) for k in got] == [type(k) for k in ref]
    assert all(type(i) is int for ks in got.values() for i in ks)


@pytest.mark.parametrize("labels", [["a", None, "b"], ["a", float("nan")],
                                    ["a", np.float64("nan"), None], ["a", ["b"], None],
                                    [None, ["b"]]])
def test_bad_tie_labels_are_named_as_by_the_loop(labels):
    from mrflib.learning.tying import _groups
    with pytest.raises(ValueError) as ref:
        _reference_groups(labels)
    with pytest.raises(ValueError) as got:
        _groups(labels, len(labels))
    assert str(got.value) == str(ref.value)
