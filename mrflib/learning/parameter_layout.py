"""The data's factor marginals, the sufficient statistics of a factor graph's learners.

Every factor-graph learner of :mod:`mrflib.learning.table_learners` (ML, pseudo-likelihood,
LAP) works on one flat parameter vector: the entries of every factor's log table in the
normalized-potential gauge (Mizrahi et al., Definition 5), mapped to the tables by a sparse
matrix built once per structure (:mod:`mrflib.learning._layout`);
:func:`data_factor_marginals` gives the data's factor marginals, the sufficient statistics
of eq. (5) of the LAP paper.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mrflib.learning._layout import Layout, check_data, check_structure, data_marginals
from mrflib.models.factor_graph import FactorGraph

__all__ = ["data_factor_marginals"]


def data_factor_marginals(structure: FactorGraph, data: Any) -> list[np.ndarray]:
    """Empirical marginal of each factor's scope: ``p̂_k(x_{S_k})``, shaped like its table.

    Parameters
    ----------
    structure : FactorGraph
        Its scopes and cardinalities; its tables are ignored.
    data : array_like of int, shape (N, n)
        States ``0..cardinality-1`` of every variable, ``N >= 1`` rows.

    Returns
    -------
    list of ndarray of float64
        One array per factor, of its table's shape: the share of the data rows in which
        the factor's scope takes each joint state.
    """
    structure = check_structure(structure)
    x = check_data(data, structure)
    lay = Layout(structure)
    d = data_marginals(lay, x)
    return [d[lay.offsets[k]:lay.offsets[k + 1]].reshape(lay.shapes[k])
            for k in range(len(lay.shapes))]
