import cProfile, pstats, time
import numpy as np
from mrflib import exact
from mrflib.models import lattices
m = lattices.potts_lattice(5, 5, 3, rng=5, couplings="mixed")
exact.marginals(m)
ts=[]
for _ in range(20):
    t=time.perf_counter(); exact.marginals(m); ts.append(time.perf_counter()-t)
print("best", min(ts), "median", np.median(ts))
cProfile.run("for _ in range(20): exact.marginals(m)", "/tmp/prof.out")
pstats.Stats("/tmp/prof.out").sort_stats("cumtime").print_stats(35)
