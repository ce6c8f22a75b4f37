"""Inference: questions about one given model, whatever produced it.

Exact answers (:mod:`~mrflib.inference.exact`, which dispatches to enumeration and to the
elimination engine on a junction tree, of factor graphs and of Boltzmann machines), Gibbs sampling
(:mod:`~mrflib.inference.sampling`), spatial Monte Carlo integration
(:mod:`~mrflib.inference.smci`) and bounds on the partition function
(:mod:`~mrflib.inference.bounds`).
"""

from mrflib._support.deprecation import ModuleAliases as _ModuleAliases

#: Module paths of the flat layout that preceded the sub-packages, and the modules that
#: replaced them: importing one warns and gives its replacement (for one release).
MOVED = {
    "approx_result": "mrflib.inference.approx.result",
    "domains": "mrflib.inference.exact.domains",
    "elimination": "mrflib.inference.exact.elimination",
    "elimination_order": "mrflib.inference.exact.elimination_order",
    "enumeration": "mrflib.inference.exact.enumeration",
    "factor_gibbs": "mrflib.inference.sampling.chains",
    "junction_tree": "mrflib.inference.exact.junction_tree",
    "lbp": "mrflib.inference.approx.lbp",
    "map_search": "mrflib.inference.approx.map_search",
    "max_mini_bucket": "mrflib.inference.approx.max_mini_bucket",
    "mean_field": "mrflib.inference.approx.mean_field",
    "partition_graphs": "mrflib.inference.bounds.expansion",
    "point_estimates": "mrflib.inference.approx.point_estimates",
    "sliced": "mrflib.inference.exact.sliced",
    "smci_factor_graph": "mrflib.inference.smci.regions",
    "treewidth_bounds": "mrflib.inference.exact.treewidth_bounds",
    "wmb": "mrflib.inference.approx.wmb",
}

_ModuleAliases(__name__, MOVED, warn=True).install()
