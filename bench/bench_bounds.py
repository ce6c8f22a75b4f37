"""Ninth-order lower bound on log Z, partition graphs against enumeration.

* ``bounds.log_partition_lower_bound(bm, 9)`` for an SK network with N = 14 by the
  partition-graph expansion (section 4, polynomial in N) against exact enumeration of the
  2^N states of eq. (16), in the same run.
* Scaling in N: graphs up to N = 200 (quick: up to 20), enumeration up to N = 24
  (quick: 16); the note of the largest graph case gives the fitted exponent of the time
  (the paper: O(N^4) for the ninth order).

The mean-field solution is computed once per network, outside the timing; the graphs are
generated (or loaded from the cache) and their elimination plans built in the warm-up.
"""

from __future__ import annotations

import math
import time

import numpy as np

from mrflib import bounds
from mrflib.repro.experiments import best_time

ORDER = 9


def _timed_once(fn, *args, **kwargs) -> float:
    t0 = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - t0


def run(quick: bool = False) -> list[dict]:
    rows: list[dict] = []
    rng = np.random.default_rng(0)

    def model(N):
        bm = bounds.sk_model(N, 1.0, rng=rng)
        return bm, bounds.mean_field_solution(bm, rng=0)

    # --- N = 14, both methods in the same run
    bm, m = model(14)
    t_g = best_time(bounds.log_partition_lower_bound, bm, ORDER, m=m, method="graphs",
                    repeat=2 if quick else 5)
    t_e = best_time(bounds.log_partition_lower_bound, bm, ORDER, m=m, method="enumerate",
                    repeat=2 if quick else 5)
    vg = bounds.log_partition_lower_bound(bm, ORDER, m=m, method="graphs")
    ve = bounds.log_partition_lower_bound(bm, ORDER, m=m, method="enumerate")
    assert math.isclose(vg, ve, rel_tol=1e-10)
    case = "N=14 SK (sigma_w=1), order 9"
    rows.append(dict(benchmark="bounds.order9", case=case, method="graphs", seconds=t_g,
                     baseline="enumerate", ratio=t_e / t_g, rate=np.nan, rate_unit="",
                     note=f"enumerate {t_e:.4f} s; equal to rel 1e-10"))
    rows.append(dict(benchmark="bounds.order9", case=case, method="enumerate", seconds=t_e,
                     baseline="", ratio=np.nan, rate=2**14 / t_e, rate_unit="states/s",
                     note="all 2^N states of eq. (16)"))

    # --- scaling in N
    graph_N = [14, 20] if quick else [14, 25, 50, 100, 150, 200]
    enum_N = [14, 16] if quick else [14, 18, 20, 22, 24]
    times: dict[str, dict[int, float]] = {"graphs": {}, "enumerate": {}}
    for method, Ns in (("graphs", graph_N), ("enumerate", enum_N)):
        for N in Ns:
            bm, m = model(N)
            if N <= 50:
                t = best_time(bounds.log_partition_lower_bound, bm, ORDER, m=m, method=method,
                              repeat=1 if quick else 3)
            else:  # plans are cached by the warm-up above; one call is minutes at N = 200
                t = _timed_once(bounds.log_partition_lower_bound, bm, ORDER, m=m,
                                method=method)
            times[method][N] = t
    for method, Ns in (("graphs", graph_N), ("enumerate", enum_N)):
        for k, N in enumerate(Ns):
            note = ""
            if k > 0:
                N0 = Ns[k - 1]
                if method == "graphs":
                    slope = math.log(times[method][N] / times[method][N0]) / math.log(N / N0)
                    note = f"time ~ N^{slope:.2f} between N={N0} and N={N}"
                else:
                    note = f"x{times[method][N] / times[method][N0]:.1f} from N={N0}"
            other = "enumerate" if method == "graphs" else "graphs"
            same = times[other].get(N)
            rows.append(dict(
                benchmark="bounds.order9.scaling", case=f"N={N} SK, order 9", method=method,
                seconds=times[method][N], baseline=other if same else "",
                ratio=(same / times[method][N]) if same else np.nan,
                rate=np.nan, rate_unit="", note=note))
    return rows


if __name__ == "__main__":  # pragma: no cover
    import pandas as pd

    print(pd.DataFrame(run(quick=True)).to_string())
