"""The standard output of compiled code silenced for a block
(:func:`mrflib._support.c_stdout.silenced`): what is written on file descriptor 1 within it
goes nowhere, what Python printed before it arrives first, and the descriptor is restored."""

from __future__ import annotations

import os

import pytest

from mrflib._support import c_stdout


def test_writes_on_the_descriptor_within_the_block_go_nowhere(capfd):
    print("before", end="|")  # buffered by Python: flushed before the block
    with c_stdout.silenced():
        os.write(1, b"from C|")
    os.write(1, b"after")
    out, _ = capfd.readouterr()
    assert out == "before|after"


def test_the_descriptor_is_restored_when_the_block_raises(capfd):
    with pytest.raises(RuntimeError), c_stdout.silenced():
        raise RuntimeError("the solver failed")
    os.write(1, b"restored")
    assert capfd.readouterr().out == "restored"
