"""Benchmarks of mrflib: each ``bench_<topic>.py`` compares against a baseline in the same run."""
