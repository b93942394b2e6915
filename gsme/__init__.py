"""gsme: evolve LLM agent harnesses with gated crediting and a pathology-keyed archive.

Modules: :mod:`gsme.schema` (frame contracts), :mod:`gsme.stats` and :mod:`gsme.gates`
(the statistics and the three gates), :mod:`gsme.archive`, :mod:`gsme.run` and
:mod:`gsme.evolve` (the run store and the loop), :mod:`gsme.sim` (the simulated default
agent), :mod:`gsme.evolvers`, :mod:`gsme.agents`, :mod:`gsme.plot`, :mod:`gsme.report`.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("gsme")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"
