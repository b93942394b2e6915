"""gsme's bundled data (installed as ``gsme.data``; see :mod:`gsme.resources`)."""
