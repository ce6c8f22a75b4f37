"""The Newton direction of a concave objective, shared by the compiled Newton ascents of
LAP's local fits (the ±1, the general and the pairwise kernels).

Each ascent maximises a concave ``ℓ(θ)`` with gradient ``g`` and Hessian ``H`` (negative
semi-definite; a ridge makes ``-H`` positive definite where the data leave a direction
flat) and stops on the Newton decrement ``g·δ``: one function computes both, so that the
three ascents take the same step from the same numbers, in the same order of operations.
"""

from __future__ import annotations

from numba import njit

from mrflib._support._lapack_kernels import solve_symmetric

__all__ = ["newton_direction"]


@njit(cache=True, nogil=True)
def newton_direction(H, g, ridge, A):  # pragma: no cover - numba
    """``(δ, g·δ)`` with ``(ridge I - H) δ = g``: the ridge-regularised Newton step of a
    concave objective and its squared Newton decrement.

    ``H (D, D)`` must be symmetric (the evaluators mirror its triangle), so that
    :func:`~mrflib._support._lapack_kernels.solve_symmetric` applies; ``A (D, D)`` is
    C-contiguous work space, overwritten with ``ridge I - H``.
    """
    D = g.shape[0]
    for a in range(D):
        for b in range(D):
            A[a, b] = -H[a, b]
        A[a, a] += ridge
    delta = solve_symmetric(A, g)
    dec = 0.0
    for a in range(D):
        dec += g[a] * delta[a]
    return delta, dec
