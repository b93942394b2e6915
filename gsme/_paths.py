"""Where gsme's bundled data lives (the repository's top-level ``data/`` folder)."""

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
SEED_HARNESS = DATA_DIR / "harnesses" / "seed"
