"""Shared fixtures: small models whose every quantity is checked by enumeration."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from mrflib import BoltzmannMachine, graphs


@pytest.fixture
def grid_bm() -> BoltzmannMachine:
    """A 3x3 grid with non-trivial biases and couplings."""
    return BoltzmannMachine.random(graphs.square_grid(3, 3), 9, bias_scale=0.5,
                                   coupling_scale=0.6, rng=11)


@pytest.fixture
def dense_bm() -> BoltzmannMachine:
    """A complete graph on 7 spins (every pair coupled)."""
    return BoltzmannMachine.random(graphs.complete(7), 7, bias_scale=0.4, coupling_scale=0.5,
                                   rng=5)


def brute_force(bm: BoltzmannMachine):
    """Slow reference: the explicit table of states, probabilities, log Z, moments."""
    n = bm.n
    idx = np.arange(2**n)
    X = np.array([[1 if (k >> i) & 1 else -1 for i in range(n)] for k in idx], dtype=np.int8)
    lw = np.array([bm.log_weight(x) for x in X])
    logz = np.log(np.sum(np.exp(lw)))
    p = np.exp(lw - logz)
    C = np.einsum("s,si,sj->ij", p, X.astype(float), X.astype(float))
    return X, p, logz, X.T @ p, C


def can_unshare() -> bool:
    """True if ``unshare -rm`` works (user mount namespaces, for :func:`hidden_dask_worker`)."""
    return bool(shutil.which("unshare")) and subprocess.run(
        ["unshare", "-rm", "true"], capture_output=True).returncode == 0


@contextmanager
def hidden_dask_worker(hidden: Path) -> Iterator:
    """A Dask client with one worker that cannot see ``hidden``: the worker runs in a mount
    namespace where ``hidden`` is an empty read-only tmpfs (no shared filesystem)."""
    from distributed import Client, LocalCluster

    script = ('mount -t tmpfs -o ro tmpfs "$0" && exec "$1" -m distributed.cli.dask_worker '
              '"$2" --nworkers 1 --nthreads 2 --no-dashboard')
    with LocalCluster(n_workers=0, host="127.0.0.1", dashboard_address=None) as cluster, \
            Client(cluster) as client:
        worker = subprocess.Popen(
            ["unshare", "-rm", "sh", "-c", script, str(hidden), sys.executable,
             cluster.scheduler_address], start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            client.wait_for_workers(1, timeout=300)  # slow on a loaded machine
            assert client.submit(os.listdir, str(hidden), pure=False).result() == []
            yield client
        finally:
            os.killpg(worker.pid, signal.SIGTERM)
            worker.wait(timeout=30)
