"""Estimated USD cost per round of a real gsme run on pyfunc, per (task model, evolver model).

A round scores 3 children and 1 recombination on the 40 train tasks at K=3, about a third
of the children's trials borrowed from the parent; the evolver makes one diagnose and one
propose call. Token counts per call are those of the hand-written API responses in the test
suite (``tests/data``, :data:`gsme.prices.FIXTURE_USAGE`), not of live calls; prices are
:data:`gsme.prices.PRICES`. See :func:`gsme.prices.estimate_round_cost`.

    python benchmarks/cost_estimate.py [--n-train 40] [--k 3] [--children 3]
        [--recombinations 1] [--borrowed 0.333] [--rounds 5] [--quick]

It runs in well under a second: ``--quick`` (which every benchmark script takes) changes
nothing.
"""

from __future__ import annotations

import argparse

import pandas as pd

from gsme.prices import EVOLVER_CALLS, FIXTURE_USAGE, TASK_CALLS, estimate_round_cost

PAIRS = pd.DataFrame(
    [("claude-haiku-4-5", "claude-opus-4-8"), ("claude-haiku-4-5", "claude-sonnet-4-6"),
     ("claude-sonnet-4-5", "claude-opus-4-8"), ("claude-haiku-4-5", "claude-opus-5-5")],
    columns=["task_model", "evolver_model"],
)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-train", type=int, default=40)
    parser.add_argument("--n-test", type=int, default=20)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--children", type=int, default=3)
    parser.add_argument("--recombinations", type=int, default=1)
    parser.add_argument("--borrowed", type=float, default=1 / 3)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="the same table: already quick")
    args = parser.parse_args(argv)
    table = estimate_round_cost(
        PAIRS, n_train=args.n_train, n_test=args.n_test, k=args.k, children=args.children,
        recombinations=args.recombinations, borrowed_share=args.borrowed, rounds=args.rounds)
    print("ESTIMATE from the token counts of the test fixtures in tests/data, not from live "
          "calls.")
    print("Tokens per call (input + cache write + cache read -> output):")
    for name in TASK_CALLS + EVOLVER_CALLS:
        usage = FIXTURE_USAGE[name]
        print(f"  {name:<18} {usage['input_tokens']} + "
              f"{usage.get('cache_creation_input_tokens', 0)} + "
              f"{usage.get('cache_read_input_tokens', 0)} -> {usage['output_tokens']}")
    print("A trial is one task-model call (their mean).")
    print(f"Round: {args.children} children + {args.recombinations} recombination(s) x "
          f"{args.n_train} train tasks x K={args.k}, {args.borrowed:.0%} borrowed -> "
          f"{table['trials_per_round'].iloc[0]} trials; 1 diagnose + 1 propose call.")
    print("Real answers (extended thinking above all) may spend many more tokens.\n")
    shown = table.assign(
        per_round=table["round_usd"].map("${:.3f}".format),
        trials=table["round_trials_usd"].map("${:.3f}".format),
        evolver=table["round_evolver_usd"].map("${:.3f}".format),
        run=table["run_usd"].map("${:.2f}".format),
    )[["task_model", "evolver_model", "trials", "evolver", "per_round", "run"]]
    shown.columns = ["task model", "evolver model", "trials/round", "evolver/round",
                     "total/round", f"run of {args.rounds} rounds*"]
    print(shown.to_string(index=False))
    print(f"* cold start ({args.n_train} x K train trials), {args.rounds} rounds and the sealed "
          f"test (baseline and selected harness, {args.n_test} x K test trials each).")


if __name__ == "__main__":
    main()
