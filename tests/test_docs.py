"""The documentation: every public function and class documented, and the site builds.

The build (slow tier) runs Sphinx with ``-W`` (warnings are errors) on a copy of ``docs/``
in a temporary folder, as ``sphinx-build -W -b html docs docs/_build/html`` does.
"""

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _undocumented():
    spec = importlib.util.spec_from_file_location("undocumented", DOCS / "undocumented.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_public_function_and_class_has_a_docstring():
    assert _undocumented().undocumented() == []


def test_every_public_function_and_class_has_an_example():
    assert _undocumented().without_examples() == []  # the examples run as doctests


def test_the_docs_build_with_warnings_as_errors(tmp_path):
    pytest.importorskip("sphinx")
    pytest.importorskip("numpydoc")
    pytest.importorskip("pydata_sphinx_theme")
    src, out = tmp_path / "docs", tmp_path / "html"
    shutil.copytree(DOCS, src, ignore=shutil.ignore_patterns("_build", "api"))
    done = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q",
                           "-b", "html", str(src), str(out)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-5000:]

    def page(name):
        return (out / name).read_text(encoding="utf-8")

    for name in ["index", "gates", "keep_rules", "archive", "simulator", "importers",
                 "guarantees", "figures", "api/index"]:
        assert (out / f"{name}.html").is_file(), name
    api = page("api/index.html")
    for name in ["gsme.stats", "gsme.gates", "gsme.designs", "gsme.archive",
                 "gsme.importers", "gsme.sim"]:
        assert name in api
    paired = page("api/generated/gsme.stats.paired_test.html")
    assert "p_one_sided" in paired
    assert "Chen" in page("api/generated/gsme.stats.pass_at_k_estimate.html")
    assert "DeMets" in page("api/generated/gsme.designs.spending_boundaries.html")
    assert "Mouret" in page("archive.html")
    assert "gsme.plot.z_forest" in page("api/gsme.plot.html")
    assert len(list((out / "_images").glob("figures-*.png"))) >= 7
