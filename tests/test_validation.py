import numpy as np
import pytest

from mrflib import _validation as v


def test_as_rng_accepts_seed_and_generator():
    g = np.random.default_rng(3)
    assert v.as_rng(g) is g
    assert v.as_rng(3).random() == np.random.default_rng(3).random()


@pytest.mark.parametrize("bad", [None, -1, 1.5, "seed", True])
def test_as_rng_refuses(bad):
    with pytest.raises(ValueError, match="rng"):
        v.as_rng(bad)


@pytest.mark.parametrize(
    "edges, match",
    [
        ([[1, 0]], "i < j"),
        ([[0, 1], [0, 1]], "duplicate"),
        ([[1, 2], [0, 1]], "sorted"),
        ([[0, 5]], "n = 3"),
        ([[0, 1, 2]], r"shape \(E, 2\)"),
        ([[-1, 1]], "non-negative"),
        ([[0.5, 1]], "integer"),
    ],
)
def test_check_edges_refuses(edges, match):
    with pytest.raises(ValueError, match=match):
        v.check_edges(np.array(edges), n=3)


@pytest.mark.parametrize(
    "x, match",
    [
        ([[0, 1]], "spins -1 and \\+1"),
        ([[np.nan, 1.0]], "finite"),
        ([[1, 1, 1]], "2 columns"),
        (np.ones((2, 2, 2)), "shape"),
    ],
)
def test_check_spins_refuses(x, match):
    with pytest.raises(ValueError, match=match):
        v.check_spins(np.array(x), n=2, name="data")


def test_check_spins_returns_int8_2d():
    out = v.check_spins([1, -1, 1])
    assert out.dtype == np.int8 and out.shape == (1, 3)


def test_check_array_messages():
    with pytest.raises(ValueError, match="bias must have shape"):
        v.check_array(np.zeros(3), "bias", shape=(4,))
    with pytest.raises(ValueError, match="coupling must contain only finite"):
        v.check_array([np.inf], "coupling")


def test_check_positive():
    assert v.check_positive(2, "k", integer=True) == 2
    with pytest.raises(ValueError, match="eta must be positive"):
        v.check_positive(-0.1, "eta")
    with pytest.raises(ValueError, match="k must be an integer"):
        v.check_positive(1.5, "k", integer=True)


def test_require_memory_states_size():
    with pytest.raises(ValueError, match=r"would need 1\.0 TiB"):
        v.require_memory(2.0**40, "test table", limit=2.0**30)
    v.require_memory(10, "tiny", limit=100)
