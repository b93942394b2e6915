"""Test-session settings, shared by the notebook kernels that nbval starts, and the tiers.

The notebooks read ``GSME_NOTEBOOK_SIZE`` in their parameter cell: CI runs them small. A
value already set in the environment wins. ``MPLBACKEND=Agg`` draws without a display.
``XDG_STATE_HOME`` is a fresh folder, so the session's runs never enter the user's registry
of run directories.

Tiers: tests that spawn processes, build a wheel or the docs, run notebooks or drive a
browser are marked ``slow`` (those driving Chromium also ``browser``) here, in one list;
``pytest -m "not slow"`` runs the quick tier (both cores, as every run: pytest-xdist's
``-n 2`` in ``pyproject.toml``). Doctests
run once each (``--doctest-modules``), in a temporary folder of their own, with ``np`` and
``pd`` in their namespace.

A notebook's text states only numbers its outputs show: after nbval runs a notebook's last
cell, the checker of ``tests/notebook_claims.py`` reads every markdown number against the
outputs of that run (one execution, at the CI size: a number about the notebook's own run
is computed into an output); a number no output shows fails the last cell's test.
"""

import copy
import importlib.util
import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

os.environ.setdefault("GSME_NOTEBOOK_SIZE", "small")
os.environ.setdefault("MPLBACKEND", "Agg")
# the runs a test session opens are listed in a registry of its own, not the user's
# (gsme.sandbox.register_run: the run directories no trial may see)
os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="gsme-test-state-")

BROWSER = ("tests/browser/",)
SLOW = BROWSER + (
    "notebooks/",
    "tests/test_benchmarks.py",
    "tests/test_docs.py::test_the_docs_build_with_warnings_as_errors",
    "tests/faults/test_fault_sandbox.py",
    "tests/faults/test_fault_isolation.py",
    "tests/faults/test_fault_visible.py",
    "tests/faults/test_fault_secrets.py::test_a_trial_printing_its_passed_secrets",
    "tests/faults/test_fault_secrets.py::test_a_key_shaped_task_feature",
    "tests/test_cli.py::test_a_users_own_runner_evolves_through_the_command_agent",
    "tests/test_cli.py::test_kill_9_mid_round",
    "tests/test_architecture.py::test_the_wheel_carries_the_data",
    "tests/test_architecture.py::test_an_installed_wheel_runs_the_demo",
    "tests/test_pyfunc.py::test_every_reference_passes_its_hidden_tests",
    "tests/test_grow.py::test_a_grow_killed_with_sigkill",
    "tests/test_graded_run.py",
    "tests/test_agentic_evolver.py",
    "tests/test_contracts.py::test_evolver_contract[agent]",
    "tests/test_executors.py::test_a_dask_local_cluster_decides_as_the_default",
    "tests/test_executors.py::test_processes_and_a_plain_pool_give_the_trials_of_the_default"
    "[processes]",
    # an Inspect eval takes 5 to 30 s to start; the quick tier keeps its settings' tests
    "tests/test_executor_inspect.py::test_each_slot",
    "tests/test_executor_inspect.py::test_samples_",
    "tests/test_executor_inspect.py::test_a_float_scorer",
    "tests/test_executor_inspect.py::test_an_",
    "tests/test_executor_inspect.py::test_the_eval_ends",
    "tests/test_executor_inspect.py::test_a_task_that_takes_no_harness",
    "tests/test_executor_inspect.py::test_measuring",
)


def pytest_collection_modifyitems(items):
    for item in items:
        if item.nodeid.startswith(SLOW):
            item.add_marker(pytest.mark.slow)
        if item.nodeid.startswith(BROWSER):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(autouse=True)
def _doctests_in_a_temporary_folder(request, tmp_path, monkeypatch, doctest_namespace):
    """A doctest's files (runs, CSVs, harness copies) land in its own temporary folder."""
    if type(request.node).__name__ == "DoctestItem":
        monkeypatch.chdir(tmp_path)
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
        doctest_namespace.update(np=np, pd=pd)


_CLAIMS = importlib.util.spec_from_file_location(
    "notebook_claims", Path(__file__).resolve().parent / "tests" / "notebook_claims.py")
notebook_claims = importlib.util.module_from_spec(_CLAIMS)
_CLAIMS.loader.exec_module(notebook_claims)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if call.when != "call" or not report.passed or not hasattr(item, "test_outputs"):
        return report  # only a passed nbval cell
    cells = [i for i in item.session.items if i.parent is item.parent]
    if item is not cells[-1] or any(cell.test_outputs is None for cell in cells):
        return report  # the notebook's last cell, after all of them ran
    notebook = copy.deepcopy(item.parent.nb)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    for cell, executed in zip(code, cells, strict=True):
        cell.outputs = executed.test_outputs
    problems = notebook_claims.unsupported(notebook)
    if problems:
        report.outcome = "failed"
        report.longrepr = ("numbers the text states that no output of this run shows:\n"
                           + "\n".join(problems))
    return report
