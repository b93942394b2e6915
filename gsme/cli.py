"""The ``gsme`` command: demo, run, resume, status, report.

Bad input (a missing or invalid config, a damaged run directory) gets one clear line on
stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import pandas as pd

EXIT_USAGE = 2


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    from gsme.config import ConfigError
    from gsme.run import RunError
    from gsme.schema import FrameError

    try:
        return args.func(args)
    except (ConfigError, RunError, FrameError, FileNotFoundError) as err:
        print(f"gsme: error: {err}", file=sys.stderr)
        return EXIT_USAGE


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gsme", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(required=True, metavar="COMMAND")

    demo = sub.add_parser("demo", help="evolve a simulated agent offline, end to end")
    demo.add_argument("--preset", default="tb2", help="simulated benchmark (default tb2)")
    demo.add_argument("--profile", default=None, help="simulated model profile")
    demo.add_argument("--rounds", type=int, default=5)
    demo.add_argument("--children", type=int, default=3, help="children per round")
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--policy", default="gated", choices=["gated", "greedy", "peak"])
    demo.add_argument("--out", type=Path, default=None, help="run directory (default: a temp dir)")
    demo.add_argument("--quiet", action="store_true", help="no progress bars")
    demo.set_defaults(func=_demo)

    run = sub.add_parser("run", help="start a run from a TOML config")
    run.add_argument("config", type=Path)
    run.add_argument("--quiet", action="store_true")
    run.set_defaults(func=_run)

    resume = sub.add_parser("resume", help="continue a run that stopped or was killed")
    resume.add_argument("dir", type=Path)
    resume.add_argument("--quiet", action="store_true")
    resume.set_defaults(func=_resume)

    status = sub.add_parser("status", help="round, budget and archive occupancy of a run")
    status.add_argument("dir", type=Path)
    status.set_defaults(func=_status)

    report = sub.add_parser("report", help="the run's table: train Δ, sealed Δ, z, retention")
    report.add_argument("dir", type=Path)
    report.set_defaults(func=_report)
    return parser


def _demo(args) -> int:
    from gsme.config import RunSpec
    from gsme.run import RunConfig

    out = args.out or Path(tempfile.mkdtemp(prefix=f"gsme-demo-{args.preset}-"))
    spec = RunSpec(
        dir=out,
        config=RunConfig(seed=args.seed, policy=args.policy),
        agent={"kind": "sim", "preset": args.preset, "seed": args.seed,
               **({"profile": args.profile} if args.profile else {})},
        evolver={"kind": "rule", "seed": args.seed},
        rounds=args.rounds,
        children_per_round=args.children,
    )
    print(f"gsme demo: SIMULATED agent ({args.preset}), rule evolver, run directory {out}")
    return _start(spec, quiet=args.quiet)


def _run(args) -> int:
    from gsme import config

    return _start(config.load(args.config), quiet=args.quiet)


def _start(spec, *, quiet: bool) -> int:
    from gsme import config
    from gsme.run import Run

    run = Run.create(spec.dir, agent=config.build_agent(spec.agent),
                     evolver=config.build_evolver(spec.evolver), config=spec.config,
                     agent_spec=spec.agent, evolver_spec=spec.evolver)
    run.ledger.put("loop", {"rounds": spec.rounds, "children_per_round": spec.children_per_round,
                            "recombinations_per_round": spec.recombinations_per_round,
                            "trial_budget": spec.trial_budget})
    return _drive(run, quiet=quiet)


def _resume(args) -> int:
    from gsme.run import Run, RunError

    run = Run.open(args.dir)
    if run.ledger.get("loop") is None:
        raise RunError(f"{args.dir} was not started by `gsme run`; resume it from Python")
    return _drive(run, quiet=args.quiet)


def _drive(run, *, quiet: bool) -> int:
    from gsme import evolve, report

    loop = run.ledger.get("loop")
    if not run.sealed:
        evolve.evolve(run, rounds=loop["rounds"], children_per_round=loop["children_per_round"],
                      recombinations_per_round=loop["recombinations_per_round"],
                      trial_budget=loop["trial_budget"], progress=not quiet)
    run.finalize(progress=not quiet)
    _print_table(report.run_table(run))
    print(f"run directory: {run.path}")
    return 0


def _status(args) -> int:
    from gsme import archive, evolve
    from gsme.run import Run

    run = Run.open(args.dir)
    loop = run.ledger.get("loop") or {}
    arch = run.archive()
    print(f"run {run.path}  agent={run.agent.name}  policy={run.config.policy}")
    print(f"rounds done: {evolve.next_round(run) - 1} of {loop.get('rounds', '?')}")
    budget = loop.get("trial_budget")
    print(f"trials spent: {run.trials_spent()}" + (f" of {budget}" if budget else ""))
    print(f"sealed: {run.sealed}")
    print(archive.stats(arch).to_string(index=False))
    if not arch.empty:
        print(archive.occupancy(arch, why_levels=run.vocabulary.labels).to_string())
    return 0


def _report(args) -> int:
    from gsme import report
    from gsme.run import Run

    _print_table(report.run_table(Run.open(args.dir)))
    return 0


def _print_table(table: pd.DataFrame) -> None:
    if bool(table["simulated"].iloc[0]):
        print("SIMULATED results (embedded simulator; true effects from its ground truth)")
    with pd.option_context("display.width", 120, "display.float_format", "{:.3g}".format):
        print(table.T.to_string(header=False))


if __name__ == "__main__":
    raise SystemExit(main())
