"""The ``gsme`` command: demo, run, resume, status, report, verify, view, compare, plan, grow,
export.

Bad input (a missing or invalid config, a damaged or busy run directory) gets one line on
stderr and exit code 2, never a traceback; an interrupted command says how to resume and
exits 130. ``gsme verify`` exits 3 when a run shows tampering.
"""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import sys
from pathlib import Path

from gsme import _cli_common, _cli_compare, _cli_runs
from gsme._cli_common import EXIT_INTERRUPTED, EXIT_TAMPERED, EXIT_USAGE

__all__ = ["EXIT_INTERRUPTED", "EXIT_TAMPERED", "EXIT_USAGE", "main"]


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
        print(f"gsme: error: {_cli_common.one_line(err)}", file=sys.stderr)
        return EXIT_USAGE
    except sqlite3.DatabaseError as err:  # a ledger damaged past what opening it checks
        print(f"gsme: error: the run's ledger is damaged ({_cli_common.one_line(err)})",
              file=sys.stderr)
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
    demo.set_defaults(func=_cli_runs.demo_command)


def _run_arguments(run) -> None:
    run.add_argument("config", type=Path, help="the config file (see README)")
    _output_flags(run, silent=True)
    run.add_argument("--json", action="store_true", help="print the run table as JSON")
    _executor_flags(run)
    run.set_defaults(func=_cli_runs.run_command)


def _resume_arguments(resume) -> None:
    resume.add_argument("dir", type=Path, help="the run directory")
    _output_flags(resume, silent=True)
    resume.add_argument("--json", action="store_true", help="print the run table as JSON")
    _executor_flags(resume, stored=True)
    resume.set_defaults(func=_cli_runs.resume_command)


def _status_arguments(status) -> None:
    status.add_argument("dir", type=Path, help="the run directory")
    status.add_argument("--json", action="store_true", help="print the status as JSON")
    status.set_defaults(func=_cli_runs.status_command)


def _report_arguments(report) -> None:
    report.add_argument("dir", type=Path, help="the run directory")
    report.add_argument("--json", action="store_true", help="print the run table as JSON")
    report.set_defaults(func=_cli_runs.report_command)


def _verify_arguments(verify) -> None:
    verify.add_argument("dir", type=Path, help="the run directory")
    verify.set_defaults(func=_cli_runs.verify_command)


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
    show.set_defaults(func=_cli_runs.view_command)


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
    compare.set_defaults(func=_cli_compare.compare_command)


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
    plan.set_defaults(func=_cli_compare.plan_command)


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
    grow.set_defaults(func=_cli_runs.grow_command)


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
    export.set_defaults(func=_cli_runs.export_command)


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
    ``--silent``: the one place both are defined. Read them with :func:`_cli_common.bars`."""
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


def _executor_flags(parser, *, stored: bool = False) -> None:
    from gsme.registry import EXECUTORS

    where = "the run's stored [executor]" if stored else "the config's [executor] table"
    parser.add_argument("--executor", default=None, metavar="KIND",
                        help=f"what runs the trials: {', '.join(EXECUTORS)} (default: {where}, "
                             "else threads of [run] workers)")
    parser.add_argument("--executor-opt", action="append", default=[], metavar="KEY=VALUE",
                        help="an executor setting (repeatable; VALUE read as JSON, else as "
                             "text), e.g. workers=8 or address=tcp://10.0.0.5:8786")


def _listed(registry) -> str:
    """``name (what it does), ...`` for every object of a registry, for help texts."""
    listed = ", ".join(f"{name} ({registry.get(name).summary})" if registry.get(name).summary
                       else name for name in registry.names())
    return listed.replace("%", "%%")  # argparse formats help texts with %


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


if __name__ == "__main__":
    raise SystemExit(main())
