"""When a learner's estimate does not exist (:mod:`mrflib.learning.existence`).

Every reason the tests give names a direction along which the objective rises without end:
checked here by exact evaluation of the log-likelihood (or the pseudo-likelihood) along it
on random small tied families. The learners then warn and report no convergence.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from mrflib import learning
from mrflib.inference import exact
from mrflib.learning import existence, table_learners
from mrflib.learning._layout import Layout, data_marginals
from mrflib.learning.tying import FORMS, Tie
from mrflib.models import lattices
from mrflib.models.factor_graph import FactorGraph


def _log_likelihood(model: FactorGraph, data: np.ndarray) -> float:
    return float(np.mean(model.log_weight(data)) - exact.log_partition(model))


def _direction(tie: Tie, j: int) -> np.ndarray:
    """The direction of class ``j``: ``-e_j`` for a parameter's class, all the group's
    parameters raised together for a group's reference class."""
    v = np.zeros(tie.n_params)
    if j < tie.n_params:
        v[j] = -1.0
    else:
        g = j - tie.n_params
        v[tie.param_offsets[g]:tie.param_offsets[g + 1]] = 1.0
    return v


def _random_tie(rng: np.random.Generator) -> Tie:
    n = int(rng.integers(3, 5))
    q = int(rng.integers(2, 4))
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    picked = [pairs[k] for k in rng.choice(len(pairs), min(len(pairs), int(rng.integers(2, 5))),
                                                        replace=False)]
    scopes = [(i,) for i in range(n)] + picked
    model = FactorGraph([q] * n, scopes, [np.zeros((q,) * len(s)) for s in scopes])
    labels = ["u" if len(s) == 1 else f"p{int(rng.integers(0, 2))}" for s in scopes]
    forms = {lab: FORMS[int(rng.integers(0, 3))] for lab in set(labels) if lab != "u"}
    return Tie(model, labels, form=forms)


@pytest.mark.parametrize("seed", range(40))
def test_every_unseen_class_is_a_direction_of_unbounded_ascent(seed):
    """On random tied families and small samples (so that boundaries are common), each
    class the test names raises the log-likelihood (and, for those met in a context, the
    pseudo-likelihood) strictly along its direction, from random parameters."""
    rng = np.random.default_rng(seed)
    tie = _random_tie(rng)
    n, q = len(tie.card), int(tie.card[0])
    data = rng.integers(0, q, (int(rng.integers(1, 4)), n))
    if rng.random() < 0.5:
        data[:] = data[:1]  # one repeated sample: bonds that always agree
    d = data_marginals(tie, data)
    phi = rng.normal(0, 0.5, tie.n_params)
    for in_context in (False, True):
        objective = (table_learners.pseudo_log_likelihood if in_context
                     else _log_likelihood)
        for j in np.flatnonzero(existence._unseen_classes(tie, d, in_context)):
            v = _direction(tie, int(j))
            values = [objective(tie.model(phi + t * v), data) for t in (0.0, 1.0, 2.0, 4.0)]
            assert np.all(np.diff(values) > 0), (seed, in_context, j, values)


def test_potts_bonds_that_always_agree_leave_no_mle():
    """Every sample constant over a 2x3 Potts lattice: the tied coupling's MLE is +inf.
    MLE, MPLE and the stochastic learners warn and report no convergence."""
    structure = lattices.potts_lattice(2, 3, 3, rng=0)
    labels = ["h" if len(s) == 1 else "J" for s in structure.scopes]
    tie = Tie(structure, labels, form={"J": "potts"})
    data = np.repeat(np.arange(3), 4)[:, None] * np.ones((1, 6), dtype=int)
    for method, kw in (("mle", {}), ("mple", {}), ("1-smci", {"max_steps": 50}),
                       ("pcd", {"max_steps": 5, "rng": 0})):
        with pytest.warns(RuntimeWarning, match="reference entries of group 'J'"):
            fit = learning.fit(data, structure, method, tie=tie, **kw)
        assert not fit.converged, method
        assert "does not exist" in fit.stop_reason, method
    couplings = [_log_likelihood(tie.model(np.r_[0.0, 0.0, J]), data) for J in (0, 2, 4, 8)]
    assert np.all(np.diff(couplings) > 0)


def test_a_ridge_or_generic_data_raise_no_warning():
    structure = lattices.potts_lattice(2, 3, 3, rng=0)
    labels = ["h" if len(s) == 1 else "J" for s in structure.scopes]
    tie = Tie(structure, labels, form={"J": "potts"})
    agree = np.repeat(np.arange(3), 4)[:, None] * np.ones((1, 6), dtype=int)
    generic = exact.sample(structure, 400, rng=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert learning.fit(agree, structure, "mle", tie=tie, l2=0.1).converged
        assert learning.fit(generic, structure, "mle", tie=tie).converged
        assert learning.fit(generic, structure, "mple", tie=tie).converged


def test_a_parameter_whose_states_never_occur_diverges_down():
    """A tied free unary table whose state 2 no variable takes: its parameter goes to
    -inf; named by index and group."""
    structure = lattices.potts_lattice(2, 2, 3, rng=0)
    labels = ["h" if len(s) == 1 else "J" for s in structure.scopes]
    tie = Tie(structure, labels, form={"J": "potts"})
    data = np.random.default_rng(0).integers(0, 2, (50, 4))
    msg = existence.unbounded(tie, data_marginals(tie, data))
    assert msg == ("1 class(es) of tied table entries never occur, the first: parameter "
                   "phi[1] of group 'h' (free form) holds no state the data show, so it "
                   "diverges to -inf")


def test_pseudo_likelihood_counts_only_classes_a_sample_meets():
    """One binary factor of three variables, data all (0, 0, 0), tied to itself: 7 classes
    never occur for ML, only the 3 one change away for the pseudo-likelihood (the same
    count as the untied test)."""
    s = FactorGraph([2, 2, 2], [(0, 1, 2)], [np.zeros((2, 2, 2))])
    tie = Tie(s, ["a"])
    d = data_marginals(tie, np.zeros((5, 3), int))
    assert existence.unbounded(tie, d).startswith("7 class(es)")
    assert existence.unbounded(tie, d, True).startswith("3 class(es)")


def _unseen_factor_state_per_factor(lay, d, in_context=False) -> str:
    """The factor-by-factor definition the vectorized test must equal, message included."""
    bad = []
    for k, shape in enumerate(lay.shapes):
        c = d[lay.offsets[k]:lay.offsets[k + 1]].reshape(shape)
        zero = c == 0
        if in_context and zero.any():
            met = np.zeros(shape, dtype=bool)
            for a in range(len(shape)):
                met |= c.sum(axis=a, keepdims=True) > 0
            zero &= met
        bad += [(k, tuple(int(v) for v in st)) for st in np.argwhere(zero)]
    if not bad:
        return ""
    k, state = bad[0]
    where = " in a context the data meet" if in_context else ""
    return (f"{len(bad)} factor state(s) never occur{where}, the first: factor {k} over "
            f"{tuple(lay.scopes[k])} in state {state}")


@pytest.mark.parametrize("seed", range(25))
def test_untied_test_equals_its_factor_by_factor_definition(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 6))
    card = rng.integers(1, 4, n)
    scopes = [tuple(int(v) for v in rng.choice(n, int(rng.integers(1, min(n, 3) + 1)),
                                               replace=False))
              for _ in range(int(rng.integers(1, 7)))]
    model = FactorGraph(card, scopes, [np.zeros([card[v] for v in s]) for s in scopes])
    lay = Layout(model)
    data = rng.integers(0, card, (int(rng.integers(1, 8)), n))
    d = data_marginals(lay, data)
    for in_context in (False, True):
        assert (existence.unbounded(lay, d, in_context)
                == _unseen_factor_state_per_factor(lay, d, in_context))


def test_one_smci_reports_an_untied_unseen_state():
    """1-SMCI's direction vanishes as a parameter diverges, so it would stop as
    'converged'; with a state the data never show it says the MLE does not exist."""
    structure = lattices.potts_lattice(2, 2, 2, rng=0)
    data = exact.sample(structure, 200, rng=1)
    data[:, 0] = 0
    with pytest.warns(RuntimeWarning, match="MLE does not exist"):
        fit = learning.fit(data, structure, "1-smci", max_steps=200)
    assert not fit.converged and fit.stop_reason.startswith("the MLE does not exist")
