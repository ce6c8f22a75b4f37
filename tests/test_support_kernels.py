"""The support kernels that stand in for numba's generic ``np.linalg.solve`` and ``np.sort``
(cheaper to compile): the same bits and the same errors as numba's own."""

import numpy as np
import pytest
from numba import njit

from mrflib._support._lapack_kernels import solve_symmetric
from mrflib._support._sort_kernels import sort_int64


@njit
def _numba_solve(A, b):  # pragma: no cover - numba
    return np.linalg.solve(A, b)


def _symmetric(rng, n, scale):
    M = rng.normal(size=(n, n)) * scale
    A = M @ M.T + rng.uniform(0.0, 2.0) * np.eye(n) - rng.uniform(0.0, 1.0) * n * np.eye(n)
    return np.triu(A) + np.triu(A, 1).T  # exactly symmetric


def test_solve_symmetric_has_numbas_bits():
    rng = np.random.default_rng(0)
    for n in (1, 2, 3, 7, 20, 41):
        for scale in (1e-6, 1.0, 1e5):
            A = _symmetric(rng, n, scale)
            b = rng.normal(size=n) * scale
            x = solve_symmetric(A, b)
            assert np.array_equal(x, _numba_solve(A, b))
            np.testing.assert_allclose(A @ x, b, rtol=1e-6, atol=1e-9 * np.abs(b).max())


def test_solve_symmetric_leaves_its_arguments():
    rng = np.random.default_rng(1)
    A = _symmetric(rng, 5, 1.0)
    b = rng.normal(size=5)
    A0, b0 = A.copy(), b.copy()
    solve_symmetric(A, b)
    assert np.array_equal(A, A0) and np.array_equal(b, b0)


def test_solve_symmetric_empty():
    assert solve_symmetric(np.zeros((0, 0)), np.zeros(0)).shape == (0,)


_SINGULAR = "Matrix is singular to machine precision."
_NOT_FINITE = "Array must not contain infs or NaNs."


@pytest.mark.parametrize("A, b, message", [
    (np.ones((3, 3)), np.ones(3), _SINGULAR),                       # rank one
    (np.zeros((2, 2)), np.array([1.0, 2.0]), _SINGULAR),
    (np.array([[1.0, 2.0], [2.0, 4.0]]), np.zeros(2), _SINGULAR),
    (np.array([[1.0, np.nan], [np.nan, 1.0]]), np.ones(2), _NOT_FINITE),
    (np.eye(2), np.array([1.0, np.inf]), _NOT_FINITE),
    (np.array([[-np.inf]]), np.ones(1), _NOT_FINITE),
])
def test_solve_symmetric_raises_as_numba(A, b, message):
    """A singular matrix, or one with a non-finite entry: numba's error and message."""
    with pytest.raises(np.linalg.LinAlgError) as ours:
        solve_symmetric(A, b)
    with pytest.raises(np.linalg.LinAlgError) as numbas:
        _numba_solve(A, b)
    assert str(ours.value) == str(numbas.value) == message


@pytest.mark.parametrize("n", [0, 1, 2, 17, 1000])
@pytest.mark.parametrize("lo, hi", [(0, 2), (0, 256), (0, 70000), (0, 2**62),
                                    (-2**62, 2**62), (-5, 3)])
def test_sort_int64_is_np_sort(n, lo, hi):
    a = np.random.default_rng(n + hi).integers(lo, hi, n)
    a0 = a.copy()
    assert np.array_equal(sort_int64(a), np.sort(a))
    assert np.array_equal(a, a0)


def test_sort_int64_extremes():
    a = np.array([np.iinfo(np.int64).max, 0, np.iinfo(np.int64).min, -1, 1, -2**40, 2**40])
    assert np.array_equal(sort_int64(a), np.sort(a))
