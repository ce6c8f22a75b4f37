import numpy as np
import pytest

from mrflib import BoltzmannMachine, exact, graphs


def test_log_weight_definition(grid_bm):
    x = np.array([1, -1, 1, 1, 1, -1, -1, 1, -1])
    expected = grid_bm.bias @ x + sum(
        J * x[i] * x[j] for (i, j), J in zip(grid_bm.edges, grid_bm.coupling))
    assert grid_bm.log_weight(x) == pytest.approx(expected, abs=1e-12)
    W = grid_bm.coupling_matrix()
    assert np.allclose(W, W.T) and np.all(np.diag(W) == 0)
    assert grid_bm.log_weight(x) == pytest.approx(grid_bm.bias @ x + x @ W @ x / 2)


def test_local_field(grid_bm):
    x = exact.states(9)[::37]
    h = grid_bm.local_field(x)
    assert np.allclose(h, grid_bm.bias + x @ grid_bm.coupling_matrix())


def test_random_is_uniform_and_reproducible():
    e = graphs.square_grid(10, 10)
    a = BoltzmannMachine.random(e, 100, rng=3)
    assert a == BoltzmannMachine.random(e, 100, rng=3)
    assert np.abs(a.bias).max() <= 0.2 and np.abs(a.coupling).max() <= 0.3
    assert np.abs(a.coupling).max() > 0.25


def test_with_params_and_immutability(grid_bm):
    b = grid_bm.with_params(grid_bm.params * 2)
    assert np.allclose(b.coupling, 2 * grid_bm.coupling)
    with pytest.raises(ValueError):
        grid_bm.bias[0] = 1.0


def test_from_01_roundtrip_same_distribution():
    e = graphs.square_grid(2, 3)
    rng = np.random.default_rng(0)
    a, c = rng.normal(size=6), rng.normal(size=len(e))
    bm = BoltzmannMachine.from_01(a, e, c)
    s = (exact.states(6) + 1) // 2
    lw01 = s @ a + (s[:, e[:, 0]] * s[:, e[:, 1]]) @ c
    assert np.ptp(exact.log_weights(bm) - lw01) < 1e-12
    a2, c2 = bm.to_01()
    assert np.allclose(a2, a) and np.allclose(c2, c)


@pytest.mark.parametrize(
    "args, match",
    [
        ((np.zeros(3), [[0, 1]], [0.1, 0.2]), "coupling must have shape"),
        ((np.zeros(3), [[1, 0]], [0.1]), "i < j"),
        ((np.zeros(2), [[0, 2]], [0.1]), "n = 2"),
        (([np.nan, 0.0], [[0, 1]], [0.1]), "bias must contain only finite"),
        ((np.zeros((2, 2)), [[0, 1]], [0.1]), "bias must be 1-dimensional"),
    ],
)
def test_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        BoltzmannMachine(*args)


def test_log_weight_refuses_bad_spins(grid_bm):
    with pytest.raises(ValueError, match="x must contain only spins"):
        grid_bm.log_weight(np.zeros(9))
