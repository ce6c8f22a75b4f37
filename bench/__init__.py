"""Benchmarks of mrflib: each ``bench_<topic>.py`` compares against a baseline in the same run."""


class Skipped(Exception):
    """Raised by a benchmark's ``run`` that cannot run here (e.g. its data is not on this
    machine): ``python -m bench`` prints the message and goes on, writing no results."""
