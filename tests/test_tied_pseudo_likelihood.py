"""Pseudo-likelihood with tied parameters: the contexts of tied variables pooled by class.

The pooled objective and its gradient in ``φ`` are checked against the contexts counted
variable by variable (``pool=False``) on lattices with boundaries, free-form ties,
factors of three variables and mixed cardinalities; the tied MPLE against the same fit
unpooled and against scipy minimizing the brute-force pseudo-likelihood; the class
finding against its definition; untied contexts and ties that tie no two variables
against the unpooled arrays, bit for bit.
"""

import numpy as np
import pytest
from scipy import optimize

from mrflib import FactorGraph, exact, learning
from mrflib._support.validation import memory_requests
from mrflib.learning import _contexts, table_learners
from mrflib.learning._layout import Layout
from mrflib.learning.tying import Tie
from mrflib.models import image_noise, lattices


def _potts_tie(rows, cols, q, form="potts", seed=0):
    """A rows x cols Potts lattice (unary field, then the edges) with one field table
    and one coupling table per edge direction, of ``form``."""
    rng = np.random.default_rng(seed)
    model = image_noise.potts_grid(rows, cols, q, 0.5, field=rng.normal(0, 0.3, q))
    groups = ["field" if len(s) == 1 else ("h" if s[1] == s[0] + 1 else "v")
              for s in model.scopes]
    return model, Tie(model, groups, form={"h": form, "v": form})


def _mixed_ring():
    """A ring of 8 variables of cardinalities 2, 3, 2, 3, ..., pair tables tied by
    orientation (2x3 and 3x2), unary tables tied by cardinality, one factor of three
    variables and a variable of no factor at all (tied with nothing)."""
    card = [2, 3] * 4 + [4]
    scopes = [(i, (i + 1) % 8) for i in range(8)] + [(i,) for i in range(8)] + [(0, 2, 4)]
    rng = np.random.default_rng(1)
    model = FactorGraph(card, scopes, [rng.normal(0, 0.4, [card[v] for v in s])
                                       for s in scopes])
    groups = [f"pair{card[s[0]]}" for s in scopes[:8]] + [f"unary{card[s[0]]}"
                                                          for s in scopes[8:16]] + ["t"]
    return model, Tie(model, groups)


def _triangles():
    """A triangle lattice whose triangle factors share one free table."""
    model = lattices.triangle_lattice(3, 4, 2, scale=0.5, rng=2)
    return model, Tie(model, ["t" if len(s) == 3 else len(s) for s in model.scopes])


MODELS = {
    "potts 3x3": lambda: _potts_tie(3, 3, 3),
    "potts 4x5": lambda: _potts_tie(4, 5, 3),
    "free 4x5": lambda: _potts_tie(4, 5, 3, form="free"),
    "symmetric 4x5": lambda: _potts_tie(4, 5, 2, form="symmetric"),
    "mixed ring": _mixed_ring,
    "triangles": _triangles,
}


def _objectives(tie, x, phi):
    """(value, gradient in φ) of the unpooled and the pooled contexts."""
    plain = _contexts.Contexts(tie, x, pool=False)
    pooled = _contexts.Contexts(tie, x)
    assert pooled.rows is not None
    va, ga = plain(tie.A @ phi)
    B = tie.A[pooled.rows]
    vb, gb = pooled(B @ phi)
    assert len(pooled.wptr) <= len(plain.wptr)
    return (va, tie.A.T @ ga), (vb, B.T @ gb)


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("rows", [1, 7, 400])
def test_pooled_objective_and_gradient_equal_the_unpooled(name, rows):
    model, tie = MODELS[name]()
    rng = np.random.default_rng(rows)
    x = rng.integers(0, model.cardinalities, (rows, model.n))
    for _ in range(3):
        phi = rng.normal(0, 1.0, tie.n_params)
        (va, ga), (vb, gb) = _objectives(tie, x, phi)
        assert vb == pytest.approx(va, rel=1e-10)
        np.testing.assert_allclose(gb, ga, rtol=1e-10, atol=1e-12 * np.max(np.abs(ga)))


def test_pooled_objective_is_the_numpy_pseudo_likelihood():
    model, tie = _potts_tie(4, 5, 3)
    x = exact.sample(model, 50, rng=3)
    phi = np.random.default_rng(4).normal(0, 1.0, tie.n_params)
    pooled = _contexts.Contexts(tie, x)
    value, _ = pooled(tie.A[pooled.rows] @ phi, False)
    assert value == pytest.approx(
        table_learners._pseudo_log_likelihood_numpy(tie.model(phi), x), rel=1e-12)


def test_a_lattice_has_four_classes_of_tied_variables():
    """Corners, top and bottom edges, left and right edges, interior: each variable's
    factors are matched whichever end of a symmetric coupling it is."""
    _, tie = _potts_tie(3, 3, 3)
    classes = _contexts._tied_classes(tie)
    assert [c[0].tolist() for c in classes] == [[0, 2, 6, 8], [1, 7], [3, 5], [4]]
    _, tie = _potts_tie(20, 30, 4)
    sizes = sorted(len(c[0]) for c in _contexts._tied_classes(tie))
    assert sizes == [4, 2 * 18, 2 * 28, 18 * 28]
    # free (asymmetric) couplings: a corner's left and right neighbours differ
    _, tie = _potts_tie(3, 3, 3, form="free")
    assert _contexts._tied_classes(tie) is None


def test_members_of_a_class_have_the_same_conditional():
    """The definition, checked directly: for every class, the conditional of each member
    at a given state of its canonical blanket equals the representative's."""
    for name, make in MODELS.items():
        model, tie = make()
        phi = np.random.default_rng(0).normal(0, 1, tie.n_params)
        fitted = tie.model(phi)
        for members, blankets, _ in _contexts._tied_classes(tie):
            rng = np.random.default_rng(len(members))
            x = rng.integers(0, model.cardinalities, (5, model.n))
            ref = None
            for i, bl in zip(members, blankets):
                y = np.repeat(x, model.cardinalities[i], axis=0)
                y[:, bl] = x[:, blankets[0]].repeat(model.cardinalities[i], axis=0)
                y[:, i] = np.tile(np.arange(model.cardinalities[i]), len(x))
                lw = fitted.log_weight(y).reshape(len(x), -1)
                cond = lw - lw.max(axis=1, keepdims=True)
                cond -= np.log(np.exp(cond).sum(axis=1, keepdims=True))
                if ref is None:
                    ref = cond
                np.testing.assert_allclose(cond, ref, atol=1e-12, err_msg=name)


def test_untied_contexts_and_a_tie_of_single_variables_are_unpooled_bit_for_bit():
    model, _ = _potts_tie(4, 5, 3)
    x = exact.sample(model, 60, rng=5)
    single = Tie(model, None)
    assert _contexts._tied_classes(single) is None
    reference = _contexts.Contexts(single, x, pool=False)
    for ctx in (_contexts.Contexts(single, x), _contexts.Contexts(Layout(model), x)):
        assert ctx.rows is None
        for name in ("w", "wptr", "fptr", "base", "stride"):
            np.testing.assert_array_equal(getattr(ctx, name), getattr(reference, name))


@pytest.mark.parametrize("name", ["potts 4x5", "free 4x5", "mixed ring", "triangles"])
def test_tied_mple_equals_the_unpooled_fit(name, monkeypatch):
    model, tie = MODELS[name]()
    x = exact.sample(model, 300, rng=6)
    pooled = learning.fit(x, model, "mple", tie=tie, l2=1e-3)
    monkeypatch.setattr(_contexts, "_tied_classes", lambda lay: None)
    plain = learning.fit(x, model, "mple", tie=tie, l2=1e-3)
    assert pooled.converged and plain.converged
    np.testing.assert_allclose(pooled.params[-1], plain.params[-1], atol=1e-6)
    for a, b in zip(pooled.model.log_tables, plain.model.log_tables):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_tied_mple_is_the_brute_force_pseudo_likelihood_optimum():
    model, tie = _potts_tie(3, 4, 3, seed=2)
    x = exact.sample(model, 400, rng=7)
    fit = learning.fit(x, model, "mple", tie=tie)
    assert fit.converged

    def negpl(phi):
        return -table_learners._pseudo_log_likelihood_numpy(tie.model(phi), x)

    best = optimize.minimize(negpl, np.zeros(tie.n_params), method="BFGS",
                             options={"gtol": 1e-9})
    np.testing.assert_allclose(fit.params[-1], best.x, atol=1e-4)
    assert negpl(fit.params[-1]) <= best.fun + 1e-10


def test_patterns_counted_in_chunks_and_by_rows_give_the_same_contexts(monkeypatch):
    """Members counted a few at a time (the partial counts merged), and hubs whose 63
    binary neighbours do not fit a 62-bit code (patterns sorted as rows)."""
    model, tie = _potts_tie(5, 6, 3)
    x = np.random.default_rng(8).integers(0, 3, (40, model.n))
    whole = _contexts.Contexts(tie, x)
    monkeypatch.setattr(_contexts, "_CHUNK", 200)
    chunked = _contexts.Contexts(tie, x)
    for name in ("w", "wptr", "base", "stride", "rows"):
        np.testing.assert_array_equal(getattr(chunked, name), getattr(whole, name))
    scopes = [(h, j) for h in (0, 1) for j in range(2, 65)]
    star = FactorGraph([2] * 65, scopes, [np.zeros((2, 2))] * len(scopes))
    tie = Tie(star, [0] * len(scopes), form="potts")
    assert sorted(len(c[0]) for c in _contexts._tied_classes(tie)) == [2, 63]
    x = np.random.default_rng(10).integers(0, 2, (9, 65))
    (va, ga), (vb, gb) = _objectives(tie, x, np.array([0.7]))
    assert vb == pytest.approx(va, rel=1e-10)
    np.testing.assert_allclose(gb, ga, rtol=1e-10)


def test_row_numbering_survives_a_hash_collision():
    """Two rows with the same 64-bit hash are told apart (the rows are sorted instead)."""
    mix = np.random.default_rng(0).integers(1, 2**62, 2) | 1
    rows = np.array([[0, 0], [mix[1], -mix[0]], [0, 0], [1, 2]], dtype=np.int64)
    with np.errstate(over="ignore"):
        assert int(rows[0] @ mix) == int(rows[1] @ mix)
    ids, first = _contexts._row_ids(rows)
    assert ids[0] == ids[2] and len({ids[0], ids[1], ids[3]}) == 3
    np.testing.assert_array_equal(rows[first[ids]], rows)
    ids, first = _contexts._row_ids(np.array([[3, 1], [2, 2], [3, 1]]))
    assert ids[0] == ids[2] != ids[1] and sorted(first.tolist()) == [0, 1]


def test_first_positions_rank_values_by_first_appearance():
    values = np.array([[7, 3, 7, -1, 3, 9], [-1, -1, 5, 5, 2, 5]])
    expected = np.array([[0, 1, 0, -1, 1, 2], [-1, -1, 0, 0, 1, 0]])
    np.testing.assert_array_equal(_contexts._first_positions(values), expected)


def test_pooled_contexts_ask_for_their_memory_first():
    model, tie = _potts_tie(4, 5, 3)
    x = exact.sample(model, 30, rng=11)
    with memory_requests() as log:
        _contexts.Contexts(tie, x)
    assert any("classes of tied variables" in what for what, _ in log)


@pytest.mark.parametrize("method", ["mle", "mple", "1-smci"])
def test_a_tied_fit_names_its_parameters_by_group(method):
    """``fit.tied`` holds each group's fitted parameters by label, recorded history or not,
    equal to the last row of the history where it is kept."""
    truth = lattices.potts_lattice(3, 3, 3, coupling=0.5, rng=0)
    groups = ["field" if len(s) == 1 else ("h" if s[1] == s[0] + 1 else "v")
              for s in truth.scopes]
    tie = Tie(truth, groups, form={"h": "potts", "v": "potts"})
    data = exact.sample(truth, 300, rng=1)
    kw = dict(max_steps=30) if method == "1-smci" else {}
    kept = learning.fit(data, truth, method, tie=tie, record=True, **kw)
    assert list(kept.tied) == ["field", "h", "v"]
    assert [len(v) for v in kept.tied.values()] == [2, 1, 1]
    np.testing.assert_array_equal(np.concatenate(list(kept.tied.values())), kept.params[-1])
    lean = learning.fit(data, truth, method, tie=tie, record=False, **kw)
    assert lean.params is None
    for label in kept.tied:
        np.testing.assert_array_equal(lean.tied[label], kept.tied[label])
    assert learning.fit(data, truth, method, **kw).tied is None
