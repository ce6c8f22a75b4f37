import numpy as np
import pytest

from mrflib import BoltzmannMachine, exact, graphs, sampling
from mrflib.inference.sampling import _spin_gibbs


def test_kernel_matches_python_reference(grid_bm):
    rng = np.random.default_rng(0)
    x0 = (2 * rng.integers(0, 2, size=(5, 9)) - 1).astype(np.int8)
    record = np.array([-1, 0, -1, 1], dtype=np.int64)
    a, b = x0.copy(), x0.copy()
    out_a = _spin_gibbs._run(grid_bm, a, 4, record, 2, np.random.default_rng(1))
    out_b = _spin_gibbs._run(grid_bm, b, 4, record, 2, np.random.default_rng(1),
                          kernel=_spin_gibbs._gibbs_reference)
    assert np.array_equal(a, b) and np.array_equal(out_a, out_b)


def test_serial_and_parallel_paths_agree(grid_bm):
    rng = np.random.default_rng(2)
    x0 = (2 * rng.integers(0, 2, size=(6, 9)) - 1).astype(np.int8)
    u = rng.random((5, 6, 9))
    record = np.arange(5, dtype=np.int64)
    indptr, indices, weights = grid_bm.adjacency()
    outs = []
    for use in (np.zeros(9, bool), np.ones(9, bool)):  # direct exp and tabulated fields
        off, tab = _spin_gibbs._field_tables(grid_bm.bias, indptr, weights, use)
        for kernel in (_spin_gibbs._gibbs_serial, _spin_gibbs._gibbs_parallel):
            x, out = x0.copy(), np.empty((5, 6, 9), dtype=np.int8)
            kernel(x, grid_bm.bias, indptr, indices, weights, off, tab, u, record, out)
            outs.append((x, out))
    for x, out in outs[1:]:
        assert np.array_equal(outs[0][0], x) and np.array_equal(outs[0][1], out)


def test_same_seed_same_bits(grid_bm):
    a = sampling.gibbs(grid_bm, 300, burn_in=10, thin=2, n_chains=7, rng=42)
    b = sampling.gibbs(grid_bm, 300, burn_in=10, thin=2, n_chains=7, rng=42)
    assert np.array_equal(a, b)
    c = sampling.gibbs(grid_bm, 300, burn_in=10, thin=2, n_chains=7, rng=43)
    assert not np.array_equal(a, c)


def test_gibbs_matches_exact_moments(dense_bm):
    x = sampling.gibbs(dense_bm, 40000, burn_in=30, rng=3)
    m, pair = exact.moments(dense_bm)
    m_hat, p_hat = exact.sufficient_statistics(x, dense_bm.edges)
    tol = 5 / np.sqrt(40000)
    assert np.abs(m_hat - m).max() < tol and np.abs(p_hat - pair).max() < tol


def test_single_long_chain_distribution(grid_bm):
    x = sampling.gibbs(grid_bm, 100000, burn_in=100, n_chains=1, rng=9)
    emp = exact.empirical_distribution(x)
    # total variation against the exact distribution (512 states, 1e5 correlated draws)
    assert 0.5 * np.abs(emp - exact.probabilities(grid_bm)).sum() < 0.05


def test_sweep_advances_copy_and_is_reproducible(grid_bm):
    s0 = np.ones((4, 9), dtype=np.int8)
    s1 = sampling.sweep(grid_bm, s0, 3, rng=1)
    assert np.all(s0 == 1)
    assert np.array_equal(s1, sampling.sweep(grid_bm, s0, 3, rng=1))
    assert np.array_equal(sampling.sweep(grid_bm, s0, 0, rng=1), s0)


def test_thinning_layout(grid_bm):
    x = sampling.gibbs(grid_bm, 10, burn_in=0, thin=3, n_chains=4, rng=0)
    assert x.shape == (10, 9) and x.dtype == np.int8


def test_strong_field_pins_spins():
    bm = BoltzmannMachine(np.full(5, 30.0), graphs.square_grid(1, 5), np.zeros(4))
    assert np.all(sampling.gibbs(bm, 50, burn_in=1, rng=0) == 1)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(burn_in=-1), "burn_in must be non-negative"),
        (dict(burn_in=1, thin=0), "thin must be positive"),
        (dict(burn_in=1, n_chains=20), "n_chains must be at most"),
        (dict(burn_in=1, n_chains=2, init=np.ones((3, 9))), "init must have n_chains"),
        (dict(burn_in=1, n_chains=2, init=np.zeros((2, 9))), "init must contain only spins"),
        (dict(burn_in=1, rng=None), "rng must be"),
    ],
)
def test_bad_input(grid_bm, kwargs, match):
    kwargs.setdefault("rng", 0)
    with pytest.raises(ValueError, match=match):
        sampling.gibbs(grid_bm, 10, **kwargs)


# ----------------------------------------------------------------------------- checkerboard
@pytest.fixture
def lattice_bm() -> BoltzmannMachine:
    """A 32x32 grid: bipartite and large enough for the checkerboard path."""
    return BoltzmannMachine.random(graphs.square_grid(32, 32), 1024, bias_scale=0.5,
                                   coupling_scale=0.6, rng=3)


def test_small_or_non_bipartite_graphs_keep_index_order(grid_bm, dense_bm):
    from mrflib.inference.sampling import _checkerboard

    assert not _checkerboard.applies(grid_bm) and not _checkerboard.applies(dense_bm)
    assert np.array_equal(sampling.sweep_order(grid_bm), np.arange(9))
    edges = np.vstack([graphs.square_grid(32, 32), [[0, 33]]])  # one triangle
    edges = edges[np.lexsort((edges[:, 1], edges[:, 0]))]
    tri = BoltzmannMachine.random(edges, 1024, rng=0)
    assert not _checkerboard.applies(tri)
    assert np.array_equal(sampling.sweep_order(tri), np.arange(1024))


def test_checkerboard_order(lattice_bm):
    order = sampling.sweep_order(lattice_bm)
    r, c = np.divmod(order, 32)
    colour = (r + c) % 2
    assert np.all(np.diff(colour) >= 0) and set(colour) == {0, 1}  # two contiguous blocks


def test_checkerboard_matches_python_reference(lattice_bm):
    from mrflib.inference.sampling import _checkerboard

    x0 = (2 * np.random.default_rng(0).integers(0, 2, size=(2, 1024)) - 1).astype(np.int8)
    record = np.array([0, -1, 1], dtype=np.int64)
    a, b = x0.copy(), x0.copy()
    out_a = _spin_gibbs._run(lattice_bm, a, 3, record, 2, np.random.default_rng(1))
    out_b = _checkerboard.run(lattice_bm, b, 3, record, 2, np.random.default_rng(1),
                              kernel=_checkerboard._gibbs_reference)
    assert np.array_equal(a, b) and np.array_equal(out_a, out_b)


def test_checkerboard_paths_agree(lattice_bm):
    """Same bits whatever the thread count and whether thresholds are tabulated."""
    from mrflib.inference.sampling import _checkerboard as cb

    n = 1024
    x0 = (2 * np.random.default_rng(2).integers(0, 2, size=(3, n)) - 1).astype(np.int8)
    record = np.arange(4, dtype=np.int64)
    order, ptr, nbr, eids, _ = cb.layout(lattice_bm)
    bias = np.ascontiguousarray(lattice_bm.bias[order])
    weights = np.ascontiguousarray(lattice_bm.coupling[eids])
    outs = []
    for use in (np.zeros(n, bool), np.ones(n, bool), np.arange(n) % 2 == 0):
        off, thr = cb._threshold_tables(bias, ptr, weights, use)
        for table_only in {False, bool(use.all())}:
            for kernel in (cb._gibbs_serial, cb._gibbs_parallel):
                x = np.ascontiguousarray(x0[:, order] > 0, dtype=np.uint8)
                out = np.empty((4, 3, n), dtype=np.int8)
                state = np.arange(3, dtype=np.uint64)
                kernel(table_only, x, ptr, nbr, weights, bias, off, thr, state, record, order,
                       out)
                outs.append((x, out, state))
    for x, out, state in outs[1:]:
        assert np.array_equal(outs[0][0], x) and np.array_equal(outs[0][1], out)
        assert np.array_equal(outs[0][2], state)


def test_checkerboard_same_seed_same_bits_and_moments(lattice_bm):
    a = sampling.gibbs(lattice_bm, 400, burn_in=20, n_chains=4, rng=7)
    assert np.array_equal(a, sampling.gibbs(lattice_bm, 400, burn_in=20, n_chains=4, rng=7))
    # a weakly coupled chain of independent spins: mean tanh(b) (couplings set to zero)
    free = BoltzmannMachine(lattice_bm.bias, lattice_bm.edges, np.zeros(len(lattice_bm.edges)))
    x = sampling.gibbs(free, 2000, burn_in=2, n_chains=50, rng=8)
    assert np.abs(x.mean(0) - np.tanh(lattice_bm.bias)).max() < 6 / np.sqrt(2000)


def test_checkerboard_extreme_fields_exact():
    bias = np.where(np.arange(1024) % 2 == 0, -1e3, 1e3)
    bm = BoltzmannMachine(bias, graphs.square_grid(32, 32), np.full(1984, 0.5))
    x = sampling.gibbs(bm, 20, burn_in=2, rng=5)
    assert np.all(x == np.sign(bias).astype(np.int8))


# ----------------------------------------------------------------- square-grid kernel
GRID_SHAPES = [(32, 32), (33, 33), (31, 40), (45, 23), (2, 512), (1024, 1)]


def _grid_model(rows, cols, seed=0):
    return BoltzmannMachine.random(graphs.square_grid(rows, cols), rows * cols,
                                   bias_scale=0.5, coupling_scale=0.8, rng=seed)


@pytest.mark.parametrize("rows, cols", GRID_SHAPES)
def test_grid_kernel_matches_general_kernel(rows, cols):
    """The square-grid kernel gives the bits of the general checkerboard kernel (odd and
    even sides, paths), records included, serial and parallel."""
    from mrflib.inference.sampling import _checkerboard as cb
    from mrflib.inference.sampling import _grid_gibbs as gg

    bm = _grid_model(rows, cols)
    assert bm.graph.grid_shape() == (rows, cols)
    n = rows * cols
    x0 = (2 * np.random.default_rng(1).integers(0, 2, size=(3, n)) - 1).astype(np.int8)
    record = np.full(25, -1, dtype=np.int64)
    record[[0, 7, 24]] = [0, 1, 2]
    runs = []
    for kernel in (None, cb._gibbs_serial, cb._gibbs_parallel):
        x = x0.copy()
        out = cb.run(bm, x, 25, record, 3, np.random.default_rng(5), kernel=kernel)
        runs.append((x, out))
    layout = cb.layout(bm)
    bias, weights = cb._sweep_params(bm, layout[0], layout[3])
    thr = gg.grid_tables(bias, layout[1], layout[2], weights, layout[0], cols)
    for parallel in (False, True):
        x = x0.copy()
        state = np.random.default_rng(5).integers(0, 2**64, size=3, dtype=np.uint64)
        runs.append((x, gg.run_grid(x, bm.graph, thr, state, record, 3, parallel)))
    for x, out in runs[1:]:
        assert np.array_equal(runs[0][0], x) and np.array_equal(runs[0][1], out)
    assert not np.array_equal(runs[0][0], x0)


def test_grid_kernel_matches_python_reference():
    """Against the plain-Python twin (direct fields, same random bits) on an odd grid."""
    from mrflib.inference.sampling import _checkerboard as cb

    bm = _grid_model(33, 33, seed=4)
    x0 = (2 * np.random.default_rng(0).integers(0, 2, size=(2, bm.n)) - 1).astype(np.int8)
    record = np.full(32, -1, dtype=np.int64)
    record[[3, 31]] = [0, 1]
    a, b = x0.copy(), x0.copy()
    out_a = _spin_gibbs._run(bm, a, 32, record, 2, np.random.default_rng(1))
    out_b = cb.run(bm, b, 32, record, 2, np.random.default_rng(1), kernel=cb._gibbs_reference)
    assert np.array_equal(a, b) and np.array_equal(out_a, out_b)


def test_threshold_tables_are_cached_per_parameters(monkeypatch):
    """Repeated calls on one model reuse its tables (small calls then take the grid
    kernel too); a model with other parameters on the same graph never sees them."""
    from mrflib.inference.sampling import _checkerboard as cb
    from mrflib.inference.sampling import _grid_gibbs as gg

    bm = _grid_model(32, 32, seed=1)
    other = BoltzmannMachine(bm.bias + 0.25, bm.graph, bm.coupling)
    calls = []
    real = gg.run_grid
    monkeypatch.setattr(gg, "run_grid", lambda *a: calls.append(1) or real(*a))
    x0 = np.ones((1, bm.n), dtype=np.int8)

    def general(model, sweeps):
        x = x0.copy()
        cb.run(model, x, sweeps, np.full(sweeps, -1, dtype=np.int64), 0,
               np.random.default_rng(3), kernel=cb._gibbs_serial)
        return x

    assert np.array_equal(sampling.sweep(bm, x0, 2, rng=3), general(bm, 2))  # no tables yet
    assert calls == []
    assert np.array_equal(sampling.sweep(bm, x0, 100, rng=3), general(bm, 100))  # builds them
    assert np.array_equal(sampling.sweep(bm, x0, 2, rng=3), general(bm, 2))  # reuses them
    assert len(calls) == 2
    for sweeps in (2, 100):  # the small call finds bm's tables only: general kernel
        assert np.array_equal(sampling.sweep(other, x0, sweeps, rng=3), general(other, sweeps))
    assert len(calls) == 3


def _relabelled_grid():
    perm = np.random.default_rng(0).permutation(1024)
    return graphs.from_pairs(perm[graphs.square_grid(32, 32)])


@pytest.mark.parametrize("edges", [
    graphs.cubic(11), graphs.chimera(8, 8, 8), np.delete(graphs.square_grid(32, 32), 5, axis=0),
    _relabelled_grid()], ids=["cubic", "chimera", "grid-minus-edge", "relabelled-grid"])
def test_grid_kernel_only_for_square_grids(edges):
    """Other bipartite graphs keep the general kernel (same bits either way)."""
    from mrflib.inference.sampling import _checkerboard as cb

    bm = BoltzmannMachine.random(edges, int(edges.max()) + 1, rng=0)
    assert cb.applies(bm) and bm.graph.grid_shape() is None


def test_large_threshold_tables_are_not_kept(monkeypatch):
    from mrflib.inference.sampling import _checkerboard as cb

    bm = _grid_model(32, 32, seed=2)
    x0 = np.ones((1, bm.n), dtype=np.int8)
    monkeypatch.setattr(cb, "KEEP_TABLE_BYTES", 1000)
    a = sampling.sweep(bm, x0, 100, rng=3)
    assert "grid" not in bm.graph.memo("checkerboard-tables", dict)
    monkeypatch.undo()
    assert np.array_equal(a, sampling.sweep(bm, x0, 100, rng=3))
    assert "grid" in bm.graph.memo("checkerboard-tables", dict)


@pytest.mark.parametrize("scale", [0.8, 30.0])
def test_grid_tables_equal_general_tables(scale):
    """Every canonical threshold equals the general table's entry for the same neighbour
    spins, bit for bit (moderate and saturating fields: thresholds 0 and 2^32 occur)."""
    from mrflib.inference.sampling import _checkerboard as cb
    from mrflib.inference.sampling import _grid_gibbs as gg

    rows, cols = 33, 35
    bm = BoltzmannMachine.random(graphs.square_grid(rows, cols), rows * cols,
                                 bias_scale=scale, coupling_scale=scale, rng=6)
    order, ptr, nbr, eids, _ = cb.layout(bm)
    bias, weights = cb._sweep_params(bm, order, eids)
    off, thr = cb._threshold_tables(bias, ptr, weights, np.ones(bm.n, bool))
    canon = gg.grid_tables(bias, ptr, nbr, weights, order, cols)
    slot = {-cols: 0, -1: 1, 1: 2, cols: 3}
    for a in range(bm.n):
        s = [slot[order[j] - order[a]] for j in nbr[ptr[a]:ptr[a + 1]]]
        for cfg in range(2 ** len(s)):
            c = sum(((cfg >> q) & 1) << s[q] for q in range(len(s)))
            assert canon[16 * a + c] == thr[off[a] + cfg]
    if scale > 1:
        assert {0, 2**32} <= set(canon.tolist())


@pytest.mark.parametrize("name, kwargs", [
    ("sweep", dict(states=-np.ones((2, 4), dtype=np.int8), n_sweeps=2, rng=0)),
    ("sweep_order", {}),
], ids=["sweep", "sweep_order"])
def test_model_argument_is_model_and_bm_still_works_with_a_warning(name, kwargs):
    import warnings

    bm = BoltzmannMachine.random(graphs.square_grid(2, 2), 4, rng=1)
    fn = getattr(sampling, name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        want = fn(model=bm, **kwargs)
    with pytest.warns(FutureWarning, match=rf"{name}\(bm=\.\.\.\)"):
        got = fn(bm=bm, **kwargs)
    np.testing.assert_array_equal(got, want)


def test_evidence_clamps_spins_and_samples_the_conditional():
    bm = BoltzmannMachine.random(graphs.square_grid(3, 3), 9, 0.5, 0.5, rng=0)
    ev = {0: 1, 4: -1}
    s = sampling.gibbs(bm, 20000, burn_in=20, n_chains=200, evidence=ev, rng=1)
    assert s.dtype == np.int8 and np.all(s[:, 0] == 1) and np.all(s[:, 4] == -1)
    exact_p = np.array([m[1] for m in exact.marginals(bm, evidence=ev)])
    # 200 chains, 100 draws each: a few standard errors of 0.5 / sqrt(20000) and more
    np.testing.assert_allclose((s == 1).mean(0), exact_p, atol=0.02)
    again = sampling.gibbs(bm, 20000, burn_in=20, n_chains=200, evidence=ev, rng=1)
    assert np.array_equal(s, again)


def test_evidence_on_every_spin_and_bad_evidence():
    bm = BoltzmannMachine.random(graphs.square_grid(2, 2), 4, rng=0)
    s = sampling.gibbs(bm, 3, burn_in=1, evidence={0: 1, 1: -1, 2: 1, 3: 1}, rng=0)
    assert np.array_equal(s, np.tile(np.array([1, -1, 1, 1], dtype=np.int8), (3, 1)))
    with pytest.raises(ValueError, match="spins -1 or \\+1"):
        sampling.gibbs(bm, 3, burn_in=1, evidence={0: 0}, rng=0)
    with pytest.raises(ValueError, match="evidence must contain nodes"):
        sampling.gibbs(bm, 3, burn_in=1, evidence={7: 1}, rng=0)
    with pytest.raises(ValueError, match="evidence must be a mapping"):
        sampling.gibbs(bm, 3, burn_in=1, evidence=[(0, 1)], rng=0)


def test_a_factor_graphs_evidence_goes_to_its_chains():
    from mrflib.inference.sampling import chains
    from mrflib.models.lattices import potts_lattice

    fg = potts_lattice(3, 3, 3, rng=0)
    a = sampling.gibbs(fg, 50, burn_in=5, evidence={4: 2}, rng=3)
    b = chains.gibbs(fg, 50, burn_in=5, evidence={4: 2}, rng=3)
    assert np.array_equal(a, b) and np.all(a[:, 4] == 2)
