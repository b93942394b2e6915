"""The package's shape: imports flow one way, public modules declare what they export, the
library is importable lazily, and a built wheel works on its own."""

import ast
import importlib
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

import gsme
from gsme import registry

PACKAGE = Path(gsme.__file__).parent
ROOT = PACKAGE.parent


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Every gsme module ``name`` imports, at module level or inside functions."""
    found = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1]
                                + ([base] if base else []))
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph = {name: _imports(name, path, set(modules)) for name, path in modules.items()}
    for name, targets in graph.items():  # importing a.b.c imports a and a.b first
        graph[name] = {t for t in targets if not name.startswith(t + ".") and t != "gsme"}
    return graph


def test_no_import_cycle_even_through_function_level_imports():
    graph = _graph()
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


LAYERS = [  # a module may import only from its own layer or the layers below it
    {"gsme.schema", "gsme.settings", "gsme.registry", "gsme.resources", "gsme.pairing",
     "gsme._checks", "gsme._renamed",
     "gsme.power", "gsme.envgate", "gsme.vocabulary", "gsme.credentials", "gsme._proc",
     "gsme.prices", "gsme.redact", "gsme.sandbox", "gsme._reaper"},
    {"gsme.stats", "gsme.gates", "gsme.designs", "gsme.parent_trials", "gsme.archive",
     "gsme.sequential", "gsme._paired",  # deprecated names of gsme.designs, gsme.pairing
     "gsme.patches", "gsme.gated", "gsme.io", "gsme.analysis", "gsme.prior", "gsme.comparisons",
     "gsme.suites", "gsme.agents.base", "gsme.evolvers.base", "gsme.executors.base"},
    {"gsme.policy", "gsme.ledger", "gsme._ledger_rows", "gsme.gitrepo", "gsme.seal",
     "gsme.scoring", "gsme._plan",
     "gsme.plugins", "gsme.sim", "gsme.agents", "gsme.evolvers", "gsme.executors.pool"},
    {"gsme.run", "gsme._run_dir", "gsme._run_frames"},
    {"gsme.evolve", "gsme._rounds", "gsme.measure", "gsme.report", "gsme.config",
     "gsme.importers", "gsme.compare", "gsme.budget", "gsme.grow", "gsme.explain", "gsme.view",
     "gsme.view_data", "gsme.plot",
     "gsme.executors"},
    {"gsme.experiments", "gsme.cli", "gsme._cli_common", "gsme._cli_compare", "gsme._cli_runs",
     "gsme.widgets", "gsme.integrations"},
]
"""A package's name places every module under it (``gsme.sim`` places ``gsme.sim.shape``),
unless the module is named itself (``gsme.agents.base``, the interface, sits below)."""
_PLACED = {m: i for i, group in enumerate(LAYERS) for m in group}


def _layer(name: str) -> int | None:
    while name and name not in _PLACED:
        name = name.rpartition(".")[0]
    return _PLACED.get(name)


def test_every_module_has_a_layer():
    assert [m for m in _modules() if m != "gsme" and _layer(m) is None] == []


def test_the_loop_flows_one_way():
    graph = _graph()
    upward = [(a, b) for a, deps in graph.items() if _layer(a) is not None
              for b in deps if _layer(b) is not None and _layer(b) > _layer(a)]
    assert upward == []


def test_plots_compute_nothing():
    """Plot functions draw what the library computed: they import frames and defaults only."""
    graph = _graph()
    for name in (m for m in graph if m.startswith("gsme.plot")):
        assert {t for t in graph[name] if not t.startswith("gsme.plot")} <= {"gsme.schema",
                                                                              "gsme.settings"}, name


_CLASSES = {"agent": registry.AGENTS, "evolver": registry.EVOLVERS,
            "executor": registry.EXECUTORS}


@pytest.mark.parametrize("kind, name", [(kind, name) for kind, where in _CLASSES.items()
                                        for name in where.names()])
def test_every_registered_class_is_of_its_kind(kind, name):
    from gsme.agents.base import TaskAgent
    from gsme.evolvers.base import Evolver
    from gsme.executors.base import Executor

    cls = _CLASSES[kind].get(name)
    assert isinstance(cls, type) and issubclass(cls, {"agent": TaskAgent, "evolver": Evolver,
                                                      "executor": Executor}[kind]), name
    if kind != "executor":  # executors are built by the front (cli), not by Run.open
        assert _layer(cls.__module__) <= _layer("gsme.plugins"), name


@pytest.mark.parametrize("kind, user", [("DESIGNS", "gsme.designs"),
                                        ("POLICIES", "gsme.policy"),
                                        ("FORMATS", "gsme.importers")])
def test_every_registered_object_sits_where_its_user_can_reach_it(kind, user):
    where = getattr(registry, kind)
    for name in where.names():
        module = type(where.get(name)).__module__
        if module.startswith("gsme."):
            assert _layer(module) <= _layer(user), (name, module)


def test_the_store_and_the_loop_use_no_private_names_of_other_modules():
    for name in ("gsme.evolve", "gsme.measure", "gsme.run", "gsme.scoring", "gsme.policy",
                 "gsme.cli", "gsme._cli_runs", "gsme._cli_compare", "gsme.experiments",
                 "gsme.report", "gsme.grow"):
        tree = ast.parse(_modules()[name].read_text())
        private = [f"{node.value.id}.{node.attr}" for node in ast.walk(tree)
                   if isinstance(node, ast.Attribute) and node.attr.startswith("_")
                   and not node.attr.startswith("__") and isinstance(node.value, ast.Name)
                   and node.value.id not in ("self", "cls")]
        assert private == [], name


def test_no_sql_outside_the_ledger():
    for name, path in _modules().items():
        if name == "gsme.ledger":
            continue
        text = path.read_text()
        assert not any(word in text for word in ("SELECT ", "INSERT ", "DELETE FROM")), name


def test_import_gsme_exposes_submodules_lazily():
    code = ("import sys, gsme; assert 'gsme.stats' not in sys.modules; "
            "gsme.stats.paired_test; assert 'gsme.stats' in sys.modules; "
            "assert 'anthropic' not in sys.modules; print(sorted(gsme.__all__)[:3])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        gsme.nope  # noqa: B018


@pytest.mark.parametrize("name", sorted(m for m in _modules()
                                        if not m.rpartition(".")[2].startswith("_")
                                        and m != "gsme"))
def test_every_public_module_declares_its_exports(name):
    module = importlib.import_module(name)
    assert isinstance(getattr(module, "__all__", None), list | tuple), name
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert missing == [], name


def _folders_with_files(top: Path, package: tuple[str, ...]) -> set[str]:
    """Dotted names of the folders under ``top`` that hold a file (caches left out)."""
    return {".".join(package + p.parent.relative_to(top).parts) for p in top.rglob("*")
            if p.is_file() and not any(part == "__pycache__" or part.startswith(".")
                                       for part in p.parent.relative_to(top).parts)}


def test_every_package_folder_ships():
    """Every folder of code or data is a listed package: an unlisted data folder would not be
    a package and makes setuptools warn on every install."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
                 ["packages"])
    code = _folders_with_files(PACKAGE, ("gsme",)) - {"gsme.data"}
    data = _folders_with_files(ROOT / "data", ("gsme", "data"))
    assert {"gsme.prompts", "gsme.data.suites.pyfunc.tasks"} <= code | data
    assert code | data == listed


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                            "--no-build-isolation", "-q", "-w", str(out), str(ROOT)],
                           capture_output=True, text=True, check=False)
    if build.returncode != 0 and "No module named" in build.stderr:
        pytest.skip(f"cannot build a wheel here: {build.stderr.strip()[-200:]}")
    assert build.returncode == 0, build.stderr
    return next(out.glob("gsme-*.whl"))


def test_the_wheel_carries_the_data(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "gsme/data/paper_table.csv" in names
    assert "gsme/data/harnesses/seed/prompt/system.md" in names
    assert "gsme/data/harnesses/seed/patches/.gitkeep" in names
    assert any(n.startswith("gsme/data/suites/pyfunc/tasks/") for n in names)
    assert "gsme/prompts/diagnose.txt" in names


def test_an_installed_wheel_runs_the_demo_from_an_unrelated_folder(wheel, tmp_path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target",
                    str(target), str(wheel)], check=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # -S: no site processing, so the editable install of this checkout is invisible;
    # the wheel's folder and this environment's libraries are all that is on the path
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target),
                                                        sysconfig.get_paths()["purelib"]])}
    code = (f"import gsme, gsme.report as r; assert gsme.__file__.startswith({str(target)!r}), "
            "gsme.__file__; t = r.paper_table(); assert len(t) == 7; print('paper ok')")
    check = subprocess.run([sys.executable, "-S", "-c", code], cwd=elsewhere, env=env,
                           capture_output=True, text=True, check=False)
    assert check.returncode == 0 and "paper ok" in check.stdout, check.stderr
    demo = subprocess.run([sys.executable, "-S", "-m", "gsme.cli", "demo", "--preset", "tiny",
                           "--rounds", "1", "--quiet", "--out", str(tmp_path / "d")],
                          cwd=elsewhere, env=env, capture_output=True, text=True, check=False,
                          timeout=600)
    assert demo.returncode == 0, demo.stderr
    assert "SIMULATED" in demo.stdout and "sealed_delta_pp" in demo.stdout


def test_no_module_is_over_600_lines_unless_it_says_why_at_its_top():
    long = {name: len(path.read_text().splitlines()) for name, path in _modules().items()
            if len(path.read_text().splitlines()) > 600}
    unexplained = [name for name in long
                   if "(Over 600 lines because" not in ast.get_docstring(
                       ast.parse(_modules()[name].read_text()), clean=False)[:600]]
    assert not unexplained, f"split these, or say at their top why they are long: {unexplained}"
