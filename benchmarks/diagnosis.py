"""Diagnosis quality, measured: each evolver on the same simulated world, against the truth.

In the simulator every failing trial carries the failure mode that made it fail (its
ground-truth ``pathology``, never shown to an evolver). For each evolver this runs the same
simulated runs (one per seed: same preset, suite, profile and run seed) and reports

* proposals -- patches the evolver produced (valid or not);
* valid -- the share of them that ended valid (after the evolver's one repair turn,
  where it has one) and were committed;
* match -- the share of committed proposals whose why is the dominant ground-truth
  pathology of the failing trials they target (:func:`gsme.analysis.diagnosis_match`;
  the truth names a failure mode, so where is not judged);
* gate share -- the mean share of train tasks a proposal's env gate admits (1: no gate);
* gate reach -- the mean share of a proposal's targeted failing tasks its gate admits;
* kept, credited -- children the keep rule kept, and those the gates credited (train);
* cost, tokens -- dollars and tokens of the evolver calls (the ledger's calls table;
  estimated or reported, see the rows).

Rows:

* ``rule (misdiagnosis m)``: :class:`gsme.evolvers.rule.RuleEvolver` at its default 0.25
  and at other rates of its ``misdiagnosis`` knob. SIMULATED world, real gsme evolver.
* ``claude single-call (SCRIPTED)``: :class:`gsme.evolvers.claude.ClaudeEvolver`'s whole
  code path (its prompt, its window of ``PROMPT_FAILURES`` digests, its tool schema and
  validator, its ledger records) with a *scripted* stand-in for the model: a local client
  that reads the request and answers what the rule evolver (misdiagnosis 0.25) would say of
  the digests it is shown, through the tool contract. Token counts are estimated from the
  sizes of request and answer (four characters a token) and priced at the evolver's model's
  list price. This is not Claude: the row measures what the single-call format does to the
  same reading skill (the window, the validator), not Claude's diagnosis quality.
* ``agentic (SCRIPTED)``: :class:`gsme.evolvers.agentic.AgenticEvolver` (its workspace,
  sandbox, folder contract, validator and repair turn) running the scripted stand-in agent
  ``tests/scripts/scripted_evolver.py fix-on-repair``: it greps every trace of the round
  for the known signatures (no injected misdiagnosis), drops a failure mode as common in
  passing traces as in failing ones, gates on task categories, and sends one invalid patch
  that it corrects on the repair turn. Its tokens and cost are what the script reports
  ($0). Not a model either: the row measures the format (every trace, a repair turn), not
  a coding agent's quality. Left out, with the reason printed, where the agentic evolver
  cannot run (no sandbox).

    python benchmarks/diagnosis.py            # tb2, seeds 0-2, 3 rounds: a few minutes
    python benchmarks/diagnosis.py --quick    # tiny, 1 seed, 1 round: seconds

Everything here is SIMULATED (the world) or SCRIPTED (the model's answers).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import logging
import re
import tempfile
import time
from pathlib import Path

import pandas as pd
from anthropic.types import Message

from gsme import evolve, sim
from gsme.analysis import diagnosis_match
from gsme.evolvers.claude import ClaudeEvolver
from gsme.evolvers.claude_tools import DIAGNOSE_TOOL, PROPOSE_TOOL
from gsme.evolvers.rule import UNMATCHED, UNMATCHED_DEFINITION, RuleEvolver
from gsme.evolvers.templates import TEMPLATES
from gsme.patches import read_patches
from gsme.run import Run
from gsme.schema import join_ids
from gsme.settings import RunConfig, Schedule

RESULTS = Path(__file__).resolve().parent / "results" / "diagnosis.txt"
AGENT_SCRIPT = Path(__file__).resolve().parents[1] / "tests" / "scripts" / "scripted_evolver.py"
RATES = (0.0, 0.25, 0.5, 1.0)
SCRIPTED_RATE = 0.25
CHARS_PER_TOKEN = 4
TOKEN_COLUMNS = ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                 "cache_read_input_tokens")


class ScriptedClaude:
    """A stand-in for the Messages API that answers as the rule evolver would. SCRIPTED.

    It reads only the request (the failure digests, the vocabulary, the harness files and
    the diagnoses shown), never the run: what a model is given, nothing more. Diagnoses
    come from :meth:`RuleEvolver.diagnose` on the digests; patches from
    :meth:`RuleEvolver.propose` on the diagnoses shown, avoiding the mechanisms the prompt
    lists as applied or tried. A rejected item is not repaired (the retry answers nothing).
    ``sent`` counts the patches it answered.
    """

    def __init__(self, seed: int):
        self.seed = seed
        self.sent = 0
        self.messages = self  # client.messages.create(...)

    def create(self, **params) -> Message:
        request = json.dumps([params["system"], params["messages"]])
        retry = len(params["messages"]) > 1
        text = params["messages"][0]["content"][0]["text"]
        system = "\n".join(block["text"] for block in params["system"])
        rule = RuleEvolver(seed=_stable(f"{self.seed}|{text}"), misdiagnosis=SCRIPTED_RATE)
        if "<failure task_id=" in text:
            tool = DIAGNOSE_TOOL
            answer = {"diagnoses": [] if retry else self._diagnose(rule, text, system)}
        else:
            tool = PROPOSE_TOOL
            answer = {"patches": [] if retry else self._propose(rule, text, system)}
            self.sent += len(answer["patches"])
        return Message.model_validate({
            "id": f"msg_{_stable(request) % 16**8:08x}", "type": "message",
            "role": "assistant", "model": params["model"], "stop_reason": "tool_use",
            "usage": {"input_tokens": len(request) // CHARS_PER_TOKEN,
                      "output_tokens": len(json.dumps(answer)) // CHARS_PER_TOKEN},
            "content": [{"type": "tool_use", "id": "toolu_1", "name": tool, "input": answer}]})

    @staticmethod
    def _diagnose(rule: RuleEvolver, text: str, system: str) -> list[dict]:
        blocks = re.findall(r'<failure task_id="([^"]*)" repeat="(\d+)">\n.*?<transcript>\n'
                            r"(.*?)\n</transcript>\n</failure>", text, flags=re.DOTALL)
        shown = pd.DataFrame(blocks, columns=["task_id", "repeat", "transcript"]).assign(
            candidate="parent")
        known = set(re.findall(r"^- ([a-z0-9-]+): ", system, flags=re.MULTILINE))
        items = []
        for row in rule.diagnose(shown).itertuples(index=False):
            item = {"task_id": row.task_id, "repeat": int(row.repeat), "where": row.where,
                    "why": row.why, "evidence": row.evidence or "submit()",
                    "confidence": float(row.confidence)}
            if row.why not in known:
                item["new_label"] = {"label": row.why, "definition": (
                    UNMATCHED_DEFINITION if row.why == UNMATCHED
                    else f"Failures diagnosed as {row.why}.")}
            items.append(item)
        return items

    @staticmethod
    def _propose(rule: RuleEvolver, text: str, system: str) -> list[dict]:
        files = dict(re.findall(r'<file path="([^"]*)">\n(.*?)\n</file>', system, flags=re.DOTALL))
        n = int(re.search(r"with at most (\d+) patches", text).group(1))
        before, _, shown = text.partition("Diagnoses of the current harness")
        tried = {t.mechanism for ts in TEMPLATES.values() for t in ts if t.mechanism in before}
        history = pd.DataFrame({"mechanism": sorted(tried), "decision": "cull"})
        diagnoses = _read_diagnoses(shown)
        if diagnoses.empty:
            return []
        patches = rule.propose(diagnoses, harness=files, n=n, history=history)
        return [{"where": p.where, "why": p.why, "mechanism": p.mechanism,
                 "env_gate": p.env_gate, "beacon": p.beacon, "rationale": p.rationale,
                 "predicted_tasks": list(p.predicted_tasks),
                 "changes": [{"path": c.path, "old": c.old, "new": c.new} for c in p.changes]}
                for p in patches]


def _read_diagnoses(text: str) -> pd.DataFrame:
    """The diagnoses frame back from :func:`gsme.evolvers.claude_prompt.diagnoses_text`."""
    rows, features = [], {}
    for line in text.splitlines():
        head = re.match(r"task_id (\S+) \(features: (.*)\)$", line)
        if head:
            task = head.group(1)
            features = {k: ast.literal_eval(v) for k, v in re.findall(
                r"(\w+)=('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^,]+)", head.group(2))}
            continue
        item = re.match(r"  repeat=(\d+) where=(\S+) why=(\S+) confidence=", line)
        if item:
            rows.append({"task_id": task, "repeat": int(item.group(1)),
                         "where": item.group(2), "why": item.group(3), **features})
    return pd.DataFrame(rows)


def _stable(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=4).digest(), "little")


# ----------------------------------------------------------------------------- the runs


def evolvers(seed: int) -> dict:
    """Row label -> evolver."""
    rows = {f"rule (misdiagnosis {m:g}{', default' if m == 0.25 else ''})":
            RuleEvolver(seed=seed, misdiagnosis=m) for m in RATES}
    rows["claude single-call (SCRIPTED)"] = ClaudeEvolver(client=ScriptedClaude(seed))
    agentic = agentic_evolver(seed)
    if not isinstance(agentic, str):
        rows["agentic (SCRIPTED)"] = agentic
    return rows


def agentic_evolver(seed: int):
    """The agentic evolver running the scripted stand-in agent, or why it cannot run here."""
    if not AGENT_SCRIPT.exists():
        return f"{AGENT_SCRIPT} is missing"
    try:
        from gsme.evolvers.agentic import AgenticEvolver
        return AgenticEvolver(command=["{python}", str(AGENT_SCRIPT), "fix-on-repair"],
                              readable=[str(AGENT_SCRIPT)], minutes=2, seed=seed)
    except (ImportError, TypeError, ValueError) as err:  # not built as called, or no sandbox
        return f"{type(err).__name__}: {err}"


def produced(evolver, committed: int, refused: int) -> int:
    """Patches the evolver produced: what its model sent, where that is known (the scripted
    client counts it: the Claude evolver keeps no record of an item its retry leaves out),
    else those committed, refused at commit, or dropped still invalid after the repair turn
    (``failed_proposals``, but for patches beyond the n asked)."""
    client = getattr(evolver, "_client", None)
    if isinstance(client, ScriptedClaude):
        return client.sent
    dropped = sum(not str(f.get("reason", "")).startswith("more than n=")
                  for f in getattr(evolver, "failed_proposals", []))
    return committed + refused + dropped


def one_run(label: str, evolver, *, preset: str, seed: int, rounds: int, children: int,
            breadth: float, root: Path) -> dict:
    """Evolve one run; its proposals' numbers."""
    agent = sim.preset(preset, suite_seed=seed, breadth=breadth)
    path = root / f"{re.sub(r'[^a-z0-9]+', '-', label.lower())}-s{seed}"
    run = Run.create(path, agent=agent, evolver=evolver, run_config=RunConfig(run_seed=seed),
                     schedule=Schedule(rounds=rounds, children_per_round=children,
                                       recombinations_per_round=0))
    try:
        evolve.evolve(run, progress=False)
        cands = run.candidates()
        cands = cands[cands["kind"] == "mutation"]
        named = {c: _patch_of(run, c, pid) for c, pid in zip(cands["candidate"],
                                                             cands["patch_id"])}
        proposals = cands.assign(parent=cands["parents"],
                                 predicted_tasks=cands["candidate"].map(named))
        match = diagnosis_match(proposals, run.trials(), tasks=run.tasks())
        made = run.proposals()
        refused = int((~made["ok"] & (made["kind"] == "mutation")).sum())
        decided = run.decisions()
        decided = decided[(decided["split"] == "train")
                          & decided["child"].isin(cands["candidate"])]
        calls = run.calls()
        return {"evolver": label, "seed": seed, "produced": produced(evolver, len(cands), refused),
                "committed": len(cands), "matched": int(match["matched"].sum()),
                "gate_share": match["gate_share"].sum(),
                "gate_reach": match["gate_reach"].fillna(0).sum(),
                "kept": int(decided["kept"].sum()),
                "credited": int((decided["decision"] == "credit").sum()),
                "cost_usd": float(calls["cost_usd"].sum()) if len(calls) else 0.0,
                "tokens": int(sum(calls[c].fillna(0).sum() for c in TOKEN_COLUMNS
                                  if c in calls.columns)),
                "calls": len(calls)}
    finally:
        run.close()


def _patch_of(run: Run, candidate: str, patch_id: str) -> str:
    """The tasks the candidate's patch names, from its manifest in the committed harness."""
    for patch in read_patches(run.harness(candidate)):
        if patch.id == patch_id:
            return join_ids(patch.predicted_tasks)
    return ""


def table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per evolver: counts summed over seeds, shares pooled over proposals."""
    g = runs.groupby("evolver", sort=False).sum(numeric_only=True)
    return pd.DataFrame({
        "proposals": g["produced"], "valid": g["committed"] / g["produced"],
        "match": g["matched"] / g["committed"], "gate_share": g["gate_share"] / g["committed"],
        "gate_reach": g["gate_reach"] / g["committed"], "kept": g["kept"],
        "credited": g["credited"], "cost_usd": g["cost_usd"], "tokens": g["tokens"],
        "calls": g["calls"]})


NOTES = """\
match: share of committed proposals whose why is the dominant ground-truth pathology of the
failing trials they target; gate share: share of train tasks the env gate admits; gate reach:
share of the targeted failing tasks it admits. The SCRIPTED single-call row is the Claude
evolver's code path answered by a script that reads as the rule evolver does: not Claude's
quality. The agentic row runs tests/scripts/scripted_evolver.py (every trace read, each
diagnosis checked against the passing traces) in the sandbox: its cost and tokens are what
that script reports ($0), not a model's."""


def report(summary: pd.DataFrame, settings: str) -> str:
    header = (f"{'evolver':36s} {'proposals':>9s} {'valid':>6s} {'match':>6s} "
              f"{'gate share':>10s} {'gate reach':>10s} {'kept':>5s} {'credited':>8s} "
              f"{'cost $':>8s} {'tokens':>9s} {'calls':>5s}")
    lines = [f"SIMULATED world, SCRIPTED model answers where marked ({settings})", "", header]
    for name, r in summary.iterrows():
        lines.append(f"{name:36s} {int(r.proposals):9d} {r.valid:6.0%} {r.match:6.0%} "
                     f"{r.gate_share:10.0%} {r.gate_reach:10.0%} {int(r.kept):5d} "
                     f"{int(r.credited):8d} {r.cost_usd:8.2f} {int(r.tokens):9,d} "
                     f"{int(r.calls):5d}")
    return "\n".join([*lines, "", NOTES])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="tb2", help="simulated preset")
    parser.add_argument("--seeds", type=int, default=3, help="suite/run seeds")
    parser.add_argument("--rounds", type=int, default=3, help="evolution rounds per run")
    parser.add_argument("--children", type=int, default=4, help="children per round")
    parser.add_argument("--breadth", type=float, default=0.33,
                        help="how concentrated each failure mode is on a task feature")
    parser.add_argument("--quick", action="store_true",
                        help="tiny, 1 seed, 1 round; nothing saved: a smoke run in seconds")
    args = parser.parse_args(argv)
    if args.quick:
        args.preset, args.seeds, args.rounds = "tiny", 1, 1
    started = time.time()
    # the Claude evolver warns of every rejected item; the table's "valid" counts them
    logging.getLogger("gsme.evolvers.claude").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="gsme-diagnosis-") as root:
        runs = pd.DataFrame([
            one_run(label, evolver, preset=args.preset, seed=seed, rounds=args.rounds,
                    children=args.children, breadth=args.breadth, root=Path(root))
            for seed in range(args.seeds) for label, evolver in evolvers(seed).items()])
    settings = (f"preset {args.preset}, breadth {args.breadth:g}, {args.seeds} seed(s) x "
                f"{args.rounds} round(s) x {args.children} children; "
                f"{time.time() - started:.0f} s")
    text = report(table(runs), settings)
    missing = agentic_evolver(0)
    if isinstance(missing, str):
        text += f"\n\nagentic (SCRIPTED) left out: {missing}"
    print(text)
    if not args.quick:
        RESULTS.write_text(text + "\n", encoding="utf-8")
        print(f"\nsaved to {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
