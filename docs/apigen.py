"""The API reference, generated from gsme's code: every public module and its ``__all__``.

A module is public when no part of its dotted name starts with ``_``; its ``__all__`` says
what it makes public. Each public object is documented once, under its *canonical* name:
the package that re-exports it when it is defined in that package's submodules (so
``gsme.plot.z_forest``, not ``gsme.plot.gates.z_forest``), else the module that defines
it. ``write_api(folder)`` writes ``api/index.rst`` (modules grouped by topic, in the
order of :data:`TOPICS`) and one page per module listing its functions, classes,
exceptions and data; Sphinx's autosummary then writes one page per object. A public
module missing from :data:`TOPICS` is listed under "Other modules", so none is dropped.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import shutil
from pathlib import Path

#: Topics of the API reference: (title, one sentence, modules), as in pingouin's api.rst.
TOPICS: list[tuple[str, str, list[str]]] = [
    ("Frames and settings",
     "The frames every function takes and returns, and the settings that hold every default.",
     ["gsme", "gsme.schema", "gsme.settings", "gsme.io", "gsme.resources"]),
    ("Statistics, gates and designs",
     ("The paired test, pass@k, power, the three gates, the gate designs and the parent "
      "trials a child is compared with."),
     ["gsme.stats", "gsme.power", "gsme.gates", "gsme.designs", "gsme.pairing",
      "gsme.parent_trials", "gsme.compare"]),
    ("Keep rules and what proposals do",
     ("Which children a run keeps, the learned prior over proposal effects, and the "
      "comparisons file it learns from."),
     ["gsme.policy", "gsme.prior", "gsme.comparisons"]),
    ("The archive and the harness",
     ("The MAP-Elites archive keyed on pathology cells, its why vocabulary, env gates, "
      "patches, a harness as it is on one task, and their git substrate."),
     ["gsme.archive", "gsme.vocabulary", "gsme.envgate", "gsme.patches", "gsme.gated",
      "gsme.gitrepo"]),
    ("A run",
     ("The store of one run directory, its scoring, ledger and seal, the loop's visible "
      "steps, growing suites, budgets and configuration files."),
     ["gsme.run", "gsme.evolve", "gsme.measure", "gsme.scoring", "gsme.ledger", "gsme.seal",
      "gsme.grow", "gsme.budget",
      "gsme.config", "gsme.plugins", "gsme.registry", "gsme.cli"]),
    ("Eval logs you already have",
     "Importers of Inspect, Harbor/Terminal-Bench, SWE-bench, HAL and GEPA logs.",
     ["gsme.importers", "gsme.importers.inspect_logs", "gsme.importers.terminal_bench",
      "gsme.importers.swebench", "gsme.importers.hal", "gsme.importers.gepa",
      "gsme.importers.csv_trials"]),
    ("Other optimizers",
     "GEPA's claims re-tested on a sealed split, gsme's gate inside GEPA, and exports.",
     ["gsme.integrations", "gsme.integrations.gepa", "gsme.integrations.gepa_gate",
      "gsme.integrations.gepa_demo", "gsme.integrations.mlflow"]),
    ("The simulator",
     "The embedded, offline default agent with known ground truth, and its calibration.",
     ["gsme.sim", "gsme.sim.agent", "gsme.sim.suite", "gsme.sim.catalogue",
      "gsme.sim.profiles", "gsme.sim.model", "gsme.sim.shape", "gsme.sim.transcripts",
      "gsme.sim.audit"]),
    ("Agents and task suites",
     ("The task-agent interface, the command and Anthropic agents, runtime middleware and "
      "the bundled pyfunc suite."),
     ["gsme.agents", "gsme.agents.base", "gsme.agents.command",
      "gsme.agents.anthropic_agent", "gsme.agents.middleware", "gsme.suites",
      "gsme.suites.pyfunc"]),
    ("Evolvers",
     "The evolver interface, the offline rule evolver and the Claude evolver.",
     ["gsme.evolvers", "gsme.evolvers.base", "gsme.evolvers.rule",
      "gsme.evolvers.templates", "gsme.evolvers.mechanism", "gsme.evolvers.claude",
      "gsme.evolvers.claude_models", "gsme.evolvers.claude_prompt",
      "gsme.evolvers.claude_tools"]),
    ("Reading results",
     "Run tables, analyses, explanations, plots, the explorer and the HTML view.",
     ["gsme.report", "gsme.analysis", "gsme.experiments", "gsme.explain", "gsme.plot",
      "gsme.plot.gates", "gsme.plot.archive", "gsme.plot.results", "gsme.widgets",
      "gsme.view"]),
    ("Safety",
     "Credentials kept out, secrets redacted, trials sandboxed, costs priced.",
     ["gsme.credentials", "gsme.redact", "gsme.sandbox", "gsme.prices"]),
]

KINDS = [("Functions", "function"), ("Classes", "class"), ("Exceptions", "exception")]


def public_modules() -> list[str]:
    """Dotted names of gsme's public modules (no part starts with ``_``), sorted."""
    import gsme

    names = ["gsme"]
    for info in pkgutil.walk_packages(gsme.__path__, "gsme."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return sorted(names)


def kind(obj: object) -> str:
    """``function``, ``class``, ``exception``, ``module`` or ``data``."""
    if inspect.ismodule(obj):
        return "module"
    if inspect.isclass(obj):
        return "exception" if issubclass(obj, BaseException) else "class"
    if inspect.isroutine(obj) or inspect.isfunction(getattr(obj, "__wrapped__", None)):
        return "function"  # functools.lru_cache and other wrappers included
    return "data"


def exports() -> dict[str, list[tuple[str, object]]]:
    """Each public module's ``__all__`` as (name, object) pairs, modules left out."""
    out = {}
    for modname in public_modules():
        module = importlib.import_module(modname)
        names = getattr(module, "__all__", [])
        pairs = [(name, getattr(module, name)) for name in names]
        out[modname] = [(name, obj) for name, obj in pairs if kind(obj) != "module"]
    return out


def canonical(table: dict[str, list[tuple[str, object]]]) -> dict[tuple[str, str], str]:
    """(module, name) -> the dotted name the object is documented under."""
    exporters: dict[int, list[tuple[str, str]]] = {}
    for modname, pairs in table.items():
        for name, obj in pairs:
            exporters.setdefault(id(obj), []).append((modname, name))
    out = {}
    for modname, pairs in table.items():
        for name, obj in pairs:
            found = [(m, n) for m, n in exporters[id(obj)] if n == name] or [(modname, name)]
            home = getattr(obj, "__module__", None) if kind(obj) != "data" else None
            if home:
                ancestors = [(m, n) for m, n in found if home == m or home.startswith(m + ".")]
                found = ancestors or found
            best = min(found, key=lambda mn: (mn[0].count("."), mn[0]))
            out[(modname, name)] = f"{best[0]}.{best[1]}"
    return out


def attribute_doc(name: str, obj: object) -> list[str]:
    """The doc comment or string of a module-level constant, from any gsme module holding it.

    A constant has no ``__doc__`` of its own (autodoc would show its type's), so its
    description is the ``#:`` comment or the string literal after its assignment, looked up
    in every loaded gsme module (private ones too) that holds the same object by that name.
    """
    import sys

    from sphinx.errors import PycodeError
    from sphinx.pycode import ModuleAnalyzer

    holders = [m for m, mod in sorted(sys.modules.items())
               if m.split(".")[0] == "gsme" and getattr(mod, name, None) is obj]
    for modname in holders:
        try:
            docs = ModuleAnalyzer.for_module(modname).find_attr_docs()
        except PycodeError:  # a compiled or source-less module: no attribute docs to read
            continue
        if ("", name) in docs:
            return [line for line in docs[("", name)] if line is not None]
    return []


def _title(text: str, char: str) -> str:
    return f"{text}\n{char * len(text)}\n"


def write_api(folder: Path) -> list[str]:
    """Write ``folder/api/``: the index and one page per public module. Returns the modules."""
    api = Path(folder) / "api"
    shutil.rmtree(api, ignore_errors=True)  # written afresh: a renamed object leaves no page
    api.mkdir(parents=True)
    table = exports()
    names = canonical(table)
    modules = list(table)
    placed = [m for _, _, mods in TOPICS for m in mods if m in table]
    topics = [(t, s, [m for m in mods if m in table]) for t, s, mods in TOPICS]
    other = [m for m in modules if m not in placed]
    if other:
        topics.append(("Other modules", "Public modules not yet placed in a topic.", other))

    index = [".. Generated by docs/apigen.py from gsme's code; do not edit.", "",
             _title("API reference", "="),
             ("Every public module and what its ``__all__`` makes public, grouped by topic. "
              "An object re-exported by a package is documented under the package's name "
              "(``gsme.plot.z_forest``)."), ""]
    for title, sentence, mods in topics:
        index += [_title(title, "-"), sentence, "", ".. autosummary::", ""]
        index += [f"   {m}" for m in mods]
        index += ["", ".. toctree::", "   :hidden:", ""]
        index += [f"   {m}" for m in mods]
        index += [""]
    (api / "index.rst").write_text("\n".join(index), encoding="utf-8")

    for modname in modules:
        page = [".. Generated by docs/apigen.py from gsme's code; do not edit.", "",
                _title(modname, "="), f".. automodule:: {modname}", "   :no-members:", ""]
        for heading, k in KINDS:
            own = sorted({names[(modname, n)] for n, obj in table[modname] if kind(obj) == k},
                         key=str.lower)
            if not own:
                continue
            ours = [n for n in own if n.rsplit(".", 1)[0] == modname]
            theirs = [n for n in own if n.rsplit(".", 1)[0] != modname]
            page += [_title(heading, "-")]
            if ours:
                page += [".. autosummary::", "   :toctree: generated/", ""]
                page += [f"   {n.rsplit('.', 1)[1]}" for n in ours]
                page += [""]
            if theirs:
                page += ["Re-exported, documented under their canonical names:", "",
                         ".. autosummary::", ""]
                page += [f"   {n}" for n in theirs]
                page += [""]
        data = sorted({names[(modname, n)] for n, obj in table[modname] if kind(obj) == "data"},
                      key=str.lower)
        if data:
            page += [_title("Data", "-")]
            for full in data:
                name = full.rsplit(".", 1)[1]
                if full.rsplit(".", 1)[0] != modname:
                    page += [f"* :data:`{full}` (re-exported)", ""]
                    continue
                obj = dict(table[modname])[name]
                page += [f".. py:data:: {name}", f"   :module: {modname}"]
                value = repr(obj)
                if len(value) <= 80 and "\n" not in value:
                    page += [f"   :value: {value}"]
                page += [""] + [f"   {line}".rstrip() for line in attribute_doc(name, obj)] + [""]
            page += [""]
        (api / f"{modname}.rst").write_text("\n".join(page), encoding="utf-8")
    return modules
