"""Tests of :mod:`mrflib.learning.log_linear`: the ML fit on a fixed set of full-span basis
functions
against exact maximum likelihood and against its own objective's optimum."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize

from mrflib import exact, fsll, graphs, learning
from mrflib.learning import log_linear


def _binary_data(n_samples: int = 400) -> np.ndarray:
    rng = np.random.default_rng(0)
    x = (rng.random((n_samples, 4)) < [0.3, 0.5, 0.6, 0.4]).astype(np.int8)
    x[:, 3] ^= x[:, 0] & (rng.random(n_samples) < 0.7)
    return x


def test_pairwise_family_on_binary_data_is_the_exact_mle_boltzmann_machine():
    """Order <= 2 on binary variables is the complete Boltzmann machine with biases: the fit
    equals the exact maximum-likelihood machine (bit i of the flat index is spin i)."""
    x = _binary_data()
    cards = (2, 2, 2, 2)
    counts = np.bincount(fsll.flat_index(x, cards), minlength=16)
    q, info = log_linear.fit_log_linear(counts / counts.sum(), cards,
                                        log_linear.order_mask(cards, 2), tol=1e-8)
    bm = learning.fit((2 * x - 1).astype(np.int8), graphs.complete(4), "mle").model
    np.testing.assert_allclose(q, exact.probabilities(bm), atol=1e-7)
    assert info["converged"] and q.sum() == pytest.approx(1.0)
    assert np.all(info["theta"][~log_linear.order_mask(cards, 2)] == 0)


@pytest.mark.parametrize("cards, order", [((3, 2, 2), 2), ((3, 4), 1), ((5, 2, 3), 2)])
def test_fit_is_the_optimum_of_its_own_objective(cards, order):
    """At the fit the masked moments match the target's (the gradient, eq. (8), vanishes), and
    the cross-entropy is the one a generic optimizer reaches on a dense parametrisation."""
    X = int(np.prod(cards))
    target = np.random.default_rng(X).dirichlet(np.ones(X))
    mask = log_linear.order_mask(cards, order)
    q, info = log_linear.fit_log_linear(target, cards, mask)
    assert info["converged"]
    np.testing.assert_allclose(fsll.dual(q, cards)[mask], fsll.dual(target, cards)[mask],
                               atol=1e-7)
    B = fsll.basis_matrix(cards)[mask]  # Phi_y(x) for y in the mask

    def cross_entropy(z):
        lw = z @ B
        return float(np.logaddexp.reduce(lw) - target @ lw)

    ref = scipy.optimize.minimize(cross_entropy, np.zeros(mask.sum()), method="BFGS",
                                  options={"gtol": 1e-10})
    assert -target @ np.log(q) == pytest.approx(ref.fun, abs=1e-9)


def test_full_mask_reproduces_a_positive_target_and_empty_mask_is_uniform():
    cards = (3, 2)
    target = np.random.default_rng(1).dirichlet(np.ones(6))
    full = np.ones(6, bool)
    full[0] = False
    q, _ = log_linear.fit_log_linear(target, cards, full, tol=1e-12)
    np.testing.assert_allclose(q, target, atol=1e-9)
    q0, info = log_linear.fit_log_linear(target, cards, np.zeros(6, bool))
    np.testing.assert_allclose(q0, np.full(6, 1 / 6))
    assert info["n_iter"] == 0


def test_order_mask_and_old_names_in_the_harness():
    from mrflib.repro import field_networks as fn

    assert log_linear.order_mask((3, 2), 1).tolist() == [False, True, True, True, False, False]
    assert log_linear.order_mask((2, 2, 2), 3).sum() == 7
    assert fn.fit_log_linear is log_linear.fit_log_linear
    assert fn.order_mask is log_linear.order_mask


@pytest.mark.parametrize("kwargs, name", [
    (dict(target=np.full(6, 0.2)), "target"),
    (dict(target=np.full(5, 0.2)), "target"),
    (dict(mask=np.ones(6, bool)), "mask"),
    (dict(mask=np.ones(3, bool)), "mask"),
    (dict(cardinalities=(2, 2, 2)), "target"),
    (dict(max_iter=0), "max_iter"),
    (dict(tol=-1.0), "tol"),
])
def test_bad_input_names_the_argument(kwargs, name):
    args = dict(target=np.full(6, 1 / 6), cardinalities=(3, 2),
                mask=log_linear.order_mask((3, 2), 2))
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        log_linear.fit_log_linear(**args)
