"""Sphinx configuration of gsme's documentation.

Build: ``sphinx-build -W -b html docs docs/_build/html`` (``-W``: warnings are errors).
The API reference (``api/``) is written from the code by ``apigen.py`` when the build
starts; autosummary then writes one page per public object (``api/generated/``). Nothing
is executed but the docstrings' import; figures come from matplotlib's plot directive.
"""

import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from apigen import write_api

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
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "README.md"]
root_doc = "index"

# API reference: generated from __all__ each build
write_api(HERE)
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "none"  # numpydoc's Parameters say the types
autodoc_inherit_docstrings = True  # a method implementing an interface shows its doc
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks = set()
numpydoc_xref_param_type = False

intersphinx_mapping = {}

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
