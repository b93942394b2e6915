"""What does ``gsme`` cost before a command runs? CPU seconds of ``gsme --version`` and
``gsme --help``.

Each command runs in a fresh interpreter (the ``gsme`` script beside this Python, else
``python -m gsme.cli``) ``--repeats`` times; the CPU seconds of each (user + system, from
:func:`resource.getrusage` with ``RUSAGE_CHILDREN`` around it) are printed, best and
median, beside the target: at most 0.3 s CPU (issue 33), met or not met on the median.
Nothing heavy (pandas, NumPy, SciPy, pydantic's models) should be imported before a
command is chosen; ``python -X importtime -m gsme.cli --version`` shows what is.

    python benchmarks/bench_startup.py [--repeats 7]
    python benchmarks/bench_startup.py --quick      # 3 repeats
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
from pathlib import Path

TARGET_CPU_S = 0.3
COMMANDS = (("--version",), ("--help",))


def gsme_command() -> list[str]:
    """The installed ``gsme`` script beside this interpreter, else ``python -m gsme.cli``."""
    script = Path(sys.executable).with_name("gsme")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "gsme.cli"]


def cpu_seconds(argv: list[str]) -> float:
    """User + system CPU seconds of one run of ``argv`` (and its children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7, help="runs per command (default: 7)")
    parser.add_argument("--quick", action="store_true", help="3 runs per command")
    args = parser.parse_args(argv)
    repeats = 3 if args.quick else args.repeats
    gsme = gsme_command()
    print(f"gsme start-up: CPU seconds (user + system) of {repeats} runs of {' '.join(gsme)} "
          f"...; target <= {TARGET_CPU_S} s CPU each")
    for extra in COMMANDS:
        runs = [cpu_seconds([*gsme, *extra]) for _ in range(repeats)]
        median = statistics.median(runs)
        verdict = "met" if median <= TARGET_CPU_S else "not met"
        print(f"gsme {' '.join(extra)}: {median:.3f} s CPU median, {min(runs):.3f} s best "
              f"(target <= {TARGET_CPU_S} s: {verdict})")


if __name__ == "__main__":
    main()
