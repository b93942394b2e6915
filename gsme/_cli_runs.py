"""The ``gsme`` commands on a run: demo, run, resume, status, report, verify, view, grow,
export (:mod:`gsme.cli` parses their arguments)."""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from gsme import _cli_common as common

if TYPE_CHECKING:  # imported by the commands that use it: `gsme --help` needs no pandas
    import pandas as pd


def demo_command(args) -> int:
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
                   executor=common.executor_spec(None, args))
    mix = args.mix if isinstance(args.mix, str) else args.mix["name"]
    return start(spec, args, banner=f"gsme demo: SIMULATED agent ({args.preset}, {mix} "
                                     f"proposals), rule evolver, run directory {out}")


def run_command(args) -> int:
    from gsme import config

    spec = config.load(args.config)
    executor = common.executor_spec(spec.executor, args)
    return start(dataclasses.replace(spec, executor=executor), args)


def start(spec, args, *, banner: str | None = None) -> int:
    """Create the run (every check passed), print ``banner``, then drive it."""
    from gsme import plugins
    from gsme.run import Run

    executor = common.executor(spec.executor)  # a bad setting stops before the run is created
    with Run.create(spec.dir, agent=plugins.build_agent(spec.agent),
                    evolver=plugins.build_evolver(spec.evolver), run_config=spec.config,
                    schedule=spec.schedule, agent_spec=spec.agent,
                    evolver_spec=spec.evolver, executor_spec=spec.executor) as run:
        if banner and not (args.json or args.silent):
            print(banner)
        return drive(run, args, executor)


def resume_command(args) -> int:
    from gsme.run import Run, RunError

    with Run.open(args.dir) as run:
        if run.schedule is None:
            raise RunError(f"{args.dir} was not started by `gsme run`; resume it from Python "
                           "(gsme.evolve.evolve(run, rounds=...))")
        return drive(run, args, common.executor(common.executor_spec(run.executor_spec, args)))


def drive(run, args, executor=None) -> int:
    from gsme import evolve, measure, report

    try:
        if not run.sealed:
            evolve.evolve(run, executor=executor, progress=common.bars(args),
                          on_round=lambda result: print_round(
                              evolve.round_summary(run, result), args))
            stops = [p["reason"] for p in run.events("budget_reached")["payload"]
                     if "reason" in p]
            said = not (args.json or args.silent)
            if stops and said:
                print(f"evolution stopped by its budget: {stops[-1]}", flush=True)
            empty = evolve.empty_stop(run)
            if empty is not None and said:
                print(f"evolution stopped: {empty}; on to the sealed test", flush=True)
        measure.finalize(run, executor=executor, progress=common.bars(args))
    finally:
        if executor is not None:
            executor.close()
    table = report.run_table(run)
    if args.silent and not args.json:
        print(report.ship_line(report.recommendation(table)))
        return 0
    if common.print_report(table, as_json=args.json):
        return 0
    print(f"run directory: {run.path}")
    if getattr(args, "temporary", False):
        print(f"(a temporary folder made for this demo: `gsme view {run.path}` shows it, "
              f"`rm -rf {run.path}` removes it)")
    return 0


def print_round(summary: dict, args) -> None:
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
            f"best {summary['best']} {common.signed(summary['best_delta_pp'])} pp train Δ vs "
            f"baseline (first {summary['k']} repeats)")
    made = (f"no child of {summary['parent']}: {summary['empty_reason']}"
            if summary["children"] == 0 else
            f"{summary['children']} children of {summary['parent']}, {summary['kept']} kept, "
            f"{summary['credited']} credited, {summary['culled']} culled")
    tqdm.write(f"round {summary['round']}: {made}; {summary['trials_spent']}{budget} "
               f"trials spent; {best}")


def status_command(args) -> int:
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
                 "usd_spent": common.known(spent["usd"]),
                 "budget_usd": None if run.schedule is None else run.schedule.budget_usd,
                 "hours_spent": common.known(spent["hours"]),
                 "budget_hours": None if run.schedule is None else run.schedule.budget_hours,
                 "budget_stop": stopped,
                 "sealed": ("yes" if run.sealed_result is not None else
                            "sealing (test split partly scored)" if run.sealed else "no"),
                 "elites": int(summary["num_elites"]), "cells": n_cells,
                 "coverage": float(summary["coverage"]),
                 "best": summary["best_candidate"],
                 "best_train_rate": best_rate(explain.train_rates(run),
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
            print(f"{unit} spent: {common.number(state[f'{key}_spent'])}"
                  f"{'' if limit is None else f' of {limit:g}'}")
        if stopped is not None:
            print(f"evolution stopped by its budget: {common.printable(stopped)}")
        print(f"sealed: {state['sealed']}")
        print(f"archive: {state['elites']} elite(s) in {n_cells} cells "
              f"(coverage {state['coverage']:.0%}), best {state['best'] or 'baseline'}: "
              f"train rate {common.number(state['best_train_rate'])} (first {state['k']} repeats "
              "of every task)")
        if not arch.empty:
            cells = archive.occupancy(explain.archive_table(run), why_levels=labels)
            print("train rate of each cell's elite (first "
                  f"{state['k']} repeats of every task; - empty):")
            print(cells.dropna(how="all", axis=1).map(
                lambda v: "-" if pd.isna(v) else common.number(v)).to_string())
        print(common.printable(state["ship"]))
    return 0


def best_rate(rates: pd.DataFrame, best) -> float:
    """The train rate of ``best`` (the baseline's when None) in :func:`gsme.explain.train_rates`."""
    import pandas as pd

    name = "baseline" if best is None or pd.isna(best) else best
    found = rates.loc[rates["candidate"] == name, "rate"]
    return float(found.iloc[0]) if len(found) else float("nan")


def report_command(args) -> int:
    from gsme import report
    from gsme.run import Run, RunError

    with Run.open(args.dir, read_only=True) as run:
        if run.sealed_result is None:
            raise RunError(f"{args.dir} is not sealed yet; its report exists once the test "
                           "split is scored (gsme resume DIR finishes the run)")
        common.print_report(report.run_table(run), as_json=args.json)
    return 0


def verify_command(args) -> int:
    from gsme.run import verify

    found = verify(args.dir)
    print("ok" if not found else "; ".join(found))
    return common.EXIT_TAMPERED if found else 0


def view_command(args) -> int:
    from gsme import report, view
    from gsme.run import Run

    out = args.out or Path(f"{Path(args.dir).resolve().name}-view")
    seen = None
    while True:
        with Run.open(args.dir, read_only=True) as run:
            sealed = run.sealed_result is not None  # a sealed run's page does not change
            page = view.write(run, out, refresh=None if sealed else args.watch,
                              progress=common.bars(args))
            line = report.run_ship_line(run)
        print(f"gsme view: wrote {page} (open it in a browser)")
        print(common.printable(line))
        if args.watch is None or sealed:
            return 0
        seen = ledger_changed(Path(args.dir), seen, every=args.watch)


def ledger_changed(folder: Path, seen, *, every: float):
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


def grow_command(args) -> int:
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
        spec.update(common.key_values(args.agent, "--agent"))
        agent = plugins.build_agent(spec)
    with Run.open(args.dir, agent=agent) as run:
        before = grown_so_far(run)
        executor = common.executor(common.executor_spec(run.executor_spec, args))
        try:
            table = grow(run, tasks, agent_spec=spec, executor=executor, progress=common.bars(args))
        finally:
            if executor is not None:
                executor.close()
        after = grown_so_far(run)
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


def grown_so_far(run) -> dict[str, int]:
    """Tasks added by growing, train trials run and borrowed: so far, all calls together."""
    added = {t for ids in run.events("tasks_added")["payload"] for t in ids["task_ids"]}
    borrowed = run.trials(split="train")["borrowed_from"].notna()
    return {"added": len(added), "ran": int((~borrowed).sum()), "borrowed": int(borrowed.sum())}


def export_command(args) -> int:
    from gsme.integrations import mlflow
    from gsme.run import Run

    try:
        with Run.open(args.dir, read_only=True) as run:
            done = mlflow.export(run, args.mlflow, experiment=args.experiment,
                                 progress=common.bars(args))
    except (ImportError, mlflow.ExportError) as err:
        print(f"gsme: error: {common.one_line(err)}", file=sys.stderr)
        return common.EXIT_USAGE
    replaced = f"; replaced {len(done.replaced)} runs of the earlier export" if done.replaced \
        else ""
    print(f"gsme export: {args.dir} -> {done.tracking_uri} experiment {done.experiment_id}: "
          f"parent run {done.parent_run_id}, {len(done.runs) - 1} candidate runs{replaced}")
    return 0

