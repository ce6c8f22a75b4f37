"""Inference: questions about one given model, whatever produced it.

Exact answers (:mod:`~mrflib.inference.exact`, which dispatches to enumeration, the ±1
junction tree and the factor-graph elimination engine), Gibbs sampling
(:mod:`~mrflib.inference.sampling`), spatial Monte Carlo integration
(:mod:`~mrflib.inference.smci`) and bounds on the partition function
(:mod:`~mrflib.inference.bounds`).
"""
