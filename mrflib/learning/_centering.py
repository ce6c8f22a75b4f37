"""The preconditioner of a pairwise pseudo-likelihood fit: centred features, scaled.

In the normalized gauge (state 0 the reference) a pair parameter ``θ_ij(a, b)`` is the
weight of the feature ``[x_i = a][x_j = b]`` and a unary ``θ_i(a)`` that of ``[x_i = a]``;
a variable's conditional reads ``θ_i(a)`` in every row and ``θ_ij(a, b)`` in the rows where
``x_j = b``, so the two move together and the pseudo-likelihood's Hessian couples each
unary to every pair entry of its variable (on a q = 4 lattice L-BFGS then gains about a
decade of ``max |gradient|`` per 20 iterations). Centring the features on the data's
single-site frequencies ``p``, ``([x_i = a] - p_i(a)) ([x_j = b] - p_j(b))``, takes that
coupling out (the centring trick of Boltzmann-machine learning, Montavon and Müller 2012):
it is the change of parameters ``θ = (I + C) z`` with ``C`` moving ``-p_j(b) z_ij(a, b)``
into ``θ_i(a)`` and ``-p_i(a) z_ij(a, b)`` into ``θ_j(b)`` (the same energy up to a
constant, which no conditional sees). The centred parameters are then scaled by their
curvature where the conditionals are uniform, ``v_i = (1/c_i)(1 - 1/c_i)`` for a unary and
``v_i p_j(b)(1 - p_j(b)) + v_j p_i(a)(1 - p_i(a))`` for a pair entry. ``C`` maps pair
entries to unaries only, so ``C^2 = 0`` and ``(I + C)^{-1} = I - C``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from mrflib._support.validation import require_memory

__all__ = ["centring"]


def _frequencies(x: np.ndarray, card: np.ndarray) -> np.ndarray:
    """``p[i, v]``: the share of the rows of ``x`` with ``x_i = v`` (``(n, max card)``)."""
    p = np.zeros((x.shape[1], int(card.max(initial=1))))
    for v in range(p.shape[1]):
        p[:, v] = np.count_nonzero(x == v, axis=0)
    return p / max(len(x), 1)


def centring(terms: list, term_offsets: np.ndarray, card: np.ndarray, x: np.ndarray,
             l2: float = 0.0) -> tuple[Any, Any] | None:
    """``(M, M_inv)`` with ``θ = M z``: the centred, scaled parameters of a family of
    unary and pair terms (module docstring), or ``None`` when a term spans more than two
    variables or a variable of a pair term has no unary term.

    Parameters
    ----------
    terms : list of tuple of int
        The cliques of ``θ`` in order (:class:`mrflib.learning._layout.Layout`).
    term_offsets : ndarray of int64
        Term ``t``'s entries at ``term_offsets[t]:term_offsets[t + 1]`` (states from 1,
        in C order over the clique's variables).
    card : ndarray of int64
        The variables' cardinalities.
    x : ndarray of int, shape (N, n)
        The data.
    l2 : float
        A ridge's curvature, added to every parameter's.

    Returns
    -------
    tuple of two scipy.sparse.csr_matrix, or None
    """
    if any(len(t) > 2 for t in terms):
        return None
    n_par = int(term_offsets[-1])
    card = np.asarray(card, dtype=np.int64)
    unary = np.full(len(card), -1, dtype=np.int64)
    single = [k for k, t in enumerate(terms) if len(t) == 1]
    unary[[terms[k][0] for k in single]] = term_offsets[single]
    pairs = np.array([k for k, t in enumerate(terms) if len(t) == 2], dtype=np.int64)
    ij = np.array([terms[k] for k in pairs], dtype=np.int64).reshape(-1, 2)
    if len(pairs) and np.any(unary[ij] < 0):
        return None
    m = (card[ij[:, 0]] - 1) * (card[ij[:, 1]] - 1)
    # per pair entry: its indices and values here, then M's and M_inv's triplets and CSR
    require_memory(48.0 * n_par + 160.0 * float(m.sum()),
                   f"the centred parameters' map of {n_par} parameters")
    p = _frequencies(x, card)
    v = (card - 1.0) / (card * card)  # a conditional's uniform variance of one indicator
    h = np.empty(n_par)
    for k in single:
        i = terms[k][0]
        h[term_offsets[k]:term_offsets[k + 1]] = v[i]
    i, j = ij[:, 0], ij[:, 1]
    t = np.repeat(np.arange(len(pairs)), m)
    local = np.arange(int(m.sum())) - np.repeat(np.cumsum(m) - m, m)
    a = local // (card[j[t]] - 1) + 1
    b = local % (card[j[t]] - 1) + 1
    col = term_offsets[pairs[t]] + local
    pa, pb = p[i[t], a], p[j[t], b]
    h[col] = v[i[t]] * pb * (1.0 - pb) + v[j[t]] * pa * (1.0 - pa)
    h += l2
    positive = h > 0
    if not positive.all():  # a pair of states the data never show: the smallest scale
        h = np.where(positive, h, h[positive].min() if positive.any() else 1.0)
    rows = np.concatenate([unary[i[t]] + a - 1, unary[j[t]] + b - 1])
    C = sp.csr_matrix((np.concatenate([-pb, -pa]), (rows, np.concatenate([col, col]))),
                      shape=(n_par, n_par))
    eye = sp.identity(n_par, format="csr")
    s = 1.0 / np.sqrt(h)
    M = ((eye + C) @ sp.diags(s)).tocsr()
    M_inv = (sp.diags(1.0 / s) @ (eye - C)).tocsr()
    return M, M_inv
