import numpy as np
import pytest

from mrflib._support import validation as v
from mrflib.models.boltzmann import check_model


def test_as_rng_accepts_seed_and_generator():
    g = np.random.default_rng(3)
    assert v.as_rng(g) is g
    assert v.as_rng(3).random() == np.random.default_rng(3).random()


@pytest.mark.parametrize("bad", [None, -1, 1.5, "seed", True])
def test_as_rng_refuses(bad):
    with pytest.raises(ValueError, match="rng"):
        v.as_rng(bad)


@pytest.mark.parametrize(
    "edges, match",
    [
        ([[1, 0]], "i < j"),
        ([[0, 1], [0, 1]], "duplicate"),
        ([[1, 2], [0, 1]], "sorted"),
        ([[0, 5]], "n = 3"),
        ([[0, 1, 2]], r"shape \(E, 2\)"),
        ([[-1, 1]], "non-negative"),
        ([[0.5, 1]], "integer"),
    ],
)
def test_check_edges_refuses(edges, match):
    with pytest.raises(ValueError, match=match):
        v.check_edges(np.array(edges), n=3)


@pytest.mark.parametrize(
    "x, match",
    [
        ([[0, 1]], "spins -1 and \\+1"),
        ([[np.nan, 1.0]], "finite"),
        ([[1, 1, 1]], "2 columns"),
        (np.ones((2, 2, 2)), "shape"),
    ],
)
def test_check_spins_refuses(x, match):
    with pytest.raises(ValueError, match=match):
        v.check_spins(np.array(x), n=2, name="data")


def test_check_spins_returns_int8_2d():
    out = v.check_spins([1, -1, 1])
    assert out.dtype == np.int8 and out.shape == (1, 3)


def test_check_array_messages():
    with pytest.raises(ValueError, match="bias must have shape"):
        v.check_array(np.zeros(3), "bias", shape=(4,))
    with pytest.raises(ValueError, match="coupling must contain only finite"):
        v.check_array([np.inf], "coupling")


def test_check_positive():
    assert v.check_positive(2, "k", integer=True) == 2
    with pytest.raises(ValueError, match="eta must be positive"):
        v.check_positive(-0.1, "eta")
    with pytest.raises(ValueError, match="k must be an integer"):
        v.check_positive(1.5, "k", integer=True)
    for text in ("1e-3", b"1e-3", np.str_("0.5")):  # float() reads them: numbers only
        with pytest.raises(ValueError, match="tol must be a real number, got the text"):
            v.check_positive(text, "tol")
        with pytest.raises(ValueError, match="x must be a real number"):
            v.check_real(text, "x")


def test_require_memory_states_size():
    with pytest.raises(ValueError, match=r"would need 1\.0 TiB"):
        v.require_memory(2.0**40, "test table", limit=2.0**30)
    v.require_memory(10, "tiny", limit=100)


def test_small_requests_skip_the_system_lookup(monkeypatch):
    """Up to ``UNCHECKED_BYTES`` the system's limits are not read (planning a small model
    would pay more for them than for its work); an explicit ``limit`` is still applied."""
    def nothing_left():
        return 0

    monkeypatch.setattr(v, "available_memory", nothing_left)
    with v.memory_requests() as log:
        v.require_memory(v.UNCHECKED_BYTES, "small table")
    assert log == [("small table", float(v.UNCHECKED_BYTES))]
    with pytest.raises(ValueError, match="large table would need"):
        v.require_memory(v.UNCHECKED_BYTES + 1, "large table")
    with pytest.raises(ValueError, match="small table would need"):
        v.require_memory(10, "small table", limit=5)


def test_check_model_is_a_type_error():
    with pytest.raises(TypeError, match="model must be a BoltzmannMachine"):
        check_model({"bias": 0}, "model")


def test_check_array_refuses_complex():
    with pytest.raises(ValueError, match="coupling must contain real numbers"):
        v.check_array([1.0, 2j], "coupling")


def _fake_cgroup(tmp_path, v1: bool, limit: str, usage: int):
    proc = tmp_path / "cgroup"
    if v1:
        proc.write_text("5:cpu:/\n4:memory:/job/a\n0::/\n")
        folder = tmp_path / "fs" / "memory" / "job" / "a"
        files = ("memory.limit_in_bytes", "memory.usage_in_bytes")
    else:
        proc.write_text("0::/job/a\n")
        folder = tmp_path / "fs" / "job" / "a"
        files = ("memory.max", "memory.current")
    folder.mkdir(parents=True)
    (folder / files[0]).write_text(limit + "\n")
    (folder / files[1]).write_text(f"{usage}\n")
    return str(tmp_path / "fs"), str(proc)


@pytest.mark.parametrize("v1", [True, False])
def test_cgroup_limit_is_respected(tmp_path, v1):
    root, proc = _fake_cgroup(tmp_path, v1, str(3 * 2**30), 2**30)
    assert v._cgroup_available(root, proc) == 2 * 2**30


@pytest.mark.parametrize("v1, limit", [(True, str(2**63 - 4096)), (False, "max")])
def test_cgroup_without_limit_is_ignored(tmp_path, v1, limit):
    root, proc = _fake_cgroup(tmp_path, v1, limit, 2**30)
    assert v._cgroup_available(root, proc) is None


def test_cgroup_parent_limit_counts(tmp_path):
    root, proc = _fake_cgroup(tmp_path, False, "max", 0)
    (tmp_path / "fs" / "job" / "memory.max").write_text(str(2**30))
    (tmp_path / "fs" / "job" / "memory.current").write_text(str(2**29))
    assert v._cgroup_available(root, proc) == 2**29


def test_rlimit_as_is_respected_in_a_subprocess():
    """Under ``ulimit -v`` the pre-check refuses with a ValueError instead of letting numpy
    raise MemoryError."""
    import subprocess
    import sys

    code = (
        "import resource\n"
        "from mrflib import sampling, BoltzmannMachine, graphs\n"
        "from mrflib._support import validation as v\n"
        "bm = BoltzmannMachine.random(graphs.square_grid(2, 2), 4, rng=0)\n"
        "soft, hard = resource.getrlimit(resource.RLIMIT_AS)\n"
        "with open('/proc/self/statm') as fh:\n"
        "    used = int(fh.read().split()[0]) * 4096\n"
        "resource.setrlimit(resource.RLIMIT_AS, (used + 2**30, hard))\n"
        "assert v.available_memory() <= 2**30 + 2**24, v.available_memory()\n"
        "try:\n"
        "    sampling.gibbs(bm, 10**8, burn_in=1, rng=0)\n"
        "except ValueError as ex:\n"
        "    assert 'n_samples' in str(ex), ex\n"
        "    print('refused')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip() == "refused", out.stderr


def test_check_nodes_does_not_wrap_unsigned():
    with pytest.raises(ValueError, match=r"0\.\.4, got \[9223372036854775808\]"):
        v.check_nodes(np.array([2**63], dtype=np.uint64), 5)


def test_format_bytes_keeps_huge_floats_short():
    assert v.format_bytes(8 * 2**30) == "8.0 GiB"
    assert v.format_bytes(128.0 * 2**60) == "128.0 EiB"
    assert v.format_bytes(8.0 * 2.0**242) == "4.9e+55 EiB"  # a clique of 242 binary variables
    assert v.format_bytes(2**400) == "about 10^120 B"
