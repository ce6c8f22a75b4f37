import networkx as nx
import numpy as np
import pytest

from mrflib import graphs
from mrflib._support.validation import check_edges


@pytest.mark.parametrize(
    "edges, n, m",
    [
        (graphs.square_grid(4, 5), 20, 31),
        (graphs.cubic(3), 27, 54),
        (graphs.complete(6), 6, 15),
        (graphs.chimera(2, 3, 4), 48, 6 * 16 + 1 * 3 * 4 + 2 * 2 * 4),
    ],
)
def test_canonical_and_sizes(edges, n, m):
    check_edges(edges, n)  # canonical: sorted, i < j, unique
    assert len(edges) == m


def test_square_grid_matches_networkx():
    ours = graphs.to_networkx(graphs.square_grid(3, 4), 12)
    ref = nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 4), ordering="sorted")
    assert nx.is_isomorphic(ours, ref)
    assert set(map(tuple, graphs.square_grid(3, 4).tolist())) == set(
        tuple(sorted(e)) for e in ref.edges)


def test_cubic_and_chimera_degrees():
    deg = np.bincount(graphs.cubic(3).ravel())
    assert deg.max() == 6 and deg.min() == 3
    cdeg = np.bincount(graphs.chimera(3, 3, 4).ravel())
    assert cdeg.max() == 6 and cdeg.min() == 5


def test_random_graph_reproducible_and_density():
    a = graphs.random_graph(40, 0.3, rng=7)
    b = graphs.random_graph(40, 0.3, rng=7)
    assert np.array_equal(a, b)
    assert abs(len(a) / (40 * 39 / 2) - 0.3) < 0.05
    assert len(graphs.random_graph(10, 0.0, rng=1)) == 0
    with pytest.raises(ValueError, match="p must be"):
        graphs.random_graph(10, 1.5, rng=1)


def test_neighbourhood_regions_figure3():
    # Figure 3 of the GSMCI paper: 5x5 grid, 1-based labels there, 0-based here.
    e = graphs.square_grid(5, 5)
    assert (graphs.N_k(e, 25, [12], 1) + 1).tolist() == [8, 12, 14, 18]
    assert (graphs.N_k(e, 25, [12], 2) + 1).tolist() == [3, 7, 9, 11, 15, 17, 19, 23]
    assert (graphs.N_k(e, 25, [11, 12], 1) + 1).tolist() == [7, 8, 11, 14, 17, 18]
    assert graphs.R_k(e, 25, [12], 1).tolist() == sorted([12, 7, 11, 13, 17])
    assert graphs.boundary(e, 25, [12]).tolist() == graphs.N_k(e, 25, [12], 1).tolist()


def test_regions_match_networkx_distances():
    e = graphs.random_graph(15, 0.25, rng=3)
    g = graphs.to_networkx(e, 15)
    dist = nx.single_source_shortest_path_length(g, 4)
    for k in range(4):
        assert graphs.N_k(e, 15, [4], k).tolist() == sorted(i for i, d in dist.items() if d == k)


def test_adjacency_csr():
    e = graphs.square_grid(3, 3)
    indptr, indices, eids = graphs.adjacency(e, 9)
    for i in range(9):
        nb = indices[indptr[i]:indptr[i + 1]]
        assert nb.tolist() == sorted(nb.tolist())
        for j, k in zip(nb, eids[indptr[i]:indptr[i + 1]]):
            assert sorted((i, j)) == e[k].tolist()


def test_bad_input():
    with pytest.raises(ValueError, match="rows"):
        graphs.square_grid(0, 3)
    with pytest.raises(ValueError, match="T must contain nodes"):
        graphs.N_k(graphs.square_grid(2, 2), 4, [7], 1)
    with pytest.raises(ValueError, match="self-loops"):
        graphs.from_pairs([(1, 1)])
    assert graphs.from_pairs([(2, 1), (0, 1), (1, 2)]).tolist() == [[0, 1], [1, 2]]


# ----------------------------------------------------------------------------- Graph
def test_graph_validated_once_immutable_cached():
    e = graphs.square_grid(3, 4)
    g = graphs.Graph(12, e)
    assert g.n == 12 and g.n_edges == len(e) and np.array_equal(np.asarray(g), e)
    assert g.csr is g.csr  # cached
    for a in (g.edges, *g.csr, g.edge_pos, g.degree):
        assert not a.flags.writeable
    with pytest.raises(AttributeError):
        g.n = 3
    assert graphs.as_graph(g) is g
    assert graphs.as_graph(e) == g and graphs.as_graph(e, 13) != g
    with pytest.raises(ValueError, match="n = 13"):
        graphs.as_graph(g, 13)
    with pytest.raises(ValueError, match="edges"):
        graphs.Graph(5, e)
    assert [tuple(a) for a in g.csr] == [tuple(a) for a in graphs.adjacency(e, 12)]


def test_graph_regions_match_breadth_first_search():
    import networkx as nx

    e = graphs.random_graph(30, 0.08, rng=3)
    g = graphs.Graph(30, e)
    dist = nx.single_source_shortest_path_length(graphs.to_networkx(g), 7)
    for k in range(4):
        assert g.N_k([7], k).tolist() == sorted(i for i, d in dist.items() if d == k)
        assert g.R_k([7], k).tolist() == sorted(i for i, d in dist.items() if d <= k)
        assert graphs.R_k(g, None, [7], k).tolist() == g.R_k([7], k).tolist()
    assert g.boundary([7]).tolist() == g.N_k([7], 1).tolist()
    ep = g.edge_pos
    for k, (i, j) in enumerate(g.edges):
        assert g.indices[g.indptr[i] + ep[k, 0]] == j and g.indices[g.indptr[j] + ep[k, 1]] == i


def test_machine_holds_one_graph():
    from mrflib import BoltzmannMachine

    g = graphs.Graph(9, graphs.square_grid(3, 3))
    bm = BoltzmannMachine.random(g, 9, rng=0)
    assert bm.graph is g and bm.edges is g.edges and bm.n == 9
    assert bm.with_params(bm.params).graph is g
    assert BoltzmannMachine(bm.bias, g.edges, bm.coupling) == bm
    with pytest.raises(ValueError, match="does not match"):
        BoltzmannMachine(np.zeros(10), g, bm.coupling)


def test_graph_goes_where_an_edge_array_goes():
    from mrflib import lap

    g = graphs.Graph(9, graphs.square_grid(3, 3))
    a = np.array(g)  # a writable copy; the graph's own array stays read-only
    a[0, 0] = 5
    assert g.edges[0, 0] == 0 and not g.edges.flags.writeable
    assert lap.maximal_cliques(g, 9) == lap.maximal_cliques(g.edges, 9)
    assert graphs.num_nodes(g) == 9


def test_equal_edge_arrays_share_one_graph():
    e = graphs.square_grid(4, 5)
    g = graphs.as_graph(e)
    assert graphs.as_graph(e.copy()) is g and graphs.as_graph(e, 20) is not graphs.as_graph(e, 21)
    f = e.copy()
    f[-1, 1] = 19
    f[-1, 0] = 18
    assert graphs.as_graph(f) is g  # same content
    f[0, 1] = 2  # now (0, 2): a different graph
    assert graphs.as_graph(graphs.from_pairs(f)) is not g
    with pytest.raises(ValueError, match="n"):
        graphs.as_graph(e, 3)


def test_structure_record_for_the_kernels():
    """``graph.structure``: one cached record of read-only arrays (the CSR, the edges and
    the edge positions) that pickles and that the kernels read by field."""
    import pickle

    from mrflib.models import _graph_kernels

    g = graphs.as_graph(graphs.king_grid(3, 4))
    s = g.structure
    assert g.structure is s
    for name, want in [("indptr", g.csr.indptr), ("indices", g.csr.indices),
                       ("edge_ids", g.csr.edge_ids), ("edges", g.edges),
                       ("edge_pos", g.edge_pos)]:
        got = getattr(s, name)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == np.int64 and got.flags.c_contiguous and not got.flags.writeable
    back = pickle.loads(pickle.dumps(s))
    assert all(np.array_equal(getattr(back, f), getattr(s, f))
               for f in ("indptr", "indices", "edge_ids", "edges", "edge_pos"))
    assert not back.edges.flags.writeable  # read-only again after the round trip
    q_ptr, q_nodes = np.array([0, 2]), np.array([0, 5])
    a_ptr, a_nodes = _graph_kernels.one_neighbourhoods(back, q_ptr, q_nodes)
    np.testing.assert_array_equal(a_nodes, g.R_k([0, 5], 1))
    assert repr(s) == "Structure(n=12, edges=29)"
    with pytest.raises(ValueError, match="edges must have 2 dimension"):
        graphs.Structure(*[np.zeros(3, np.int64)] * 5)


def test_structure_kernels_load_from_the_disk_cache():
    """A fresh process finds the record-taking kernels in numba's on-disk cache."""
    import subprocess
    import sys

    graphs.R_k(graphs.square_grid(3, 3), 9, [4], 1)  # compiled (or loaded) and cached here
    code = ("from mrflib import graphs; from mrflib.models import _graph_kernels as k; "
            "graphs.R_k(graphs.square_grid(3, 3), 9, [4], 1); "
            "print(sum(k.one_neighbourhoods.stats.cache_hits.values()), "
            "sum(k.one_neighbourhoods.stats.cache_misses.values()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["1", "0"]
