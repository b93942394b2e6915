"""Test-session settings inherited by the notebook kernels that nbval starts.

The notebooks read ``GSME_NOTEBOOK_SIZE`` in their parameter cell: CI runs them small. A
value already set in the environment wins. ``MPLBACKEND=Agg`` draws without a display.
"""

import os

os.environ.setdefault("GSME_NOTEBOOK_SIZE", "small")
os.environ.setdefault("MPLBACKEND", "Agg")
