"""Exact inference beyond one junction tree's memory: PR's upward-only memory, plans that
do not fit, domain reduction by the tables' zeros, and slicing, against enumeration."""

import math

import numpy as np
import pytest

from mrflib import FactorGraph, exact, graphs
from mrflib.inference.exact import elimination, sliced
from mrflib.inference.exact import enumeration as fe
from mrflib.inference.exact.domains import _reduce_domains_reference, reduce_domains

TOL = 1e-9


def random_model(seed, n=9, n_factors=14, zeros=0.3):
    rng = np.random.default_rng(seed)
    card = rng.integers(2, 4, n)
    scopes, tables = [], []
    for _ in range(n_factors):
        s = tuple(rng.choice(n, size=3, replace=False).tolist())
        t = rng.normal(size=tuple(card[v] for v in s))
        t[rng.random(t.shape) < zeros] = -np.inf
        scopes.append(s)
        tables.append(t)
    model = FactorGraph(card, scopes, tables)
    return model.condition({0: 0}) if seed % 2 else model


def deterministic_chain(n=6):
    """x_{i+1} = x_i or x_i + 1 (mod 4), x_0 in {0, 1}: many states can never occur."""
    scopes, tables = [(0,)], [np.array([math.log(0.5)] * 2 + [-np.inf] * 2)]
    for i in range(n - 1):
        t = np.full((4, 4), -np.inf)
        for a in range(4):
            t[a, a] = math.log(0.7)
            if a < 3:
                t[a, a + 1] = math.log(0.3)
        scopes.append((i, i + 1))
        tables.append(t)
    return FactorGraph(np.full(n, 4), scopes, tables)


def assert_answers(model, **kw):
    logz = fe.log_partition(model)
    assert sliced.log_partition(model, **kw) == pytest.approx(logz, abs=TOL)
    if logz == -np.inf:
        return
    for got, want in zip(sliced.marginals(model, **kw), fe.marginals(model)):
        np.testing.assert_allclose(got, want, atol=TOL)
    x, best = sliced.map_assignment(model, **kw)
    assert best == pytest.approx(fe.map_assignment(model)[1], abs=TOL)
    assert model.log_weight(x) == pytest.approx(best, abs=TOL)


# --------------------------------------------------------------------------- PR's memory
def test_upward_pass_that_frees_messages_gives_the_same_log_partition():
    model = random_model(3)
    jt = elimination.plan(model, barren=True)
    assert jt.upward(keep=False)[0] == jt.upward()[0]
    assert jt.memory_bytes(upward_only=True) <= jt.memory_bytes(upward_only=False)


def test_upward_peak_counts_the_messages_alive():
    # a chain: each message is used by the next step, so one or two are alive at a time
    shapes = [(2, 2)] * 4 + [(2,)]
    children = [[], [0], [1], [2], [3]]
    assert elimination.upward_peak_bytes(shapes, children) == 8 * (2 + 2 + 4 * 4)


def test_log_partition_of_a_grid_plans_for_one_upward_pass():
    edges = graphs.square_grid(24, 24)
    model = FactorGraph(np.full(576, 2), [tuple(e) for e in edges.tolist()],
                        [np.zeros((2, 2))] * len(edges))
    p = elimination.plan(model, barren=True, check=False, upward_only=True)
    calibrate = elimination.plan(model, check=False)
    assert p.treewidth == calibrate.treewidth == 24
    # all tables: about 22 GiB; one upward pass: about 5 largest tables (256 MiB each)
    assert calibrate.total_bytes > 20 * 2**30
    assert p.memory_bytes() < 6 * p.max_table_bytes


# --------------------------------------------------------------------------- plans
def test_plan_that_does_not_fit_is_returned_with_its_sizes():
    edges = graphs.square_grid(18, 18)
    model = FactorGraph(np.full(324, 4), [tuple(e) for e in edges.tolist()],
                        [np.zeros((4, 4))] * len(edges))
    p = exact.plan(model)
    assert not p.fits and p.order is not None and p.treewidth >= 18
    assert p.max_table_bytes >= 8 * 4.0**18 and "fits=False" in repr(p)
    with pytest.raises(ValueError, match="would need"):
        elimination.plan(model)


def test_plan_beyond_the_search_limit_reports_a_lower_bound():
    edges = graphs.square_grid(30, 30)
    model = FactorGraph(np.full(900, 10), [tuple(e) for e in edges.tolist()],
                        [np.zeros((10, 10))] * len(edges))
    p = exact.plan(model)
    assert not p.fits and p.order is None and p.treewidth is None
    assert p.treewidth_lower_bound == 29 and p.max_table_bytes > 2.0**48
    with pytest.raises(ValueError, match=r"treewidth >= 29"):
        sliced.log_partition(model)


# --------------------------------------------------------------------------- domains
def test_domains_remove_the_states_that_cannot_occur():
    model = deterministic_chain()
    dom = reduce_domains(model)
    assert [k.tolist() for k in dom.kept] == [[0, 1], [0, 1, 2], [0, 1, 2, 3],
                                              [0, 1, 2, 3], [0, 1, 2, 3], [0, 1, 2, 3]]
    assert dom.removed == 3
    assert fe.log_partition(dom.model) == pytest.approx(fe.log_partition(model), abs=TOL)
    full = fe.marginals(model)
    for v, p in enumerate(fe.marginals(dom.model)):
        np.testing.assert_allclose(dom.expand(v, p), full[v], atol=TOL)


def test_domains_propagate_evidence_through_deterministic_tables():
    model = deterministic_chain().condition({5: 0})  # then every x_i = 0
    dom = reduce_domains(model)
    assert all(k.tolist() == [0] for k in dom.kept)
    assert fe.log_partition(dom.model) == pytest.approx(fe.log_partition(model), abs=TOL)


def test_empty_domain_means_zero_partition_function():
    model = deterministic_chain().condition({0: 3})
    assert reduce_domains(model).empty
    assert sliced.log_partition(model) == -np.inf
    with pytest.raises(ValueError, match="Z = 0"):
        sliced.marginals(model)


@pytest.mark.parametrize("seed", range(6))
def test_domain_reduced_answers_equal_enumeration(seed):
    model = random_model(seed, zeros=0.6)
    dom = reduce_domains(model)
    if dom.empty:
        assert fe.log_partition(model) == -np.inf
        return
    assert fe.log_partition(dom.model) == pytest.approx(fe.log_partition(model), abs=TOL)
    full = fe.factor_marginals(model)
    for k, p in enumerate(fe.factor_marginals(dom.model)):
        np.testing.assert_allclose(dom.expand_table(model.scopes[k], p), full[k], atol=TOL)


# --------------------------------------------------------------------------- slicing
@pytest.mark.parametrize("seed", range(4))
def test_sliced_answers_equal_enumeration(seed):
    lines = []
    assert_answers(random_model(seed), memory=1000, progress=lines.append)
    if fe.log_partition(random_model(seed)) > -np.inf:
        assert any("slice" in s for s in lines)


def test_slicing_reports_each_slice_and_the_estimate():
    lines = []
    sliced.log_partition(random_model(4), memory=300, progress=lines.append)
    assert "does not fit" in lines[0] and "sliced over" in lines[1]
    count = int(lines[1].split("(")[2].split(" slices")[0])
    assert sum(s.startswith("slice ") for s in lines) == count


def test_deterministic_model_in_slices_equals_enumeration():
    assert_answers(deterministic_chain(7), memory=200)


def test_sliced_work_beyond_the_time_limit_is_refused_with_its_estimate():
    with pytest.raises(ValueError, match=r"would take about \d+ s, beyond the limit of"):
        sliced.log_partition(random_model(4), memory=300, time_limit=1e-12)


def test_models_that_fit_give_the_engines_own_answers():
    model = random_model(6)
    assert sliced.log_partition(model) == elimination.log_partition(model)
    for a, b in zip(sliced.marginals(model), elimination.marginals(model)):
        np.testing.assert_array_equal(a, b)
    assert exact.log_partition(model, method="junction-tree") == \
        elimination.log_partition(model)


def test_bad_arguments_are_refused():
    model = random_model(1)
    with pytest.raises(ValueError, match="task"):
        sliced.solve(model, "MAP")
    with pytest.raises(ValueError, match="time_limit"):
        sliced.solve(model, "PR", time_limit=0)
    with pytest.raises(ValueError, match="memory"):
        sliced.solve(model, "PR", memory=-1)
    for seed in (-1, 1.5, "0", True):
        with pytest.raises(ValueError, match="anneal must be"):
            elimination.plan(model, anneal=seed)
        with pytest.raises(ValueError, match="anneal must be"):
            sliced.solve(model, "PR", anneal=seed)


# --------------------------------------------------------------------------- reduced plans
def copy_chain(n):
    """x_0 in {0, 1} and x_{i+1} = x_i, 4 states each: every clique keeps 2 of 4 states
    per variable."""
    rng = np.random.default_rng(n)
    scopes, tables = [(0,)], [np.array([0.3, -0.2, -np.inf, -np.inf])]
    for i in range(n - 1):
        t = np.full((4, 4), -np.inf)
        t[np.arange(4), np.arange(4)] = rng.normal(size=4)
        scopes.append((i, i + 1))
        tables.append(t)
    return FactorGraph(np.full(n, 4), scopes, tables)


@pytest.mark.parametrize("seed", range(4))
def test_plans_that_fit_run_on_reduced_domains_when_it_pays(seed, monkeypatch):
    """With the threshold at zero every fitting plan whose domains shrink is replanned on
    them: the answers still equal enumeration, and removed states get probability 0."""
    monkeypatch.setattr(sliced, "REDUCE_ABOVE", 0)
    model = copy_chain(5 + seed) if seed < 2 else random_model(seed, zeros=0.5)
    jt = sliced._plan(model, "MAR")
    assert jt.fits
    dom = reduce_domains(model)
    smaller = sliced._reduced_plan(model, jt, "MAR", None)
    if seed < 2:  # the chain's cliques lose three quarters of their states
        assert smaller is not None and smaller[1].total_bytes < jt.total_bytes
    assert_answers(model)
    if not dom.empty:
        for v, p in enumerate(sliced.marginals(model)):
            gone = np.setdiff1d(np.arange(model.cardinalities[v]), dom.kept[v])
            assert np.all(p[gone] == 0.0)


def test_reduction_is_left_out_where_it_cannot_pay(monkeypatch):
    """Small plans (below the threshold) and MPE (whose ties keep their state) keep the
    plain plan; so do domains whose removed states do not shrink the cliques enough."""
    model = copy_chain(7)
    jt = sliced._plan(model, "MAR")
    assert sliced._reduced_plan(model, jt, "MAR", None) is None  # default threshold
    monkeypatch.setattr(sliced, "REDUCE_ABOVE", 0)
    assert sliced._reduced_plan(model, jt, "MAR", None) is not None
    assert sliced._reduced_plan(model, jt, "MPE", None) is None
    # one state of four 3-state variables in a chain removed: the cliques keep 9/10
    chain = FactorGraph([3] * 4, [(0,), (0, 1), (1, 2), (2, 3)],
                        [np.array([0.0, 0.0, -np.inf]), *(np.zeros((3, 3)),) * 3])
    assert reduce_domains(chain).removed == 1
    assert sliced._reduced_plan(chain, sliced._plan(chain, "MAR"), "MAR", None) is None


def test_reduction_is_left_out_for_a_state_list_longer_than_the_tables(monkeypatch):
    """A variable of 10^12 states in no factor: listing its states would cost more than
    the tables, so log Z comes from the plain plan, without allocating them."""
    monkeypatch.setattr(sliced, "REDUCE_ABOVE", 0)
    model = FactorGraph([3, 3, 10**12], [(0, 1)],
                        [np.array([[0.0, -np.inf, 1.0]] * 3)])
    jt = sliced._plan(model, "PR")
    assert sliced._reduced_plan(model, jt, "PR", None) is None
    assert sliced.log_partition(model) == pytest.approx(
        math.log(3 * (1 + math.e)) + 12 * math.log(10))


def _mixed_arity_model(seed):
    """Factors of arity 0 to 4 with many zeros (some rows all zero), unary evidence."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 12))
    card = rng.integers(1, 5, n)
    scopes, tables = [], []
    for _ in range(int(rng.integers(1, 3 * n))):
        s = tuple(rng.choice(n, size=int(rng.integers(0, min(n, 4) + 1)),
                             replace=False).tolist())
        t = rng.normal(size=tuple(card[v] for v in s))
        t[rng.random(t.shape) < rng.uniform(0.0, 0.9)] = -np.inf
        if not s and seed % 5:
            t = np.array(0.5)  # a constant zero factor only now and then
        scopes.append(s)
        tables.append(t)
    return FactorGraph(card, scopes, tables)


@pytest.mark.parametrize("seed", range(60))
def test_compiled_domain_reduction_equals_the_numpy_loop(seed):
    """The compiled arc consistency keeps the states the numpy loop keeps, stops at the
    same variable when ``Z = 0``, and restricts the tables alike."""
    model = _mixed_arity_model(seed)
    got, want = reduce_domains(model), _reduce_domains_reference(model)
    assert got.empty == want.empty and got.removed == want.removed
    assert [k.tolist() for k in got.kept] == [k.tolist() for k in want.kept]
    if not got.empty:
        assert got.model.scopes == want.model.scopes
        for a, b in zip(got.model.log_tables, want.model.log_tables):
            np.testing.assert_array_equal(a, b)
        assert fe.log_partition(got.model) == pytest.approx(fe.log_partition(model), abs=TOL)
    else:
        assert fe.log_partition(model) == -np.inf


def test_domain_reduction_of_a_model_without_factors_keeps_every_state():
    dom = reduce_domains(FactorGraph([2, 3], [], []))
    assert [k.tolist() for k in dom.kept] == [[0, 1], [0, 1, 2]] and dom.removed == 0


def test_domain_reduction_of_a_huge_state_list_is_refused_before_allocation():
    """10^12 states of a variable in no factor would need 9 TB of state lists: the
    reduction refuses by name instead of allocating them."""
    model = FactorGraph([3, 3, 10**12], [(0, 1)], [np.array([[0.0, -np.inf, 1.0]] * 3)])
    with pytest.raises(ValueError, match="state lists of 3 variables would need"):
        reduce_domains(model)


def test_plan_that_does_not_fit_slices_a_model_without_zeros_unreduced(monkeypatch):
    """Without a zero entry no state can be removed: the slicing path skips reducing the
    whole model (and its state lists; each slice, whose evidence is a zero, is still
    reduced) and still equals enumeration."""
    seen = []

    def recorded(m):
        seen.append(m)
        return reduce_domains(m)

    monkeypatch.setattr(sliced, "reduce_domains", recorded)
    model = random_model(2, zeros=0.0)
    lines = []
    assert sliced.log_partition(model, memory=300, progress=lines.append) == pytest.approx(
        fe.log_partition(model), abs=TOL)
    assert "does not fit" in lines[0]
    assert seen and all(m is not model for m in seen)


def test_slices_beyond_the_bound_are_counted_on_their_reduced_domains(monkeypatch):
    # one second per entry: the estimates in the lines are entries
    monkeypatch.setattr(sliced, "SECONDS_PER_ENTRY", {"PR": 1.0, "MAR": 1.0, "MPE": 1.0})
    model = deterministic_chain(9)
    lines = []
    got = sliced.log_partition(model, memory=200, time_limit=600, progress=lines.append)
    assert got == pytest.approx(fe.log_partition(model), abs=TOL)
    bound = next(s for s in lines if "counting each slice" in s)
    counted = next(s for s in lines if "on the slices' reduced domains: about" in s)
    entries = float(counted.split("about ")[1].split(" s")[0])
    assert entries <= 600 < float(bound.split("at most ")[1].split(" s")[0])
    # each slice's own plan, summed: the work the slices then do
    dom = reduce_domains(model)
    jt = elimination.EliminationPlan(dom.model, barren=True, check=False, upward_only=True,
                                     memory=200)
    chosen = sliced.choose_slices(jt, "PR", 200)[0]
    assert sliced._scanned_entries(dom.model, jt, "PR", chosen) == entries
    for got, want in zip(sliced.marginals(model, memory=300, time_limit=600),
                         fe.marginals(model)):
        np.testing.assert_allclose(got, want, atol=TOL)
    # without counting, the bound refuses
    monkeypatch.setattr(sliced, "MAX_SCANNED", 0)
    with pytest.raises(ValueError, match="beyond the limit"):
        sliced.log_partition(model, memory=200, time_limit=600)


def _bad_order_first(monkeypatch, anneal_order=None):
    """``sliced._plan`` with the searched plan on a poor order (the reverse of the greedy
    one) and the annealed plan on the greedy order (or ``anneal_order``): the seeds asked."""
    real = sliced._plan
    asked = []

    def plan(m, task, order=None, check=False, memory=None, anneal=None, give_up=None):
        if order is not None:
            return real(m, task, order, check, memory)
        good = real(m, task)
        if anneal is None:
            return real(m, task, good.order[::-1], check, memory)
        asked.append(anneal)
        return real(m, task, anneal_order or good.order, check, memory)

    monkeypatch.setattr(sliced, "_plan", plan)
    return asked


def test_refused_slices_fall_back_to_the_annealed_order(monkeypatch):
    model = random_model(2, zeros=0.0)
    asked = _bad_order_first(monkeypatch)
    lines = []
    # the poor order does not fit in 5,000 bytes and its slices are refused; the other fits
    got = sliced.log_partition(model, memory=5000, time_limit=1e-12, progress=lines.append)
    assert got == pytest.approx(fe.log_partition(model), abs=TOL)
    assert asked == [sliced.ANNEAL_SEED]
    assert any("beyond the limit" in s and "trying an annealed contraction tree" in s
               for s in lines)
    assert_answers(model, memory=5000, time_limit=1e-12)


def test_annealed_order_is_sliced_or_refused_with_both_reasons(monkeypatch):
    model = random_model(2, zeros=0.0)
    _bad_order_first(monkeypatch)
    # one second per entry: in 1,000 bytes the poor order's slices hold 1,224 entries,
    # the greedy order's 208; neither order fits whole
    monkeypatch.setattr(sliced, "SECONDS_PER_ENTRY", {"PR": 1.0, "MAR": 1.0, "MPE": 1.0})
    monkeypatch.setattr(sliced, "MAX_SCANNED", 0)
    lines = []
    assert sliced.log_partition(model, memory=1000, time_limit=500,
                                progress=lines.append) == pytest.approx(
        fe.log_partition(model), abs=TOL)
    assert "would take about 1224 s" in lines[1] and "about 208 s" in lines[2]
    assert sum(s.startswith("slice ") for s in lines) == 4
    with pytest.raises(ValueError, match="about 1224 s, beyond the limit .*; on the "
                                         "annealed order: .*about 208 s, beyond the limit"):
        sliced.log_partition(model, memory=1000, time_limit=100)


def test_slices_refused_when_annealing_finds_no_other_order():
    # a small model's greedy order fits the search's limit: no search, so no annealing
    with pytest.raises(ValueError, match="beyond the limit .*; annealing gave no other "
                                         "order"):
        sliced.log_partition(random_model(4), memory=300, time_limit=1e-12)


RENAMED = [
    ("give_up", lambda fn, model, **kw: fn(model, "MAR", **kw)),
    ("solve", lambda fn, model, **kw: fn(model, "PR", **kw)[0]),
    ("log_partition", lambda fn, model, **kw: fn(model, **kw)),
    ("marginals", lambda fn, model, **kw: fn(model, **kw)),
    ("map_assignment", lambda fn, model, **kw: fn(model, **kw)[0]),
]


@pytest.mark.parametrize("name,call", RENAMED, ids=[r[0] for r in RENAMED])
def test_time_budget_is_time_limit(name, call):
    """The time budget is ``time_limit=``, as in the rest of the library; the old
    ``max_seconds=`` gives the same answer with a FutureWarning naming the new call."""
    model = random_model(2, n=5, n_factors=5, zeros=0.0)
    fn = getattr(sliced, name)
    want = call(fn, model)
    got = call(fn, model, time_limit=sliced.MAX_SECONDS)
    with pytest.warns(FutureWarning, match=rf"{name}\(time_limit=\.\.\.\)"):
        old = call(fn, model, max_seconds=sliced.MAX_SECONDS)
    flat = lambda x: np.concatenate([np.ravel(v) for v in x]) if isinstance(x, list) else x  # noqa: E731
    np.testing.assert_array_equal(flat(got), flat(want))
    np.testing.assert_array_equal(flat(old), flat(want))
