"""Command line: ``python -m mrflib sweep ...``, ``paper ...`` and ``solve ...``."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Dispatch ``python -m mrflib <subcommand>``; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m mrflib sweep NOTEBOOK -p NAME V1 V2 ... [-p ...] --out DIR "
              "[--workers N] [--scheduler ADDR] [--timeout S]\n\nsubcommands:\n"
              "  sweep   run a notebook over a parameter grid (python -m mrflib sweep --help)\n"
              "  paper   run chapters at the paper profile in resumable chunks "
              "(python -m mrflib paper --help)\n"
              "  solve   answer a UAI model file exactly: PR, MAR or MPE "
              "(python -m mrflib solve --help)\n"
              "  warm-up compile the common numba kernels into numba's cache once")
        return 0
    if argv[0] == "sweep":
        from mrflib.repro.sweep import main as sweep_main

        return sweep_main(argv[1:])
    if argv[0] == "paper":
        from mrflib.repro.paper import main as paper_main

        return paper_main(argv[1:])
    if argv[0] == "solve":
        from mrflib.io.solve import main as solve_main

        return solve_main(argv[1:])
    if argv[0] == "warm-up":
        from mrflib.repro.warm_up import main as warm_up_main

        return warm_up_main(argv[1:])
    print(f"unknown subcommand {argv[0]!r}; try: python -m mrflib --help", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
