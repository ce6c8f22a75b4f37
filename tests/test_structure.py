"""The backend chooser: one place tells the model kinds apart, by their structure."""

import numpy as np
import pytest

from mrflib import BoltzmannMachine, graphs, sampling
from mrflib.inference.sampling import chains
from mrflib.models.factor_graph import FactorGraph
from mrflib.models.lattices import potts_lattice
from mrflib.models.structure import (
    GENERAL,
    PAIRWISE,
    PAIRWISE_BINARY,
    is_pairwise_binary,
    structure,
)


def test_each_kind_has_its_structure():
    bm = BoltzmannMachine.random(graphs.square_grid(2, 3), 6, rng=0)
    assert structure(bm) == PAIRWISE_BINARY and is_pairwise_binary(bm)
    # a machine's factor graph answers in states: the table backends serve it
    assert structure(FactorGraph.from_boltzmann(bm)) == PAIRWISE
    assert not is_pairwise_binary(FactorGraph.from_boltzmann(bm))
    assert structure(potts_lattice(3, 3, 3, rng=0)) == PAIRWISE
    triple = FactorGraph([2, 3, 2], [(0, 1, 2), (0,)], [np.zeros((2, 3, 2)), np.zeros(2)])
    assert structure(triple) == GENERAL


@pytest.mark.parametrize("chooser", [structure, is_pairwise_binary])
def test_anything_else_is_a_type_error_naming_the_argument(chooser):
    with pytest.raises(TypeError, match="structure must be a BoltzmannMachine or a "
                                        "FactorGraph, got list"):
        chooser([1, 2], "structure")


def test_the_sampling_front_sweeps_a_factor_graph_as_its_chains_do():
    fg = potts_lattice(4, 4, 3, rng=1)
    x = sampling.gibbs(fg, 6, burn_in=3, rng=2)
    again = x.copy()
    swept = sampling.sweep(fg, x, 3, rng=7)
    assert np.array_equal(x, again)  # the front returns a new array
    assert np.array_equal(swept, chains.advance(fg, again, 3, rng=7))
    order = sampling.sweep_order(fg)
    assert sorted(order) == list(range(16))
    assert order[0] == 0 and len(set(order[:8]) & {1, 4}) == 0  # colour classes first
