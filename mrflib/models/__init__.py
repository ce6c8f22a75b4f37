"""Models: what every algorithm takes, validated once and immutable.

:mod:`~mrflib.models.graphs` (edge arrays, the validated ``Graph``, its regions),
:mod:`~mrflib.models.graph_families` (the edge arrays of lattices and other families),
:mod:`~mrflib.models.boltzmann` (the ±1 pairwise Boltzmann machine),
:mod:`~mrflib.models.factor_graph` (discrete factor graphs of any cardinalities and arity;
a Boltzmann machine is their fast special case, see ``FactorGraph.from_boltzmann``),
:mod:`~mrflib.models.structure` (which backend serves a model: pairwise binary, pairwise,
general) and :mod:`~mrflib.models.lattices` (Potts and triangle lattices with known parameters).
"""
