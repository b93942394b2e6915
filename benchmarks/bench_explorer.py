"""Redraw time of the run explorer (``gsme.widgets.explore``) on a simulated run.

Builds the ``tb2`` demo run (seed 0, 5 rounds, sealed; results simulated), opens the
explorer on it read-only and times what a user's clicks cost: building the panel, moving
the round slider (z forest, archive map, archive progress), picking another candidate (z
forest, paired-task plot, patch pane, side-by-side trials) and changing a side-by-side
filter. Each redraw includes rendering the changed figures to PNG.

    python benchmarks/bench_explorer.py [--preset tb2] [--rounds 5] [--repeats 5] [--quick]

Target on a 2-core machine: every redraw at most 0.5 s (median). ``--quick``: the
``tiny`` preset, 1 round, 2 repeats, seconds.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

TARGET_S = 0.5


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="tb2")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="tiny preset, 1 round")
    args = parser.parse_args(argv)
    if args.quick:
        args.preset, args.rounds, args.repeats = "tiny", 1, 2

    from gsme.experiments import simulated_run
    from gsme.run import Run
    from gsme.widgets import explore

    with tempfile.TemporaryDirectory() as root:
        with simulated_run(args.preset, root=root, seed=0, rounds=args.rounds) as run:
            path = run.path
        with Run.open(path, read_only=True) as run:
            start = time.perf_counter()
            panel = explore(run)
            build = time.perf_counter() - start
            last = panel.round.max
            rounds = [last - 1, last]
            picks = [value for _, value in panel.candidate.options][-2:]
            changes = [None, panel.change.options[-1][1]]
            times = {"round slider": [], "candidate pick": [], "side-by-side filter": []}
            for _ in range(args.repeats):
                for r in rounds:
                    times["round slider"].append(_timed(panel.round, r))
                for c in picks:
                    times["candidate pick"].append(_timed(panel.candidate, c))
                for c in changes:
                    times["side-by-side filter"].append(_timed(panel.change, c))
            sizes = {name: len(panel.png(name)) for name in panel.images}
    print(f"SIMULATED run: {args.preset}, {args.rounds} round(s), seed 0; "
          f"{len(picks)} candidates and {len(rounds)} rounds alternated {args.repeats} times")
    print(f"build the panel: {build:.3f} s")
    worst = 0.0
    for name, values in times.items():
        median = statistics.median(values)
        worst = max(worst, median)
        print(f"redraw after the {name}: best {min(values):.3f} s, median {median:.3f} s")
    print("PNG bytes: " + ", ".join(f"{k} {v:,}" for k, v in sizes.items()))
    met = "met" if worst <= TARGET_S else "MISSED"
    print(f"target median redraw <= {TARGET_S} s: {met} (worst median {worst:.3f} s)")


def _timed(control, value) -> float:
    start = time.perf_counter()
    control.value = value
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
