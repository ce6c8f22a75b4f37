"""Tests of the field-test chapter's pieces: real digits, the king's-move lattice, pgmpy's
expert networks, and the experiment code of :mod:`mrflib.repro.field_test`."""

from __future__ import annotations

import numpy as np
import pytest

from mrflib import graphs


def test_king_grid_small_cases():
    assert graphs.king_grid(1, 1).shape == (0, 2)
    assert graphs.king_grid(1, 3).tolist() == [[0, 1], [1, 2]]
    assert graphs.king_grid(2, 2).tolist() == [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]]
    assert graphs.king_grid(2, 3).tolist() == [
        [0, 1], [0, 3], [0, 4], [1, 2], [1, 3], [1, 4], [1, 5], [2, 4], [2, 5], [3, 4], [4, 5]]


@pytest.mark.parametrize("rows, cols", [(3, 3), (4, 5), (8, 8)])
def test_king_grid_degrees_and_square_subset(rows, cols):
    e = graphs.king_grid(rows, cols)
    assert np.all(e[:, 0] < e[:, 1])
    assert len(np.unique(e, axis=0)) == len(e)
    assert np.array_equal(e, np.unique(e, axis=0))  # sorted rows
    deg = np.bincount(e.ravel(), minlength=rows * cols).reshape(rows, cols)
    assert np.all(deg[1:-1, 1:-1] == 8) and deg[0, 0] == 3
    assert len(e) == (rows - 1) * cols + rows * (cols - 1) + 2 * (rows - 1) * (cols - 1)
    sq = {tuple(r) for r in graphs.square_grid(rows, cols).tolist()}
    assert sq <= {tuple(r) for r in e.tolist()}
    for i, j in e.tolist():  # every edge joins king's-move neighbours
        assert max(abs(i // cols - j // cols), abs(i % cols - j % cols)) == 1


@pytest.mark.parametrize("bad", [0, -1, 2.5, "3", None])
def test_king_grid_rejects_bad_sizes(bad):
    with pytest.raises(ValueError, match="rows"):
        graphs.king_grid(bad, 3)
    with pytest.raises(ValueError, match="cols"):
        graphs.king_grid(3, bad)
