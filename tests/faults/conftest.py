"""Fixtures of the fault-injection suite: a finished tiny run, and private copies of it."""

import shutil

import pytest
from faultkit import tiny_config

from gsme.cli import main


@pytest.fixture(scope="session")
def finished(tmp_path_factory):
    """A sealed tiny run made by ``gsme run``; copy it before changing it (``fresh``)."""
    root = tmp_path_factory.mktemp("finished")
    assert main(["run", str(tiny_config(root / "c.toml", root / "run")), "--quiet"]) == 0
    return root / "run"


@pytest.fixture
def fresh(finished, tmp_path):
    """A private copy of the finished run."""
    return shutil.copytree(finished, tmp_path / "run", symlinks=True)
