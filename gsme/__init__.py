"""gsme: evolve LLM agent harnesses with gated crediting and a pathology-keyed archive.

Submodules are imported on first use, so ``import gsme; gsme.stats.paired_test(...)`` works
for every public module (``gsme.measure``, ``gsme.registry``, ``gsme.view``, ...) and
``import gsme`` stays light. The layers, from the core up (see ``ARCHITECTURE.md``):

* core — :mod:`gsme.schema` (frames), :mod:`gsme.settings` (the only defaults),
  :mod:`gsme.registry` (where every extension registers by name), :mod:`gsme.pairing`,
  :mod:`gsme.stats`, :mod:`gsme.power`, :mod:`gsme.gates`, :mod:`gsme.designs`,
  :mod:`gsme.archive`, :mod:`gsme.vocabulary`, :mod:`gsme.envgate`, :mod:`gsme.patches`;
* the run — :mod:`gsme.policy`, :mod:`gsme.plugins`, :mod:`gsme.scoring`,
  :mod:`gsme.ledger`, :mod:`gsme.gitrepo`, :mod:`gsme.run` (the store);
* the loop — :mod:`gsme.evolve`, :mod:`gsme.measure`, :mod:`gsme.experiments`,
  :mod:`gsme.cli`;
* other tools' eval logs — :mod:`gsme.importers`, :mod:`gsme.compare`;
* parts — :mod:`gsme.sim` (the simulated default agent), :mod:`gsme.agents`,
  :mod:`gsme.evolvers`, :mod:`gsme.executors`, :mod:`gsme.suites`; reading —
  :mod:`gsme.report`, :mod:`gsme.view`, :mod:`gsme.analysis`, :mod:`gsme.plot`,
  :mod:`gsme.widgets`, :mod:`gsme.io`.
"""

import importlib
import pkgutil
from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("gsme")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
"""Every public submodule, read from the package's folder (one listing, nothing imported):
a new module is reachable as ``gsme.<module>`` without being listed here."""


def __getattr__(name: str):
    if name in __all__:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
