"""Benchmarks cannot rot: every script in ``benchmarks/`` runs its ``--quick`` mode to the
end and prints its figures.

The scripts are found, not listed: a new script without ``--quick`` (argparse exits 2)
or without an entry in :data:`FIGURES` fails here.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
NUMBER = r"[+-]?[\d,]+(?:\.\d+)?"

FIGURES = {
    "activation_first.py": [
        r"SIMULATED: an inactive child under the adaptive design",
        rf"\n\s+26\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}%",
        r"target: no repeat after the first look .*: met",
    ],
    "aa_designs.py": [
        r"A/A false credit, %",
        rf"adaptive / t\+exact6 \*\s+{NUMBER} \[",
        r"power: % credited at a true gain",
        r"mean child trials per candidate",
        rf"adaptive default A/A at n=26: {NUMBER}%",
        r"scoring loop equals the shared-frame evaluation: (met|MISSED)",
    ],
    "aa_sealed.py": [
        r"SIMULATED A/A \(null mix\) on tb2: 10 independent runs per rule",
        rf"greedy\s+10\s+\d+\s+{NUMBER}% \[",
        r"own sealed credit given a non-baseline selection",
    ],
    "bench_executors.py": [
        r"I/O-bound trials of 0\.2 s: trials/s by executor",
        rf"threads\s+2\s+{NUMBER}\s+10\.0\s+{NUMBER}%",
        rf"dask\s+4\s+{NUMBER}\s+20\.0\s+{NUMBER}%",
        rf"dask, old path\s+4\s+{NUMBER}\s+20\.0\s+{NUMBER}%",
        r"target >= 80% of workers/0\.2 on threads and dask: (met|MISSED)",
        rf"through gsme \(config, job start, read-back, recording\): {NUMBER} ms per trial",
        rf"gsme's overhead \(the difference\): {NUMBER} ms per trial",
        r"target <= 20 ms of overhead per trial: (met|MISSED)",
    ],
    "bench_explorer.py": [
        rf"build the panel: {NUMBER} s",
        rf"redraw after the round slider: best {NUMBER} s, median {NUMBER} s",
        rf"redraw after the candidate pick: best {NUMBER} s, median {NUMBER} s",
        r"target median redraw <= 0\.5 s: (met|MISSED)",
    ],
    "bench_gates.py": [
        rf"credit\(\): best {NUMBER} s of 1",
        (rf"CPU time best {NUMBER} s .*checking the trials frame at the boundary and encoding"
         rf" its slots {NUMBER} s .*, the design's paired test {NUMBER} s"),
        rf"Arrow\) text columns: CPU time best {NUMBER} s",
        rf"ratio naive / credit\(\): {NUMBER}x",
    ],
    "bench_loop.py": [
        (rf"no-op agent: {NUMBER} trials per run -> {NUMBER} best, {NUMBER} median .* ms per "
         r"trial of orchestration"),
        (rf"through measure\.measure -> {NUMBER} best, {NUMBER} median .* trials/s \(per CPU second "
         rf"{NUMBER} best"),
        rf"simulator alone {NUMBER} best",
        rf"measure\.measure / simulator alone {NUMBER} best",
        r"target >= 20,000: (met|not met); target >= 10,000/s: (met|not met)",
        rf"trials reads \(from the ledger file\) per round {NUMBER} \(target <= 2: (met|not met)\)",
        rf"trials frame checks per round {NUMBER} \(target <= 2: (met|not met)\)",
        rf"trials per CPU second of the whole loop {NUMBER} best",
        rf"command trial, plain process: {NUMBER} ms median of 5",
        rf"command trial, harness copy: {NUMBER} ms median of 5",
    ],
    "bench_redact.py": [
        rf"with 3 secrets, none in the text\s+{NUMBER} ms",
        rf"plain, with 3 secrets\s+{NUMBER} ms",
        r"secret copies left after redaction \(plain, URL-encoded, base64\): 0",
        r"target <= 1 ms per 64 KiB transcript with secrets: (met|MISSED)",
    ],
    "bench_startup.py": [
        *(rf"gsme --{command}: {NUMBER} s CPU median, {NUMBER} s best \(target <= 0\.3 s: "
          r"(met|not met)\)" for command in ("version", "help")),
    ],
    "bench_view.py": [
        r"SIMULATED run: tiny, seed 0, copied up to each size",
        rf"\n\s+2,000\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+\d+\s",
        r"target: 2,000 trials: index.html \(MB\) [\d.]+ <= 1.5: met",
    ],
    "bench_sim.py": [
        rf"seed harness\s+run\s+: {NUMBER} trials in {NUMBER} s wall \({NUMBER} trials/s",
        rf"3 gated patches\s+run_many: {NUMBER} trials in {NUMBER} s wall",
        rf"full tb2 baseline at K=3: {NUMBER} trials in {NUMBER} ms",
    ],
    "reference_bias.py": [
        r"SIMULATED winner's-curse check on tb2: 2 seeds x 2 rounds per row",
        rf"greedy\s+null\s+fresh\s+\d+\s+{NUMBER} \[",
        r"parent_trials='fresh' for every rule and mix: (met|NOT met)",
    ],
    "borrowing.py": [
        r"SIMULATED borrowing",
        rf"\n\s+0\.33\s+{NUMBER}%\s+{NUMBER}%\s+\d+/\d+",
        r"paper \(growing benchmarks\): 67% fewer child trials",
        r"target at acting share <= 33%.*: (met|MISSED)",
    ],
    "cost_estimate.py": [
        r"Tokens per call",
        rf"claude-haiku-4-5\s+claude-opus-4-8\s+\${NUMBER}\s+\${NUMBER}\s+\${NUMBER}",
    ],
    "diagnosis.py": [
        r"SIMULATED world, SCRIPTED model answers where marked",
        rf"rule \(misdiagnosis 0\.25, default\)\s+\d+\s+{NUMBER}%\s+{NUMBER}%\s+{NUMBER}%",
        rf"claude single-call \(SCRIPTED\)\s+\d+\s+{NUMBER}%\s+{NUMBER}%",
    ],
    "evidence.py": [
        r"Keep rules x proposal mixes",
        rf"tiny\s+calibrated\s+greedy\s+{NUMBER}",
        r"Targets \(keep-rule study\)",
        r"Shipped \(ship rules of gsme\.report\.SHIP_RULES; default sealed_credit\)",
        rf"tiny\s+harmful\s+learned\s+{NUMBER} \(\d+%\)\s+{NUMBER} \(\d+%\)",
        r"3\. A/A",
    ],
}


def _scripts() -> list[str]:
    return sorted(p.name for p in BENCHMARKS.glob("*.py"))


def test_every_script_has_its_figures_listed():
    assert _scripts() == sorted(FIGURES), (
        "a benchmark script was added or removed: list the figures its --quick prints")


@pytest.mark.parametrize("script", _scripts())
def test_quick_mode_runs_and_prints_its_figures(script, tmp_path):
    done = subprocess.run([sys.executable, str(BENCHMARKS / script), "--quick"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, f"{script} --quick failed:\n{done.stderr[-3000:]}"
    missing = [p for p in FIGURES.get(script, [r"(?!)"]) if not re.search(p, done.stdout)]
    assert not missing, f"{script} --quick did not print {missing}:\n{done.stdout[-3000:]}"


def test_evidence_ships_by_each_rule_and_judges_the_target_on_what_is_shipped():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import evidence
    finally:
        sys.path.remove(str(BENCHMARKS))
    import pandas as pd

    runs = pd.DataFrame({  # four harmful-world runs of one rule, by hand
        "preset": "tb2", "mix": "harmful", "rule": "learned", "history": 0,
        "selected": ["c1", "c2", "c3", "baseline"],
        "sealed_decision": ["credit", "inconclusive", "inconclusive", "inconclusive"],
        "sealed_delta_pp": [6.0, 1.0, -2.0, 0.0], "sealed_p_one_sided": [0.01, 0.15, 0.8, 1.0],
        "true_sealed_delta_pp": [4.0, -2.0, -1.0, 0.0]})
    table = evidence.shipping(runs, min_history=60).set_index("ship_rule")
    shipped = table["shipped_true_delta_pp"].to_dict()
    assert shipped == pytest.approx({"always": 0.25, "sealed_credit": 1.0,
                                     "sealed_positive": 0.5, "sealed_p20": 0.5})
    within = table["within_half_pp"].to_dict()
    assert within == pytest.approx({"always": 0.5, "sealed_credit": 1.0,
                                    "sealed_positive": 0.75, "sealed_p20": 0.75})
    assert table["within_met"].to_dict() == {"always": False, "sealed_credit": True,
                                             "sealed_positive": False, "sealed_p20": False}
    assert table.loc["sealed_credit", "ships_child"] == 0.25
