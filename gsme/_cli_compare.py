"""The ``gsme`` commands on trials without a run: compare and plan (:mod:`gsme.cli` parses
their arguments)."""

from __future__ import annotations

import json
import math
import sys
from typing import TYPE_CHECKING

from gsme import _cli_common as common

if TYPE_CHECKING:  # imported by the commands that use it: `gsme --help` needs no pandas
    import pandas as pd

IDS_SHOWN = 20
"""Task ids ``gsme compare`` prints per direction (``--json`` gives every one)."""


def compare_command(args) -> int:
    from tqdm import tqdm

    from gsme import compare, importers, schema
    from gsme.settings import ConfigError, GateConfig

    gate = compare.LOGS_GATE if args.design is None else GateConfig(design=args.design)
    with tqdm(total=2, desc="gsme compare: reading the logs", unit="step", leave=False,
              disable=None if common.bars(args) else True, file=sys.stderr) as bar:  # a terminal's
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
    common.print_frame(row.drop(columns=["tasks_up", "tasks_down"]).T, header=False)
    for direction in ("up", "down"):
        ids = schema.split_ids(row[f"tasks_{direction}"].iloc[0])
        more = (f" and {len(ids) - IDS_SHOWN:,} more (--json lists all)"
                if len(ids) > IDS_SHOWN else "")
        print(f"moved {direction} ({len(ids):,}): {','.join(ids[:IDS_SHOWN]) or '-'}{more}")
    print(f"infrastructure failures, not scored: {parent} {row['n_infra_parent'].iloc[0]}, "
          f"{child} {row['n_infra_child'].iloc[0]} repeat(s)")
    if len(dropped):
        print(f"not imported: {len(dropped)} item(s)")
        for reason, n in dropped.groupby("reason", sort=False).size().items():
            print(f"  {n} x {reason}")
    return 0


def plan_command(args) -> int:

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
            return plan_cost(args, repeat_sd=repeat_sd, source=source, designs=designs)
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
    common.print_frame(table.set_index("design").T)
    for line in plan_notes(table, compare.MAX_K, compare.MAX_TASKS):
        print(line)
    return 0


def plan_cost(args, *, repeat_sd: float, source: str, designs) -> int:
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
        print(json.dumps({**{k: common.known(v) if isinstance(v, float) else v
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
          f"${common.number(args.cost_per_trial)} and "
          f"{common.number(args.minutes_per_trial)} min a trial, {assumed['concurrency']} "
          "trials at once, no trial borrowed")
    common.print_frame(table.set_index("design").T)
    return 0


def plan_notes(table: pd.DataFrame, max_k: int, max_tasks: int) -> list[str]:
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

