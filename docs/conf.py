"""Sphinx configuration of gsme's documentation.

Build: ``sphinx-build -W -n -b html docs docs/_build/html`` (``-W``: warnings are errors;
``-n``, nitpicky, also set here: every cross-reference must resolve).
The API reference (``api/``) is written from the code by ``apigen.py`` when the build
starts, and the notebooks are copied into ``notebooks/`` to be rendered (myst-nb, with
their committed outputs: nothing is run); autosummary then writes one page per public object
(``api/generated/``). Nothing is executed but the docstrings' import; figures come from
matplotlib's plot directive.

References to Python, NumPy, pandas and SciPy resolve offline (the build needs no network)
through their inventories in ``_inv/``, copied from the projects' own built documentation:
Python 3.11 and pandas 1.5.3 and SciPy 1.10.1 from Debian's ``python3.11-doc``,
``python-pandas-doc`` and ``python-scipy-doc`` packages, NumPy 2.5 from numpy/doc on GitHub.
The pandas and SciPy ones are older than the installed releases: the pages gsme links to
(``pandas.DataFrame``, ``scipy.stats.ttest_rel``, ...) keep their addresses in the current
documentation; a name added since would not resolve, and fail the build (then replace the
file with a newer one).
"""

import importlib
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from apigen import write_api
from sphinx.util.nodes import make_refnode

import gsme

project = "gsme"
author = "gsme contributors"
copyright = "gsme contributors"
release = gsme.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.intersphinx",
    "numpydoc",
    "matplotlib.sphinxext.plot_directive",
    "myst_nb",
]

nitpicky = True  # every cross-reference resolves (as ``-n``)
# What no page documents, so no reference can reach: names private to gsme (a part starting
# with "_"), and projects without an inventory here (matplotlib, seaborn, pydantic,
# inspect_ai: their inventories are not in any package this build can install offline).
nitpick_ignore_regex = [
    ("py:.*", r"(.*\.)?_[A-Za-z].*"),
    ("py:.*", r"(matplotlib|seaborn|pydantic|inspect_ai)(\..*)?"),
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "README.md"]
root_doc = "index"

# API reference: generated from __all__ each build
write_api(HERE)

# the notebooks, rendered as committed (executed, full size), never run by the build
NOTEBOOKS = Path(gsme.__file__).resolve().parents[1] / "notebooks"
shutil.rmtree(HERE / "notebooks", ignore_errors=True)
(HERE / "notebooks").mkdir()
for notebook in sorted(NOTEBOOKS.glob("[0-9]*.ipynb")):
    shutil.copy(notebook, HERE / "notebooks" / notebook.name)
nb_execution_mode = "off"

autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "none"  # numpydoc's Parameters say the types
autodoc_inherit_docstrings = True  # a method implementing an interface shows its doc
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks = set()
numpydoc_xref_param_type = True  # a parameter's type links where it is named below
numpydoc_xref_ignore = "all"  # ... and only there: "str, optional" stays text
numpydoc_xref_aliases = {
    "DataFrame": "pandas.DataFrame", "Series": "pandas.Series", "Index": "pandas.Index",
    "ndarray": "numpy.ndarray", "Generator": "numpy.random.Generator",
    "Path": "pathlib.Path", "GateConfig": "gsme.settings.GateConfig",
    "RunConfig": "gsme.settings.RunConfig", "KeepConfig": "gsme.settings.KeepConfig",
    "Run": "gsme.run.Run",
}

INVENTORIES = HERE / "_inv"
intersphinx_mapping = {
    "python": ("https://docs.python.org/3/", str(INVENTORIES / "python.inv")),
    "numpy": ("https://numpy.org/doc/stable/", str(INVENTORIES / "numpy.inv")),
    "pandas": ("https://pandas.pydata.org/docs/", str(INVENTORIES / "pandas.inv")),
    "scipy": ("https://docs.scipy.org/doc/scipy/", str(INVENTORIES / "scipy.inv")),
}

# plots: examples that draw run when the docs build (small, simulated)
plot_include_source = True
plot_html_show_source_link = False
plot_html_show_formats = False
plot_formats = [("png", 90)]
plot_rcparams = {"savefig.bbox": "tight"}
plot_pre_code = "import numpy as np\nimport pandas as pd\nimport matplotlib.pyplot as plt"

html_theme = "pydata_sphinx_theme"
html_title = f"gsme {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "collapse_navigation": True,  # a full navigation tree on ~400 pages doubles the build
    "navigation_depth": 2,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_sidebars = {"**": ["sidebar-nav-bs"]}
html_static_path = []
html_show_sourcelink = False


#: The object types each Python role may point to.
ROLE_TYPES = {
    "func": {"function", "method", "classmethod", "staticmethod"},
    "meth": {"method", "classmethod", "staticmethod", "function", "property"},
    "class": {"class", "exception"}, "exc": {"exception", "class"},
    "data": {"data", "attribute"}, "const": {"data", "attribute"},
    "attr": {"attribute", "property", "data"}, "mod": {"module"},
}


def _shared(a: str, b: str) -> int:
    """How many leading dotted parts two names share."""
    n = 0
    for x, y in zip(a.split("."), b.split("."), strict=False):
        if x != y:
            break
        n += 1
    return n


def _imported(dotted: str):
    """The object a dotted name of gsme's names, or None."""
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:n]))
        except ImportError:
            continue
        for part in parts[n:]:
            obj = getattr(obj, part, None)
        return obj
    return None


def _same_object(objects, target: str) -> str | None:
    """The documented name of the object ``target`` re-exports (``gsme.registry.POLICIES``
    documented as ``gsme.policy.POLICIES``), or None."""
    if not target.startswith("gsme."):
        return None
    obj = _imported(target)
    if obj is None:
        return None
    last = target.rsplit(".", 1)[1]
    for name, entry in objects.items():
        if name.endswith("." + last) and not entry.aliased and _imported(name) is obj:
            return name
    return None


def _lookup(objects, target: str, role: str, context: str) -> str | None:
    """The documented name a docstring's reference means, or None.

    In order: the target with the referring class's or module's prefix; the one object
    documented under a name ending with the target (``GateConfig``, ``Run.open``), of a type
    the role allows, the one sharing most of the referring module's name where several do;
    for a public attribute or constant documented only in its owner's text
    (``TaskAgent.frozen``, ``schema.TRIALS``, ``MAX_DEPTH`` in :mod:`gsme.envgate`), its
    class or module.
    """
    kinds = ROLE_TYPES.get(role)
    if target in objects:
        return target
    same = _same_object(objects, target)
    if same:
        return same
    parts = context.split(".") if context else []
    for n in range(len(parts), 0, -1):  # as the referring class or module sees the name
        seen = ".".join([*parts[:n], target])
        if seen in objects:
            return seen
        same = _same_object(objects, seen)
        if same:
            return same
    found = {}
    for name, entry in objects.items():
        if name.endswith("." + target) and name.startswith("gsme") and (
                kinds is None or entry.objtype in kinds):
            found.setdefault((entry.docname, entry.node_id), name)
    if found:
        names = sorted(found.values(), key=lambda n: (-_shared(n, context), n.count("."), n))
        if len(names) == 1 or _shared(names[0], context) > _shared(names[1], context):
            return names[0]
        return None
    if any(part.startswith("_") for part in target.split(".")):
        return None  # a private name has no page: conf's nitpick_ignore_regex says so
    if "." in target:
        return _lookup(objects, target.rsplit(".", 1)[0], "obj", context)
    for n in range(len(parts), 0, -1):  # a name of the referring class's or module's text
        if ".".join(parts[:n]) in objects:
            return ".".join(parts[:n])
    return None


def resolve_short_name(app, env, node, contnode):
    """Resolve a docstring's reference as its author meant it (see :func:`_lookup`).

    numpydoc's "See Also" and a module's own docstrings name gsme's objects as their module
    does; the API reference documents each once, under its canonical name (``apigen.py``).
    """
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip(".~")
    if not (target.startswith("gsme.") or "." not in target or
            target.split(".")[0][:1].isupper()):
        return None  # another project's name: intersphinx's, or unresolved
    context = ".".join(filter(None, [node.get("py:module"), node.get("py:class")]))
    objects = env.domains["py"].objects
    name = _lookup(objects, target, node.get("reftype", "obj"), context)
    if name is None:
        return None
    entry = objects[name]
    return make_refnode(app.builder, node["refdoc"], entry.docname, entry.node_id, contnode,
                        name)


def setup(app):
    app.connect("missing-reference", resolve_short_name)
