"""The rule evolver: diagnosis from text against ground truth, and valid template patches."""

import shutil
import tomllib

import pandas as pd
import pytest

from gsme import sim
from gsme.evolvers import DIAGNOSIS_COLUMNS
from gsme.evolvers.rule import UNMATCHED, RuleEvolver, derive_gate
from gsme.evolvers.templates import TEMPLATES, changes
from gsme.patches import apply_patch, harness_files, read_patches
from gsme.resources import SEED_HARNESS
from gsme.schema import LEVERS
from gsme.sim.transcripts import AMBIGUOUS, MISLEADING
from gsme.vocabulary import Vocabulary

FEATURES = ["category", "has_tests", "needs_tools", "long_context", "hard"]


def failures_of(agent, harness_dir, *, run_seeds):
    """Failing valid train trials with transcripts, features and the hidden true label."""
    rows = []
    for row in agent.tasks().query("split == 'train'").to_dict("records"):
        for run_seed in run_seeds:
            for repeat in range(3):
                traj = agent.run(harness_dir, row, repeat=repeat, attempt=0, run_seed=run_seed)
                if traj.infra_ok and not traj.passed:
                    rows.append({"candidate": f"base{run_seed}", "task_id": row["task_id"],
                                 "repeat": repeat,
                                 "transcript": traj.transcript, "truth": traj.pathology,
                                 **{c: row[c] for c in FEATURES}})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def tb2_failures():
    return failures_of(sim.preset("tb2"), SEED_HARNESS, run_seeds=range(4))


@pytest.fixture
def parent(tmp_path):
    root = tmp_path / "parent"
    shutil.copytree(SEED_HARNESS, root)
    return root


def accuracy(evolver, failures):
    diagnoses = evolver.diagnose(failures.drop(columns="truth"))
    return (diagnoses["why"].to_numpy() == failures["truth"].to_numpy()).mean()


@pytest.mark.parametrize("error_rate", [0.0, 0.25, 0.5])
def test_diagnosis_accuracy_tracks_the_configured_error_rate(tb2_failures, error_rate):
    measured = accuracy(RuleEvolver(seed=0, error_rate=error_rate), tb2_failures)
    # clear transcripts are right unless an error is injected; a misleading one is right
    # only when the injected error happens to land on the true label (1 of 6 others)
    expected = (1 - AMBIGUOUS) * (1 - error_rate) + MISLEADING * error_rate / 6
    print(f"rule evolver, error_rate={error_rate}: diagnosis accuracy {measured:.1%} "
          f"on {len(tb2_failures)} simulated tb2 failures (expected {expected:.1%})")
    assert measured == pytest.approx(expected, abs=0.05)


def test_diagnosis_reads_only_the_transcript(tb2_failures):
    evolver = RuleEvolver(seed=3)
    diagnoses = evolver.diagnose(tb2_failures.drop(columns="truth"))
    assert list(diagnoses.columns[:7]) == DIAGNOSIS_COLUMNS
    assert list(diagnoses.columns[7:]) == FEATURES
    assert set(diagnoses["where"]) <= set(LEVERS)
    assert diagnoses["confidence"].between(0, 1, inclusive="right").all()
    evidence_quoted = [e in t for e, t in zip(diagnoses["evidence"], tb2_failures["transcript"])]
    assert all(evidence_quoted)
    swapped = tb2_failures.drop(columns="truth").assign(category="other", hard=False)
    again = evolver.diagnose(swapped)
    assert again["why"].tolist() == diagnoses["why"].tolist()
    assert evolver.diagnose(tb2_failures.drop(columns="truth")).equals(diagnoses)


def test_a_transcript_without_signature_gets_a_new_label_added_when_proposing(parent):
    failures = pd.DataFrame({"candidate": "c", "task_id": [f"tb2-00{i}" for i in range(3)],
                             "repeat": 0, "transcript": "submit()\ngrader: fail"})
    evolver = RuleEvolver(seed=0)
    diagnoses = evolver.diagnose(failures)
    assert (diagnoses["why"] == UNMATCHED).all()
    vocabulary = Vocabulary.default()
    assert UNMATCHED not in vocabulary.labels
    patches = evolver.propose(diagnoses, harness=harness_files(parent),
                              vocabulary=vocabulary, n=2)
    assert UNMATCHED in vocabulary.labels
    assert patches and all(p.why == UNMATCHED for p in patches)


def test_proposals_serve_the_dominant_pathology_with_valid_applicable_patches(
        tb2_failures, parent):
    evolver = RuleEvolver(seed=1, error_rate=0.0)
    diagnoses = evolver.diagnose(tb2_failures.drop(columns="truth"))
    top = diagnoses["why"].value_counts().index[0]
    patches = evolver.propose(diagnoses, harness=harness_files(parent),
                              vocabulary=Vocabulary.default(), n=4)
    assert len(patches) == 4
    assert patches[0].why == top
    assert len({p.id for p in patches}) == 4 and len({p.mechanism for p in patches}) == 4
    for patch in patches:
        assert patch.where in LEVERS and patch.beacon and patch.rationale
        assert all(c.path.startswith(patch.where + "/") for c in patch.changes)
        child = parent.parent / patch.id
        shutil.copytree(parent, child)
        apply_patch(child, patch)
        assert [p.mechanism for p in read_patches(harness_files(child))] == [patch.mechanism]


def test_proposals_are_reproducible_from_the_seed(tb2_failures, parent):
    def proposals(seed):
        evolver = RuleEvolver(seed=seed)
        diagnoses = evolver.diagnose(tb2_failures.drop(columns="truth"))
        return evolver.propose(diagnoses, harness=harness_files(parent),
                               vocabulary=Vocabulary.default(), n=5)

    assert proposals(4) == proposals(4)
    assert proposals(4) != proposals(5)
    evolver = RuleEvolver(seed=4)
    diagnoses = evolver.diagnose(tb2_failures.drop(columns="truth"))
    first = evolver.propose(diagnoses, harness=harness_files(parent),
                            vocabulary=Vocabulary.default(), n=5)
    evolver.reseed(4)
    assert evolver.propose(diagnoses, harness=harness_files(parent),
                           vocabulary=Vocabulary.default(), n=5) == first


def test_a_lineage_never_gets_the_same_mechanism_twice(parent):
    failures = pd.DataFrame({"candidate": "c", "task_id": [f"tiny-00{i}" for i in range(6)],
                             "repeat": 0,
                             "transcript": "submit()  # submitted without running the tests"})
    evolver = RuleEvolver(seed=2, error_rate=0.0)
    diagnoses = evolver.diagnose(failures)
    seen = []
    harness = parent
    while patches := evolver.propose(diagnoses, harness=harness_files(harness),
                                     vocabulary=Vocabulary.default(), n=1):
        seen.append(patches[0].mechanism)
        child = harness.parent / f"gen{len(seen)}"
        shutil.copytree(harness, child)
        apply_patch(child, patches[0])
        harness = child
    assert sorted(seen) == sorted(t.mechanism for t in TEMPLATES["careless-submit"])


def test_config_and_prompt_patches_edit_lines_in_place(parent):
    failures = pd.DataFrame({"candidate": "c", "task_id": ["a", "b"], "repeat": 0,
                             "transcript": "[stopped: thinking exceeded the budget at 9 tokens]"})
    evolver = RuleEvolver(seed=0, error_rate=0.0)
    options = TEMPLATES["thinking-runaway"]
    patches = evolver.propose(evolver.diagnose(failures), harness=harness_files(parent),
                              vocabulary=Vocabulary.default(), n=len(options))
    by_mechanism = {p.mechanism: p for p in patches}
    assert set(by_mechanism) == {t.mechanism for t in options}
    off = by_mechanism["thinking-off"].changes
    assert [(c.path, c.old, c.new) for c in off] == [
        ("config/agent.toml", "thinking_budget = 8192", "thinking_budget = 0")]
    budget = by_mechanism["token-budget-16x"].changes[0]
    assert budget.new == "thinking_budget = 131072"
    prompt = by_mechanism["concise-reasoning"].changes[0]
    assert prompt.path == "prompt/system.md" and prompt.old and prompt.new.startswith(prompt.old)
    middleware = by_mechanism["runaway-recovery"].changes[0]
    assert middleware.path == "runtime/runaway_recovery.toml"
    assert f'beacon = "{by_mechanism["runaway-recovery"].beacon}"' in middleware.new


def test_config_templates_write_valid_toml_or_nothing():
    def edit(mechanism, text):
        (template,) = [t for ts in TEMPLATES.values() for t in ts if t.mechanism == mechanism]
        found = changes(template, {"config/agent.toml": text}, beacon="b", why="w", tasks=())
        for change in found:  # every edit leaves a file that parses, with the value set
            new = text.replace(change.old, change.new, 1) if change.old else change.new
            assert set(tomllib.loads(new)) >= set(template.config)
        return [(c.old, c.new) for c in found]

    assert edit("turn-limit-cut", "turn_limit = 30\n") == [("turn_limit = 30", "turn_limit = 15")]
    assert edit("turn-limit-cut", "turn_limit = 1\n") == []  # a limit halved stays >= 1
    assert edit("turn-limit-cut", 'model = "m"\n') == []  # no value to halve
    assert edit("token-budget-16x", "max_tokens = 9\n") == []
    assert edit("context-window-raise", 'model = "m"\n') == [
        ('model = "m"', 'model = "m"\ncontext_window = 262144')]
    assert edit("context-window-raise", "") == [(None, "context_window = 262144\n")]


def test_env_gates_follow_where_the_failures_concentrate():
    rows = pd.DataFrame({"task_id": list("abcde"), "category": ["py"] * 4 + ["sh"],
                         "has_tests": [True, False, True, False, True]})
    assert derive_gate(rows) == 'category == "py"'
    spread = rows.assign(category=list("vwxyz"))
    assert derive_gate(spread) == ""
    flagged = spread.assign(has_tests=[True, True, True, True, False])
    assert derive_gate(flagged) == "has_tests"
    assert derive_gate(rows.head(3)) == ""  # too few tasks to generalise from


def test_an_env_gate_derived_from_failures_admits_them(parent):
    agent = sim.preset("tiny")
    failures = failures_of(agent, SEED_HARNESS, run_seeds=range(6))
    evolver = RuleEvolver(seed=0, error_rate=0.0)
    diagnoses = evolver.diagnose(failures.drop(columns="truth"))
    patches = evolver.propose(diagnoses, harness=harness_files(parent),
                              vocabulary=Vocabulary.default(), n=6)
    gated = [p for p in patches if p.env_gate]
    assert gated
    from gsme.envgate import parse

    tasks = agent.tasks().set_index("task_id")
    for patch in gated:
        failing = diagnoses.loc[diagnoses["why"] == patch.why, "task_id"].unique()
        admitted = parse(patch.env_gate).mask(tasks.loc[failing].reset_index())
        assert admitted.mean() >= 0.75


def test_errors_name_the_argument(parent):
    with pytest.raises(ValueError, match="error_rate must be in"):
        RuleEvolver(error_rate=1.5)
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['transcript'\]"):
        RuleEvolver().diagnose(pd.DataFrame({"candidate": ["c"], "task_id": ["t"], "repeat": [0]}))
    diagnoses = pd.DataFrame({"why": ["looping"]})
    with pytest.raises(ValueError, match="n must be a whole number"):
        RuleEvolver().propose(diagnoses, harness=harness_files(parent),
                              vocabulary=Vocabulary.default(), n=-1)
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['task_id', 'where'\]"):
        RuleEvolver().propose(diagnoses, harness=harness_files(parent), n=1)
    with pytest.raises(TypeError, match="harness must be a mapping of paths to text"):
        RuleEvolver().propose(diagnoses.assign(task_id="t", where="runtime"), harness=parent,
                              n=1)


def test_without_a_vocabulary_the_default_one_is_used(parent):
    failures = pd.DataFrame({"candidate": "c", "task_id": ["a", "b"], "repeat": [0, 1],
                             "transcript": ["submit()\ngrader: fail", "loop"]})
    evolver = RuleEvolver(seed=0)
    patches = evolver.propose(evolver.diagnose(failures), harness=harness_files(parent), n=1)
    assert [p.why for p in patches] == [UNMATCHED]


def test_trial_bookkeeping_columns_are_not_task_features():
    trials = pd.DataFrame({"candidate": ["c"], "task_id": ["t"], "split": ["train"],
                           "repeat": [2], "attempt": [1], "passed": [False],
                           "infra_ok": [True], "activated": [False], "beacons": [""],
                           "tokens": [1.0], "cost_usd": [0.1], "seconds": [2.0],
                           "pathology": ["looping"], "trajectory": ["ref"],
                           "error": ["wrong answer"], "borrowed_from": [None], "round": [3],
                           "transcript": ["submitted without running the tests"],
                           "category": ["py"], "hard": [True]})
    diagnoses = RuleEvolver(seed=0, error_rate=0.0).diagnose(trials)
    assert list(diagnoses.columns) == DIAGNOSIS_COLUMNS + ["category", "hard"]
    assert diagnoses["repeat"].tolist() == [2]


def test_mechanisms_tried_without_credit_are_not_proposed_again(parent):
    failures = pd.DataFrame({"candidate": "c", "task_id": ["a", "b"], "repeat": 0,
                             "transcript": "[stopped: thinking exceeded the budget at 9 tokens]"})
    evolver = RuleEvolver(seed=0, error_rate=0.0)
    diagnoses = evolver.diagnose(failures)
    options = [t.mechanism for t in TEMPLATES["thinking-runaway"]]
    history = pd.DataFrame({"candidate": ["c1", "c2"], "mechanism": options[:2],
                            "where": "config", "why": "thinking-runaway",
                            "decision": ["inconclusive", "credit"], "delta_pp": [0.0, 9.0]})
    patches = evolver.propose(diagnoses, harness=harness_files(parent),
                              vocabulary=Vocabulary.default(), n=len(options),
                              history=history)
    assert {p.mechanism for p in patches} == set(options) - {options[0]}


def test_a_patch_goes_to_the_diagnosed_lever_first(parent):
    failures = pd.DataFrame({"candidate": "c", "task_id": ["a", "b", "c"], "repeat": 0,
                             "transcript": "submitted without running the tests"})
    on_lever = {t.mechanism for t in TEMPLATES["careless-submit"] if t.where == "runtime"}
    for seed in range(6):
        evolver = RuleEvolver(seed=seed, error_rate=0.0)
        diagnoses = evolver.diagnose(failures)
        assert set(diagnoses["where"]) == {"runtime"}
        first = evolver.propose(diagnoses, harness=harness_files(parent),
                                vocabulary=Vocabulary.default(), n=1)
        assert first[0].mechanism in on_lever and first[0].where == "runtime"
