"""The ``gsme`` command: demo, run, resume, status, report, verify, view, compare, plan, grow,
export.

Bad input (a missing or invalid config, a damaged or busy run directory) gets one line on
stderr and exit code 2, never a traceback; an interrupted command says how to resume and
exits 130. ``gsme verify`` exits 3 when a run shows tampering.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import signal
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported by the commands that use it: `gsme --help` needs no pandas
    import pandas as pd

__all__ = ["EXIT_INTERRUPTED", "EXIT_TAMPERED", "EXIT_USAGE", "main"]

EXIT_USAGE = 2
EXIT_TAMPERED = 3
EXIT_INTERRUPTED = 130


def main(argv: list[str] | None = None) -> int:
    """Run the ``gsme`` command line; return its exit code.

    Examples
    --------
    >>> from gsme.experiments import simulated_run
    >>> run = simulated_run("tiny", rounds=1)
    >>> run.close()
    >>> main(["verify", str(run.path)])
    ok
    0
    """
    from gsme import __version__

    given = sys.argv[1:] if argv is None else argv
    parser = _parser(__version__, commands=[a for a in given if not a.startswith("-")][:1])
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:  # what completed is written: only the interpreter's exit is left
        if argv is None:  # the command (not a caller's process): a late Ctrl-C changes nothing
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        print("gsme: interrupted; every completed trial is kept (gsme resume DIR continues)",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. `gsme status DIR | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except _user_errors() as err:
        print(f"gsme: error: {_one_line(err)}", file=sys.stderr)
        return EXIT_USAGE
    except sqlite3.DatabaseError as err:  # a ledger damaged past what opening it checks
        print(f"gsme: error: the run's ledger is damaged ({_one_line(err)})", file=sys.stderr)
        return EXIT_USAGE


def _user_errors() -> tuple[type[BaseException], ...]:
    from git import GitError

    from gsme.gitrepo import RepoError
    from gsme.patches import PatchError
    from gsme.run import RunError
    from gsme.schema import FrameError
    from gsme.scoring import InfraError
    from gsme.settings import ConfigError

    return (ConfigError, RunError, FrameError, PatchError, InfraError, RepoError, GitError,
            OSError)  # a missing file, a name too long, a full disk: one line each


def _parser(version: str, *, commands=None) -> argparse.ArgumentParser:
    """The ``gsme`` parser: every command listed, the arguments added of ``commands`` only
    (names; None: every command's), so ``gsme --help`` and ``--version`` import nothing a
    command needs (pandas, NumPy, SciPy, the settings' models)."""
    parser = argparse.ArgumentParser(
        prog="gsme", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Evolve an agent's harness and credit only the gains a paired test "
        "shows;\nthe final claim is sealed on a test split scored once.",
        epilog=_registered())
    parser.add_argument("--version", action="version", version=f"gsme {version}")
    sub = parser.add_subparsers(required=True, metavar="COMMAND")
    for name, (summary, arguments) in _COMMANDS.items():
        command = sub.add_parser(name, help=summary)
        if commands is None or name in commands:
            arguments(command)
    return parser


def _registered() -> str:
    """Every registered name by kind, for ``gsme --help`` (read from :mod:`gsme.registry`
    without importing a registered object)."""
    from gsme.registry import REGISTRIES

    return "\n".join(["registered names by entry point group, where a package adds its own "
                      "(gsme.registry):",
                      *(f"  {where.group}: {', '.join(where.names())}" for where in REGISTRIES)])


def _demo_arguments(demo) -> None:
    from gsme.registry import DESIGNS, POLICIES
    from gsme.settings import GateConfig, RunConfig, Schedule
    from gsme.sim import DEFAULT_MIX, MIXES, PRESETS, PROFILES

    schedule, gate = Schedule(), GateConfig()

    demo.add_argument("--preset", default="tb2", choices=PRESETS,
                      help="simulated task suite (default: tb2)")
    demo.add_argument("--profile", default=None, choices=list(PROFILES),
                      help="simulated model profile (default: the preset's own)")
    demo.add_argument("--mix", default=DEFAULT_MIX, type=_mix_option, metavar="MIX",
                      help="the simulated world of proposals, what patches truly do: one of "
                           f"{', '.join(MIXES)} (default: {DEFAULT_MIX}; see gsme.sim.MIXES), "
                           "a TOML file stating one (name = \"mine\", fix = 0.2, [targeted] "
                           "fix = 1.5) or the same inline: '{ name = \"mine\", fix = 0.2, "
                           "targeted = { fix = 1.5 } }'")
    demo.add_argument("--rounds", type=int, default=None,
                      help=f"evolution rounds (default: {schedule.rounds})")
    demo.add_argument("--children", type=int, default=None,
                      help=f"children proposed per round (default: "
                           f"{schedule.children_per_round})")
    demo.add_argument("--seed", type=int, default=0,
                      help="seeds the simulated suite, the run and the evolver (default: 0)")
    demo.add_argument("--policy", default=None, choices=POLICIES.names(),
                      help=f"which children are kept: {_listed(POLICIES)} (default: "
                           f"{RunConfig().policy})")
    demo.add_argument("--learn-from", type=Path, default=None, metavar="CSV",
                      help="a comparisons file of earlier runs the learned policy learns from; "
                           "this run's comparisons are appended when it is sealed")
    demo.add_argument("--design", default=None, choices=DESIGNS.names(),
                      help=f"the significance gate's design: {_listed(DESIGNS)} (default: "
                           f"{gate.design})")
    demo.add_argument("--gate", dest="design", choices=DESIGNS.names(), action=_Renamed,
                      now="--design", help=argparse.SUPPRESS)
    demo.add_argument("--out", type=Path, default=None,
                      help="run directory to create (default: a new temporary folder)")
    _output_flags(demo, silent=True)
    demo.add_argument("--json", action="store_true", help="print the run table as JSON")
    _executor_flags(demo)
    demo.set_defaults(func=_demo)


def _run_arguments(run) -> None:
    run.add_argument("config", type=Path, help="the config file (see README)")
    _output_flags(run, silent=True)
    run.add_argument("--json", action="store_true", help="print the run table as JSON")
    _executor_flags(run)
    run.set_defaults(func=_run)


def _resume_arguments(resume) -> None:
    resume.add_argument("dir", type=Path, help="the run directory")
    _output_flags(resume, silent=True)
    resume.add_argument("--json", action="store_true", help="print the run table as JSON")
    _executor_flags(resume, stored=True)
    resume.set_defaults(func=_resume)


def _status_arguments(status) -> None:
    status.add_argument("dir", type=Path, help="the run directory")
    status.add_argument("--json", action="store_true", help="print the status as JSON")
    status.set_defaults(func=_status)


def _report_arguments(report) -> None:
    report.add_argument("dir", type=Path, help="the run directory")
    report.add_argument("--json", action="store_true", help="print the run table as JSON")
    report.set_defaults(func=_report)


def _verify_arguments(verify) -> None:
    verify.add_argument("dir", type=Path, help="the run directory")
    verify.set_defaults(func=_verify)


def _view_arguments(show) -> None:
    show.add_argument("dir", type=Path, help="the run directory")
    show.add_argument("--out", type=Path, default=None, metavar="FOLDER",
                      help="the folder to write: index.html and the data it loads on "
                           "demand (default: <run directory name>-view here)")
    show.add_argument("--watch", type=float, nargs="?", const=10.0, default=None,
                      metavar="SECONDS",
                      help="rewrite the page whenever the run changes (checked every SECONDS, "
                           "default 10; an open page reloads itself) until the run is sealed")
    _output_flags(show)
    show.set_defaults(func=_view)


def _compare_arguments(compare) -> None:
    from gsme.importers import CANDIDATE_FROM
    from gsme.registry import DESIGNS, FORMATS

    compare.add_argument("baseline", type=Path, help="the baseline's logs (file or folder)")
    compare.add_argument("child", type=Path, help="the child's logs (file or folder)")
    compare.add_argument("--format", default=None, choices=FORMATS.names(),
                         help=f"log format: {_listed(FORMATS)} (default: detected from the "
                              "baseline's files)")
    compare.add_argument("--design", default=None, choices=DESIGNS.names(),
                         help="the significance gate's design (default: fixed, one look at "
                              "every repeat the logs hold; adaptive needs k_max repeats)")
    compare.add_argument("--candidate-from", default="path", metavar="SOURCE",
                         help=f"what names each side's candidate: {' or '.join(CANDIDATE_FROM)}"
                              " (default: path, the side's file or folder name; log: the name "
                              "the logs record, e.g. the model); Inspect logs also take model, "
                              "task, tag, metadata:FIELD, task_arg:NAME")
    compare.add_argument("--scorer", default=None,
                         help="the scorer that decides pass (Inspect) or the reward key "
                              "(Harbor); needed when the logs carry several")
    compare.add_argument("--score-key", default=None,
                         help="the key of a dict-valued Inspect score")
    compare.add_argument("--threshold", type=float, default=None,
                         help="a trial passes when its score is at least this (Inspect, "
                              "Harbor; default 1)")
    compare.add_argument("--on", default=None, choices=["score", "passed"],
                         help="gate on the trials' scores or on pass/fail (default: score "
                              "when some score is neither 0 nor 1, else passed)")
    compare.add_argument("--split", default=None, choices=["train", "test"],
                         help="the split to compare on (default: the one the logs hold; "
                              "train when they hold both)")
    _output_flags(compare)
    compare.add_argument("--json", action="store_true", help="print the row as one JSON object")
    compare.set_defaults(func=_compare)


def _plan_arguments(plan) -> None:
    from gsme.registry import DESIGNS, FORMATS
    from gsme.settings import REPEAT_SD_PP, TARGET_POWER, GateConfig, RunConfig, Schedule

    schedule, gate = Schedule(), GateConfig()

    plan.add_argument("--tasks", type=int, required=True, help="paired tasks")
    plan.add_argument("--effect", type=float, required=True,
                      help="the true effect to detect, percentage points")
    plan.add_argument("--k", type=int, default=None,
                      help=f"repeats per task and side (default: the gate's, {gate.k})")
    noise = plan.add_mutually_exclusive_group()
    noise.add_argument("--repeat-sd", type=float, default=None,
                       help="sd of one repeat's child-minus-parent outcome, pp (default: "
                            f"{REPEAT_SD_PP:.1f}, the largest pass/fail allows)")
    noise.add_argument("--aa", nargs=2, type=Path, default=None, metavar=("A", "B"),
                       help="estimate the repeat sd from an A/A pair of logs (one harness, "
                            "run twice)")
    plan.add_argument("--format", default=None, choices=FORMATS.names(),
                      help="format of the --aa logs (default: detected)")
    plan.add_argument("--task-sd", type=float, default=0.0,
                      help="spread of the true effect between tasks, pp (default: 0)")
    plan.add_argument("--power", type=float, default=TARGET_POWER,
                      help=f"target power (default: {TARGET_POWER})")
    plan.add_argument("--design", default="all", choices=[*DESIGNS.names(), "all"],
                      help="designs to plan (default: all; adaptive is simulated)")
    cost = plan.add_argument_group(
        "cost of a run", "with any of these, each design's trials, dollars and wall hours of a "
        "round and of a whole run are printed beside its power (gsme.budget.run_plan)")
    cost.add_argument("--cost-per-trial", type=float, default=None, metavar="USD",
                      help="dollars of one trial")
    cost.add_argument("--minutes-per-trial", type=float, default=None, metavar="M",
                      help="minutes of one trial")
    cost.add_argument("--concurrency", type=int, default=None, metavar="C",
                      help=f"trials in flight at once (default: {RunConfig().workers})")
    cost.add_argument("--rounds", type=int, default=None,
                      help=f"evolution rounds (default: {schedule.rounds})")
    cost.add_argument("--children", type=int, default=None,
                      help="candidates per round (default: "
                           f"{schedule.children_per_round + schedule.recombinations_per_round}"
                           f": {schedule.children_per_round} children and "
                           f"{schedule.recombinations_per_round} recombination)")
    cost.add_argument("--test-tasks", type=int, default=None, metavar="N",
                      help="tasks of the sealed split, held out of --tasks (power is of the "
                           "train split they leave)")
    cost.add_argument("--test-dataset", action="store_true",
                      help="the --test-tasks are another dataset ([split] test_dataset): "
                           "all --tasks train")
    plan.add_argument("--json", action="store_true", help="print the plan as one JSON object")
    plan.set_defaults(func=_plan)


def _grow_arguments(grow) -> None:
    grow.add_argument("dir", type=Path, help="the run directory (sealed or not; grown in "
                                             "place, its test split and sealed result "
                                             "untouched)")
    grow.add_argument("--tasks", type=Path, required=True,
                      help="CSV of the grown task table or of its new rows: task_id, split "
                           "(new tasks: train) and the run's feature columns")
    grow.add_argument("--agent", action="append", default=[], metavar="KEY=VALUE",
                      help="change a key of the run's stored [agent] spec so the agent knows "
                           "the new tasks, e.g. --agent grown=20 for a simulated suite "
                           "(repeatable; the value is read as JSON, else as text)")
    _output_flags(grow)
    grow.add_argument("--json", action="store_true",
                      help="print the re-gated decisions as JSON records")
    _executor_flags(grow, stored=True)
    grow.set_defaults(func=_grow)


def _export_arguments(export) -> None:
    from gsme.integrations.mlflow import EXPERIMENT, RUN_ID_TAG, TRACKING_URI_ENV

    export.add_argument("dir", type=Path, help="the run directory (live or sealed)")
    export.add_argument("--mlflow", required=True, nargs="?", const=None, metavar="URI",
                        help="MLflow's tracking URI (http://..., sqlite:///..., file:...; "
                             f"--mlflow alone: ${TRACKING_URI_ENV}); the earlier export of "
                             f"the run (tag {RUN_ID_TAG}) is replaced")
    export.add_argument("--experiment", default=None, metavar="NAME",
                        help=f"the MLflow experiment (default: {EXPERIMENT}; created when "
                             "missing)")
    _output_flags(export)
    export.set_defaults(func=_export)


_COMMANDS = {  # name: (its line in `gsme --help`, what adds its arguments)
    "demo": ("evolve a simulated agent offline, end to end", _demo_arguments),
    "run": ("start a run from a TOML config file", _run_arguments),
    "resume": ("continue a run that stopped or was killed", _resume_arguments),
    "status": ("rounds, budget and archive of a run (read-only)", _status_arguments),
    "report": ("the sealed run's table: train and sealed Δ, z, retention (read-only)",
               _report_arguments),
    "verify": ("check a run's event chain and seal: prints ok (exit 0) or what differs "
               "(exit 3); read-only", _verify_arguments),
    "view": ("write a run as one self-contained HTML page: run table, decisions, archive, "
             "lineage, each candidate's patch and rationale, searchable transcripts "
             "(read-only; live or sealed)", _view_arguments),
    "compare": ("gate two harnesses on eval logs you already have: Δ, z, one-sided p, "
                "decision, pass@k, MDE", _compare_arguments),
    "plan": ("power and MDE of a comparison, and the K or tasks 80%% power needs",
             _plan_arguments),
    "grow": ("add train tasks to a run (its benchmark grew), score its candidates on them "
             "and re-gate its decisions", _grow_arguments),
    "export": ("write a run to MLflow: a parent run (config, run table) and a nested run per "
               "candidate (decision, patch); re-exporting replaces (read-only)",
               _export_arguments),
}
"""Every command, in the order ``gsme --help`` lists them; a command's arguments are added
only when it is chosen (:func:`_parser`), so ``gsme --help`` imports nothing it needs."""


def _output_flags(parser, *, silent: bool = False) -> None:
    """``--quiet`` (no progress bars) and, for a command that prints more than its answer,
    ``--silent``: the one place both are defined. Read them with :func:`_bars`."""
    parser.add_argument("--quiet", action="store_true",
                        help="no progress bars (shown on a terminal only); every line stays")
    if silent:
        parser.add_argument("--silent", action="store_true",
                            help="print only the ship line (with --json: the run table's "
                                 "JSON object) and errors: no progress bars, banner, round "
                                 "lines, run table or run directory")
    parser.set_defaults(silent=False)


class _Renamed(argparse.Action):
    """An option's name before 0.3.0, kept for one release: it sets the option it was renamed
    to and says so on stderr."""

    def __init__(self, option_strings, dest, *, now: str, **kwargs):
        self.now = now
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        from gsme._renamed import GOES_IN

        print(f"gsme: {option_string} is now {self.now} (the old name goes in {GOES_IN})",
              file=sys.stderr)
        setattr(namespace, self.dest, values)


def _bars(args) -> bool:
    """Whether progress bars may show (on a terminal): neither ``--quiet`` nor ``--silent``."""
    return not (args.quiet or args.silent)


def _executor_flags(parser, *, stored: bool = False) -> None:
    from gsme.registry import EXECUTORS

    where = "the run's stored [executor]" if stored else "the config's [executor] table"
    parser.add_argument("--executor", default=None, metavar="KIND",
                        help=f"what runs the trials: {', '.join(EXECUTORS)} (default: {where}, "
                             "else threads of [run] workers)")
    parser.add_argument("--executor-opt", action="append", default=[], metavar="KEY=VALUE",
                        help="an executor setting (repeatable; VALUE read as JSON, else as "
                             "text), e.g. workers=8 or address=tcp://10.0.0.5:8786")


def _executor_spec(stored: dict | None, args) -> dict | None:
    """The executor spec ``--executor`` and ``--executor-opt`` make of ``stored`` (a new
    kind drops the stored settings; options alone change the stored or default kind)."""
    spec = dict(stored) if stored else None
    if args.executor is not None and (spec is None or spec.get("kind") != args.executor):
        spec = {"kind": args.executor}
    options = _key_values(args.executor_opt, "--executor-opt")
    if options:
        spec = {"kind": "threads", **(spec or {}), **options}
    return spec


def _listed(registry) -> str:
    """``name (what it does), ...`` for every object of a registry, for help texts."""
    listed = ", ".join(f"{name} ({registry.get(name).summary})" if registry.get(name).summary
                       else name for name in registry.names())
    return listed.replace("%", "%%")  # argparse formats help texts with %


def _demo(args) -> int:
    from gsme.config import RunSpec
    from gsme.settings import ConfigError, RunConfig, Schedule, ValidationError, describe

    updates = {k: v for k, v in (("rounds", args.rounds),
                                 ("children_per_round", args.children)) if v is not None}
    gate = {} if args.design is None else {"design": args.design}
    try:
        schedule = Schedule(**updates)
        learn_from = None if args.learn_from is None else str(args.learn_from.resolve())
        chosen = {k: v for k, v in (("policy", args.policy), ("learn_from", learn_from))
                  if v is not None}
        config = RunConfig(run_seed=args.seed, gate=gate, **chosen)
    except ValidationError as err:
        raise ConfigError(describe(err, table="demo")) from None
    out = args.out or Path(tempfile.mkdtemp(prefix=f"gsme-demo-{args.preset}-"))
    args.temporary = args.out is None
    spec = RunSpec(dir=out, config=config, schedule=schedule,
                   agent={"kind": "sim", "preset": args.preset, "suite_seed": args.seed,
                          "mix": args.mix,
                          **({"profile": args.profile} if args.profile else {})},
                   evolver={"kind": "rule", "seed": args.seed},
                   executor=_executor_spec(None, args))
    mix = args.mix if isinstance(args.mix, str) else args.mix["name"]
    return _start(spec, args, banner=f"gsme demo: SIMULATED agent ({args.preset}, {mix} "
                                     f"proposals), rule evolver, run directory {out}")


def _mix_option(text: str) -> str | dict:
    """``--mix``: a registered name as it is; a TOML file or an inline table as the mix's
    table (checked now, stored in the run's agent spec so ``gsme resume`` rebuilds it)."""
    import tomllib

    from gsme.sim.catalogue import MIXES, as_mix

    if text in MIXES:
        return text
    try:
        if text.lstrip().startswith("{"):
            table = tomllib.loads(f"mix = {text}")["mix"]
        elif text.endswith(".toml") or Path(text).is_file():
            table = tomllib.loads(Path(text).read_text(encoding="utf-8"))
        else:
            raise ValueError(f"must be one of {list(MIXES)}, a TOML file or an inline table "
                             f"{{ name = \"mine\", fix = 0.5 }}, got {text!r}")
        as_mix(table)
    except (OSError, tomllib.TOMLDecodeError, ValueError) as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return table


def _run(args) -> int:
    from gsme import config

    spec = config.load(args.config)
    return _start(dataclasses.replace(spec, executor=_executor_spec(spec.executor, args)), args)


def _start(spec, args, *, banner: str | None = None) -> int:
    """Create the run (every check passed), print ``banner``, then drive it."""
    from gsme import plugins
    from gsme.run import Run

    executor = _executor(spec.executor)  # a bad setting stops before the run is created
    with Run.create(spec.dir, agent=plugins.build_agent(spec.agent),
                    evolver=plugins.build_evolver(spec.evolver), run_config=spec.config,
                    schedule=spec.schedule, agent_spec=spec.agent,
                    evolver_spec=spec.evolver, executor_spec=spec.executor) as run:
        if banner and not (args.json or args.silent):
            print(banner)
        return _drive(run, args, executor)


def _resume(args) -> int:
    from gsme.run import Run, RunError

    with Run.open(args.dir) as run:
        if run.schedule is None:
            raise RunError(f"{args.dir} was not started by `gsme run`; resume it from Python "
                           "(gsme.evolve.evolve(run, rounds=...))")
        return _drive(run, args, _executor(_executor_spec(run.executor_spec, args)))


def _executor(spec: dict | None):
    """The executor of ``spec`` (None: scoring's default)."""
    from gsme import plugins

    return None if spec is None else plugins.build_executor(spec)


def _drive(run, args, executor=None) -> int:
    from gsme import evolve, measure, report

    try:
        if not run.sealed:
            evolve.evolve(run, executor=executor, progress=_bars(args),
                          on_round=lambda result: _print_round(
                              evolve.round_summary(run, result), args))
            stops = [p["reason"] for p in run.events("budget_reached")["payload"]
                     if "reason" in p]
            said = not (args.json or args.silent)
            if stops and said:
                print(f"evolution stopped by its budget: {stops[-1]}", flush=True)
            empty = evolve.empty_stop(run)
            if empty is not None and said:
                print(f"evolution stopped: {empty}; on to the sealed test", flush=True)
        measure.finalize(run, executor=executor, progress=_bars(args))
    finally:
        if executor is not None:
            executor.close()
    table = report.run_table(run)
    if args.silent and not args.json:
        print(report.ship_line(report.recommendation(table)))
        return 0
    if _print_report(table, as_json=args.json):
        return 0
    print(f"run directory: {run.path}")
    if getattr(args, "temporary", False):
        print(f"(a temporary folder made for this demo: `gsme view {run.path}` shows it, "
              f"`rm -rf {run.path}` removes it)")
    return 0


def _print_round(summary: dict, args) -> None:
    """One line per round: JSON with ``--json``, nothing with ``--silent``."""
    from tqdm.auto import tqdm

    if args.silent:
        return
    if args.json:
        plain = {k: None if isinstance(v, float) and math.isnan(v) else v
                 for k, v in summary.items()}
        print(json.dumps(plain, default=str), flush=True)
        return
    budget = "" if summary["trial_budget"] is None else f" of {summary['trial_budget']}"
    best = ("best: baseline" if summary["best"] is None else
            f"best {summary['best']} {_signed(summary['best_delta_pp'])} pp train Δ vs "
            f"baseline (first {summary['k']} repeats)")
    made = (f"no child of {summary['parent']}: {summary['empty_reason']}"
            if summary["children"] == 0 else
            f"{summary['children']} children of {summary['parent']}, {summary['kept']} kept, "
            f"{summary['credited']} credited, {summary['culled']} culled")
    tqdm.write(f"round {summary['round']}: {made}; {summary['trials_spent']}{budget} "
               f"trials spent; {best}")


def _status(args) -> int:
    import pandas as pd

    from gsme import archive, budget, explain, report
    from gsme.run import Run

    with Run.open(args.dir, read_only=True) as run:
        arch = run.archive()
        labels = run.vocabulary.labels
        n_cells = len(labels) * 4
        summary = archive.summary(arch, n_cells=max(n_cells, len(arch), 1)).iloc[0]
        spent = budget.account(run).iloc[0]
        stops = run.events("budget_reached")["payload"]
        stopped = next((p["reason"] for p in stops if "reason" in p), None)
        state = {"run": str(run.path), "agent": run.agent.name,
                 "simulated": bool(run.agent.simulated), "policy": run.config.policy,
                 "gate": run.config.gate.design,
                 "rounds_done": run.rounds_done(),
                 "rounds": None if run.schedule is None else run.schedule.rounds,
                 "trials_spent": run.trials_spent(),
                 "trial_budget": None if run.schedule is None else run.schedule.trial_budget,
                 "usd_spent": _known(spent["usd"]),
                 "budget_usd": None if run.schedule is None else run.schedule.budget_usd,
                 "hours_spent": _known(spent["hours"]),
                 "budget_hours": None if run.schedule is None else run.schedule.budget_hours,
                 "budget_stop": stopped,
                 "sealed": ("yes" if run.sealed_result is not None else
                            "sealing (test split partly scored)" if run.sealed else "no"),
                 "elites": int(summary["num_elites"]), "cells": n_cells,
                 "coverage": float(summary["coverage"]),
                 "best": summary["best_candidate"],
                 "best_train_rate": _best_rate(explain.train_rates(run),
                                               summary["best_candidate"]),
                 "k": run.config.gate.k, "ship": report.run_ship_line(run)}
        if args.json:
            print(json.dumps(state, default=str))
            return 0
        budget = f" of {state['trial_budget']}" if state["trial_budget"] else ""
        print(f"run {state['run']}  agent={state['agent']}"
              f"{' (SIMULATED)' if state['simulated'] else ''}  policy={state['policy']}  "
              f"gate={state['gate']}")
        print(f"rounds done: {state['rounds_done']} of {state['rounds'] or '?'}")
        print(f"trials spent: {state['trials_spent']}{budget}")
        for unit, key in (("$", "usd"), ("hours", "hours")):
            limit = state[f"budget_{key}"]
            print(f"{unit} spent: {_number(state[f'{key}_spent'])}"
                  f"{'' if limit is None else f' of {limit:g}'}")
        if stopped is not None:
            print(f"evolution stopped by its budget: {_printable(stopped)}")
        print(f"sealed: {state['sealed']}")
        print(f"archive: {state['elites']} elite(s) in {n_cells} cells "
              f"(coverage {state['coverage']:.0%}), best {state['best'] or 'baseline'}: "
              f"train rate {_number(state['best_train_rate'])} (first {state['k']} repeats "
              "of every task)")
        if not arch.empty:
            cells = archive.occupancy(explain.archive_table(run), why_levels=labels)
            print("train rate of each cell's elite (first "
                  f"{state['k']} repeats of every task; - empty):")
            print(cells.dropna(how="all", axis=1).map(
                lambda v: "-" if pd.isna(v) else _number(v)).to_string())
        print(_printable(state["ship"]))
    return 0


def _best_rate(rates: pd.DataFrame, best) -> float:
    """The train rate of ``best`` (the baseline's when None) in :func:`gsme.explain.train_rates`."""
    import pandas as pd

    name = "baseline" if best is None or pd.isna(best) else best
    found = rates.loc[rates["candidate"] == name, "rate"]
    return float(found.iloc[0]) if len(found) else float("nan")


def _report(args) -> int:
    from gsme import report
    from gsme.run import Run, RunError

    with Run.open(args.dir, read_only=True) as run:
        if run.sealed_result is None:
            raise RunError(f"{args.dir} is not sealed yet; its report exists once the test "
                           "split is scored (gsme resume DIR finishes the run)")
        _print_report(report.run_table(run), as_json=args.json)
    return 0


def _verify(args) -> int:
    from gsme.run import verify

    found = verify(args.dir)
    print("ok" if not found else "; ".join(found))
    return EXIT_TAMPERED if found else 0


def _view(args) -> int:
    from gsme import report, view
    from gsme.run import Run

    out = args.out or Path(f"{Path(args.dir).resolve().name}-view")
    seen = None
    while True:
        with Run.open(args.dir, read_only=True) as run:
            sealed = run.sealed_result is not None  # a sealed run's page does not change
            page = view.write(run, out, refresh=None if sealed else args.watch,
                              progress=_bars(args))
            line = report.run_ship_line(run)
        print(f"gsme view: wrote {page} (open it in a browser)")
        print(_printable(line))
        if args.watch is None or sealed:
            return 0
        seen = _ledger_changed(Path(args.dir), seen, every=args.watch)


def _ledger_changed(folder: Path, seen, *, every: float):
    """Wait until the run's ledger changes from ``seen`` (its size and time; None: as it is
    now); return what it is then. Ctrl-C ends ``gsme view --watch`` here."""
    from gsme.run import Run

    ledger = folder / Run.LEDGER
    files = (ledger, ledger.with_name(ledger.name + "-wal"))  # SQLite's write-ahead log

    def stamp():
        return tuple((p.stat().st_size, p.stat().st_mtime_ns) for p in files if p.exists())

    seen = stamp() if seen is None else seen
    try:
        while (now := stamp()) == seen:
            time.sleep(every)
    except KeyboardInterrupt:
        raise SystemExit(0) from None
    return now


_IDS_SHOWN = 20
"""Task ids ``gsme compare`` prints per direction (``--json`` gives every one)."""


def _compare(args) -> int:
    from tqdm import tqdm

    from gsme import compare, importers, schema
    from gsme.settings import ConfigError, GateConfig

    gate = compare.LOGS_GATE if args.design is None else GateConfig(design=args.design)
    with tqdm(total=2, desc="gsme compare: reading the logs", unit="step", leave=False,
              disable=None if _bars(args) else True, file=sys.stderr) as bar:  # a terminal's
        imported = importers.read_pair(args.baseline, args.child, format=args.format,
                                       candidate_from=args.candidate_from, scorer=args.scorer,
                                       score_key=args.score_key, threshold=args.threshold)
        bar.set_description(f"gsme compare: gating {len(imported.trials):,} trials")
        bar.update()
        parent, child = imported.trials["candidate"].unique()
        held = set(imported.trials["split"])
        split = args.split or ("test" if held == {"test"} else "train")
        try:
            row = compare.compare(imported.trials, parent=parent, child=child, gate=gate,
                                  on=args.on, split=split)
        except ValueError as err:
            raise ConfigError(str(err)) from None
        bar.update()
    dropped = imported.dropped
    if args.json:
        print(row.assign(n_not_imported=len(dropped)).iloc[0].to_json(
            default_handler=str, double_precision=15))
        return 0
    counts = imported.trials.groupby("candidate", sort=False).size()
    print(f"gsme compare: {parent} ({counts[parent]} trials, {args.baseline}) vs "
          f"{child} ({counts[child]} trials, {args.child}); {gate.design} gate on "
          f"{row['outcome'].iloc[0]}")
    _print_frame(row.drop(columns=["tasks_up", "tasks_down"]).T, header=False)
    for direction in ("up", "down"):
        ids = schema.split_ids(row[f"tasks_{direction}"].iloc[0])
        more = (f" and {len(ids) - _IDS_SHOWN:,} more (--json lists all)"
                if len(ids) > _IDS_SHOWN else "")
        print(f"moved {direction} ({len(ids):,}): {','.join(ids[:_IDS_SHOWN]) or '-'}{more}")
    print(f"infrastructure failures, not scored: {parent} {row['n_infra_parent'].iloc[0]}, "
          f"{child} {row['n_infra_child'].iloc[0]} repeat(s)")
    if len(dropped):
        print(f"not imported: {len(dropped)} item(s)")
        for reason, n in dropped.groupby("reason", sort=False).size().items():
            print(f"  {n} x {reason}")
    return 0


def _plan(args) -> int:

    from gsme import compare, importers
    from gsme.settings import REPEAT_SD_PP, ConfigError

    repeat_sd, source = args.repeat_sd, "given"
    if args.aa is not None:
        imported = importers.read_pair(args.aa[0], args.aa[1], format=args.format)
        first, second = imported.trials["candidate"].unique()
        repeat_sd = compare.repeat_sd_from_aa(imported.trials, candidate=first, rerun=second)
        source = f"A/A estimate from {first} vs {second}"
    elif repeat_sd is None:
        repeat_sd, source = REPEAT_SD_PP, "default: the largest pass/fail allows"
    designs = None if args.design == "all" else (args.design,)
    costed = [a for a in ("cost_per_trial", "minutes_per_trial", "concurrency", "rounds",
                          "children", "test_tasks") if getattr(args, a) is not None]
    if args.test_dataset and args.test_tasks is None:
        raise ConfigError("--test-dataset needs --test-tasks N, the size of the test dataset")
    try:
        if costed or args.test_dataset:
            return _plan_cost(args, repeat_sd=repeat_sd, source=source, designs=designs)
        table = compare.plan(n_tasks=args.tasks, effect_pp=args.effect, k=args.k,
                             repeat_sd_pp=repeat_sd, task_sd_pp=args.task_sd,
                             power=args.power, designs=designs)
    except ValueError as err:
        raise ConfigError(str(err)) from None
    if args.json:
        print(json.dumps({"repeat_sd_source": source,
                          "designs": json.loads(table.to_json(orient="records",
                                                              double_precision=15))}))
        return 0
    print(f"gsme plan: {args.tasks} tasks, effect {args.effect:g} pp, repeat sd "
          f"{repeat_sd:.3g} pp ({source})")
    _print_frame(table.set_index("design").T)
    for line in _plan_notes(table, compare.MAX_K, compare.MAX_TASKS):
        print(line)
    return 0


def _plan_cost(args, *, repeat_sd: float, source: str, designs) -> int:
    """``gsme plan`` with a cost option: :func:`gsme.budget.run_plan`, printed."""
    from gsme import budget
    from gsme.settings import RunConfig, Schedule

    schedule, nan = Schedule(), float("nan")
    rounds = schedule.rounds if args.rounds is None else args.rounds
    per_round = (schedule.children_per_round + schedule.recombinations_per_round
                 if args.children is None else args.children)
    assumed = {"cost_per_trial_usd": nan if args.cost_per_trial is None else args.cost_per_trial,
               "minutes_per_trial": (nan if args.minutes_per_trial is None
                                     else args.minutes_per_trial),
               "concurrency": RunConfig().workers if args.concurrency is None
               else args.concurrency,
               "rounds": rounds, "candidates_per_round": per_round,
               "test_tasks": args.test_tasks or 0, "test_dataset": args.test_dataset}
    table = budget.run_plan(
        n_tasks=args.tasks, effect_pp=args.effect, **{k: v for k, v in assumed.items()
                                                      if k != "candidates_per_round"},
        children=per_round, recombinations=0, k=args.k, repeat_sd_pp=repeat_sd,
        task_sd_pp=args.task_sd, power=args.power, designs=designs)
    if args.json:
        print(json.dumps({**{k: _known(v) if isinstance(v, float) else v
                             for k, v in assumed.items()}, "repeat_sd_source": source,
                          "designs": json.loads(table.to_json(orient="records",
                                                              double_precision=15))}))
        return 0
    split = ("no sealed test counted (--test-tasks N counts it)" if not args.test_tasks else
             f"sealed split: {args.test_tasks} tasks of another dataset" if args.test_dataset
             else f"sealed split: {args.test_tasks} of them")
    print(f"gsme plan: {args.tasks} tasks ({split}), effect {args.effect:g} pp, repeat sd "
          f"{repeat_sd:.3g} pp ({source})")
    print(f"a run: cold start, {rounds} rounds of {per_round} candidates, the sealed test; "
          f"${_number(args.cost_per_trial)} and {_number(args.minutes_per_trial)} min a "
          f"trial, {assumed['concurrency']} trials at once, no trial borrowed")
    _print_frame(table.set_index("design").T)
    return 0


def _plan_notes(table: pd.DataFrame, max_k: int, max_tasks: int) -> list[str]:
    """What each n/a or zero in a plan means, in words."""
    notes = []
    for row in table.itertuples():
        target = f"{row.target_power:.0%} power"
        if row.method == "simulated":
            notes.append(f"{row.design}: k_needed and n_tasks_needed are computed for "
                         f"analytic plans only (the {row.design} design is simulated)")
            if row.power == 0:
                notes.append(f"{row.design}: power 0: none of the simulated comparisons was "
                             f"credited with {row.n_tasks} tasks (too few for its boundaries)")
        elif math.isnan(row.k_needed):
            notes.append(f"{row.design}: k_needed n/a: no K up to {max_k} reaches {target} "
                         f"with {row.n_tasks} tasks; more tasks are needed")
        if row.method == "analytic" and math.isnan(row.n_tasks_needed):
            notes.append(f"{row.design}: n_tasks_needed n/a: no number of tasks up to "
                         f"{max_tasks:,} reaches {target} at K = {row.k}")
        if math.isnan(row.mde_pp):
            notes.append(f"{row.design}: mde_pp n/a: even a 100 pp effect is not detected "
                         f"with {target} by {row.n_tasks} tasks")
    return notes


def _grow(args) -> int:
    import pandas as pd

    from gsme import plugins
    from gsme.grow import grow, read_tasks
    from gsme.run import Run
    from gsme.settings import ConfigError

    tasks = read_tasks(args.tasks)
    spec, agent = None, None
    if args.agent:
        with Run.open(args.dir, read_only=True) as stored:
            spec = dict(stored.agent_spec or {})
        if not spec:
            raise ConfigError(f"{args.dir} stores no agent spec (built in Python); grow it "
                              "from Python (gsme.grow.grow)")
        spec.update(_key_values(args.agent, "--agent"))
        agent = plugins.build_agent(spec)
    with Run.open(args.dir, agent=agent) as run:
        before = _grown_so_far(run)
        executor = _executor(_executor_spec(run.executor_spec, args))
        try:
            table = grow(run, tasks, agent_spec=spec, executor=executor, progress=_bars(args))
        finally:
            if executor is not None:
                executor.close()
        after = _grown_so_far(run)
        simulated, n_train = run.agent.simulated, len(run.tasks("train"))
    now = {key: after[key] - before[key] for key in after}
    shown = table[["child", "parent", "decision_before", "decision", "changed",
                   "n_tasks", "delta_pp", "z"]]
    if args.json:
        print(shown.to_json(orient="records", double_precision=15))
        return 0
    if simulated:
        print("SIMULATED results (embedded simulator)")
    print(f"gsme grow: {args.dir} has {n_train} train tasks, {after['added']} added by growing "
          f"({now['added']} by this call); this call ran {now['ran']} trials and borrowed "
          f"{now['borrowed']}; {int(table['changed'].sum())} of {len(table)} decisions changed")
    with pd.option_context("display.width", 120, "display.float_format", "{:.3g}".format):
        print(shown.to_string(index=False))
    return 0


def _grown_so_far(run) -> dict[str, int]:
    """Tasks added by growing, train trials run and borrowed: so far, all calls together."""
    added = {t for ids in run.events("tasks_added")["payload"] for t in ids["task_ids"]}
    borrowed = run.trials(split="train")["borrowed_from"].notna()
    return {"added": len(added), "ran": int((~borrowed).sum()), "borrowed": int(borrowed.sum())}


def _export(args) -> int:
    from gsme.integrations import mlflow
    from gsme.run import Run

    try:
        with Run.open(args.dir, read_only=True) as run:
            done = mlflow.export(run, args.mlflow, experiment=args.experiment,
                                 progress=_bars(args))
    except (ImportError, mlflow.ExportError) as err:
        print(f"gsme: error: {_one_line(err)}", file=sys.stderr)
        return EXIT_USAGE
    replaced = f"; replaced {len(done.replaced)} runs of the earlier export" if done.replaced \
        else ""
    print(f"gsme export: {args.dir} -> {done.tracking_uri} experiment {done.experiment_id}: "
          f"parent run {done.parent_run_id}, {len(done.runs) - 1} candidate runs{replaced}")
    return 0


def _key_values(items: list[str], flag: str) -> dict:
    """``KEY=VALUE`` arguments as a dict, each value read as JSON, else kept as text."""
    from gsme.settings import ConfigError

    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{flag} expects KEY=VALUE, got {item!r}")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


def _print_report(table, *, as_json: bool) -> bool:
    """A sealed run's ship line and table (one JSON object with ``as_json``); True when
    JSON was printed."""
    from gsme import report

    line = report.ship_line(report.recommendation(table))
    if as_json:
        print(table.assign(ship=line).iloc[0].to_json(default_handler=str))
        return True
    print(line)
    _print_table(table)
    return False


def _print_table(table: pd.DataFrame) -> None:
    """The run table, one field a line, under what its rates and Δ are measured on."""
    if bool(table["simulated"].iloc[0]):
        print("SIMULATED results (embedded simulator; true effects from its ground truth)")
    k = next(name for name in table.columns if name.startswith("pass_at_")).split("_")[2]
    print(f"(rates, Δ and pass@{k}: the selected harness and the baseline over the first {k} "
          "repeats of every task; Δ = selected - baseline; p one-sided)")
    row = table.iloc[0]
    width = max(map(len, row.index))
    for name, value in row.items():
        print(f"{name:<{width}}  {_number(value, p=_is_p(name))}")


def _is_p(name: str) -> bool:
    """True for a column holding a p-value (``p_one_sided``, ``train_p_one_sided``, ...)."""
    return "_p_" in name or name.startswith("p_")


def _print_frame(frame: pd.DataFrame, *, header: bool = True) -> None:
    """A table whose rows are fields (their names in the index), numbers as
    :func:`_number` writes them."""
    shown = frame.copy().astype(object)
    for name in frame.index:
        p = _is_p(str(name))
        shown.loc[name] = [_number(v, p=p) for v in frame.loc[name]]
    print(shown.to_string(header=header))


def _known(value: float) -> float | None:
    """A figure for JSON: None where it is unknown (NaN)."""
    return None if math.isnan(value) else float(value)


def _signed(value: float) -> str:
    return _number(value, signed=True)


def _number(value, *, p: bool = False, signed: bool = False) -> str:
    """A value as :func:`gsme.report.number` writes it (the one formatter of every
    surface), a text made printable (:func:`_printable`)."""
    from gsme.report import number

    return _printable(value) if isinstance(value, str) else number(value, p=p, signed=signed)


def _one_line(err: BaseException) -> str:
    """The error's first line; when it ends in ":" (a list follows), with the list's first
    item, so the line still says what is wrong. Printable (:func:`_printable`): an error
    may quote a trial's stderr or an evolver's text, whose carriage returns and other line
    breaks but ``\\n`` are escaped, not taken as the end of the line."""
    lines = [line.strip() for line in str(err).strip().split("\n") if line.strip()]
    if not lines:
        return type(err).__name__
    if lines[0].endswith(":") and len(lines) > 1 and lines[1].startswith("- "):
        return _printable(f"{lines[0]} {lines[1][2:]}")
    return _printable(lines[0])


_ESCAPED = {code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7f, 0xa0))} | {
    code: f"\\u{code:04x}" for code in (0x200e, 0x200f, 0x2028, 0x2029, *range(0x202a, 0x202f),
                                         *range(0x2066, 0x206a))}


def _printable(text: str) -> str:
    """``text`` with every control character written as an escape (``\\x1b``, ``\\u202e``):
    terminal escape sequences, carriage returns, newlines and bidirectional overrides from a
    trial or an evolver cannot drive the terminal or break a line in two. What is stored
    keeps the text as it was; only what is printed is escaped."""
    return text.translate(_ESCAPED)


if __name__ == "__main__":
    raise SystemExit(main())
