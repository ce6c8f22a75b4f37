import timeit, numpy as np
from mrflib import exact
from mrflib.inference import elimination, elimination_order as eo
from mrflib.models import lattices, precision
for name, m in [("potts5", lattices.potts_lattice(5, 5, 3, rng=5, couplings="mixed")),
                ("tri4", lattices.triangle_lattice(4, 4, rng=4))]:
    exact.marginals(m)
    adj = eo.interaction_graph(m.n, [s for s in m.scopes if s])
    f = lambda stmt: min(timeit.repeat(stmt, number=20, repeat=5, globals=dict(globals(), m=m, adj=adj)))/20*1e3
    print(name, "total %.2f" % f("exact.marginals(m)"),
          "plan %.2f" % f("elimination.EliminationPlan(m, check=False)"),
          "components %.3f" % f("eo.components(adj, range(m.n))"),
          "magnitude %.3f" % f("precision.magnitude(m.log_tables)"), "ms")
