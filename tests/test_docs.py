"""The documentation: every public function and class documented, every example of the
pages runs, and the site builds.

The build (slow tier) runs Sphinx with ``-W -n`` (warnings are errors, and so is every
cross-reference that points nowhere) on a copy of ``docs/`` in a temporary folder, as
``sphinx-build -W -n -b html docs docs/_build/html`` does.
"""

import importlib.util
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
EXAMPLES = DOCS / "examples"
EXTENDING = sorted((EXAMPLES / "extending").glob("*.py"))


def _undocumented():
    spec = importlib.util.spec_from_file_location("undocumented", DOCS / "undocumented.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_public_function_and_class_has_a_docstring():
    assert _undocumented().undocumented() == []


def test_every_public_function_and_class_has_an_example():
    assert _undocumented().without_examples() == []  # the examples run as doctests


def test_every_kind_of_extension_has_an_example():
    assert {path.stem for path in EXTENDING} == {"design", "policy", "format", "agent",
                                                 "evolver", "executor"}
    page = (DOCS / "extending.rst").read_text(encoding="utf-8")
    for path in EXTENDING:
        assert f".. literalinclude:: examples/extending/{path.name}" in page


#: What each example prints that shows it worked through gsme, by name.
SHOWN = {"design": ["design             lenient", "decision            credit"],
         "policy": ["kept"], "format": ["decision            credit"],
         "agent": ["ship c0001: the sealed test credits c0001"],
         "evolver": ["1 children of baseline"], "executor": ["round 1: 3 children"]}


@pytest.mark.parametrize("path", EXTENDING, ids=lambda path: path.stem)
def test_each_extending_example_runs_through_gsme(path, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(path), run_name="__main__")
    out = capsys.readouterr().out
    for line in SHOWN[path.stem]:
        assert line in out, (path.stem, line)


def test_getting_started_shows_what_its_commands_print(tmp_path, monkeypatch, capsys):
    from gsme.cli import main

    harbor = DOCS.parent / "tests" / "data" / "importers" / "harbor"
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(EXAMPLES / "getting_started" / "make_trials.py"), run_name="__main__")
    shutil.copytree(harbor, tmp_path / "tests" / "data" / "importers" / "harbor")
    page = (DOCS / "getting_started.rst").read_text(encoding="utf-8")
    for pair in (["baseline.csv", "v2.csv"], [f"tests/data/importers/harbor/{side}-job"
                                              for side in ("baseline", "child")]):
        assert main(["compare", *pair]) == 0
        out = capsys.readouterr().out
        shown = [line for line in out.splitlines() if line.split()[:1] in (
            ["delta_pp"], ["p_one_sided"], ["decision"], ["mde_pp"], ["gsme"])]
        assert len(shown) == 5
        for line in shown:  # the page shows these lines as the command prints them
            assert line in page, line


def test_the_docs_build_with_warnings_as_errors(tmp_path):
    pytest.importorskip("sphinx")
    pytest.importorskip("numpydoc")
    pytest.importorskip("pydata_sphinx_theme")
    pytest.importorskip("myst_nb")
    src, out = tmp_path / "docs", tmp_path / "html"
    shutil.copytree(DOCS, src, ignore=shutil.ignore_patterns("_build", "api"))
    done = subprocess.run([sys.executable, "-m", "sphinx", "-W", "-n", "--keep-going",
                           "-q", "-b", "html", str(src), str(out)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-5000:]

    def page(name):
        return (out / name).read_text(encoding="utf-8")

    for name in ["index", "getting_started", "concepts/harness", "concepts/trials",
                 "concepts/gates", "concepts/keep_rules", "concepts/archive", "concepts/sealed",
                 "extending", "glossary", "guides/your_logs", "guides/running",
                 "guides/evolvers", "guides/real_runs", "guides/library", "evidence",
                 "simulator", "guarantees", "figures", "notebooks", "api/index"]:
        assert (out / f"{name}.html").is_file(), name
    api = page("api/index.html")
    for name in ["gsme.stats", "gsme.gates", "gsme.designs", "gsme.archive",
                 "gsme.importers", "gsme.sim"]:
        assert name in api
    paired = page("api/generated/gsme.stats.paired_test.html")
    assert "p_one_sided" in paired
    assert "Chen" in page("api/generated/gsme.stats.pass_at_k_estimate.html")
    assert "DeMets" in page("api/generated/gsme.designs.spending_boundaries.html")
    assert "Mouret" in page("concepts/archive.html")
    glossary = page("glossary.html")
    for term in ["kept", "credited", "sealed", "shipped", "pathology-cell", "where-why"]:
        assert f'id="term-{term}"' in glossary, term
    # pandas, numpy and scipy names link to their own documentation, offline
    assert "https://pandas.pydata.org/docs/reference/api/pandas.DataFrame.html" in paired
    gates = page("concepts/gates.html")
    assert "https://docs.scipy.org/doc/scipy/reference/generated/scipy.stats.ttest_rel" in gates
    assert "https://numpy.org/doc/stable/reference/random/generator.html" in page(
        "concepts/trials.html")
    assert "gsme.plot.z_forest" in page("api/gsme.plot.html")
    notebooks = sorted(path.stem for path in (out / "notebooks").glob("*.html"))
    assert len(notebooks) == 7 and notebooks[0] == "01_quickstart", notebooks
    assert "SIMULATED" in page("notebooks/01_quickstart.html")  # rendered with its outputs
    assert len(list((out / "_images").glob("figures-*.png"))) >= 7
