import shutil
import subprocess
from pathlib import Path

import git
import numpy as np
import pandas as pd
import pytest

from gsme.gitrepo import HarnessRepo, RepoError
from gsme.patches import FileChange, Patch, PatchError, apply_patch, harness_files
from gsme.resources import SEED_HARNESS
from gsme.schema import empty, validate

GATE = 'category in ["math", "py"] and title != "a, b: \\"c\\""'
RATIONALE = "Budget runs out mid-proof.\n\nCap thinking   \ntrailing spaces kept  "

CAP = Patch(id="cap", where="config", why="thinking-runaway", mechanism="budget-cap",
            beacon="budget-cap", env_gate=GATE, rationale=RATIONALE,
            changes=(FileChange("config/agent.toml", "thinking_budget = 2048",
                                "thinking_budget = 8192"),))
VERIFY = Patch(id="verify", where="prompt", why="careless-submit", mechanism="submit-verify",
               beacon="submit-verify", rationale="Submits without running tests.",
               changes=(FileChange("prompt/verify.md", "Run the tests before submitting.\n"),))
GUARD = Patch(id="guard", where="runtime", why="looping", mechanism="loop guard\nsecond line",
              beacon="loop-guard", env_gate="has_tests", rationale="",
              changes=(FileChange("runtime/loop-guard.toml",
                                  'name = "loop-guard"\nbeacon = "loop-guard"\n'),))
TOKENS = Patch(id="tokens", where="config", why="context-overflow", mechanism="more tokens",
               beacon="tokens", env_gate="n_files >= 3", rationale="Answers are cut off.",
               changes=(FileChange("config/agent.toml", "max_tokens = 8192",
                                   "max_tokens = 4096"),))


def git_out(repo: HarnessRepo, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo.path), *args], check=True,
                          capture_output=True, text=True).stdout


def state(repo: HarnessRepo) -> tuple:
    """Everything a failed operation must leave unchanged."""
    return (git_out(repo, "for-each-ref"), git_out(repo, "status", "--porcelain"),
            git_out(repo, "symbolic-ref", "HEAD"),
            sorted(p.relative_to(repo.path).as_posix() for p in repo.path.rglob("*")
                   if ".git" not in p.parts))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    repo = HarnessRepo.init(tmp_path_factory.mktemp("run") / "repo")
    made = {
        "c0001": repo.add_mutation("baseline", CAP, round=1),
        "c0002": repo.add_mutation("baseline", VERIFY, round=1),
        "c0003": repo.add_mutation("c0001", GUARD, round=2),
        "c0004": repo.add_mutation("baseline", TOKENS, round=2),
    }
    assert list(made) == list(made.values())
    clean, reason = repo.recombine("c0003", ["c0002"], round=3)
    assert (clean, reason) == ("c0005", None)
    octopus, reason = repo.recombine("baseline", ["c0002", "c0004"], round=3, candidate="mix")
    assert (octopus, reason) == ("mix", None)
    before = state(repo)
    failed, reason = repo.recombine("c0001", ["c0002", "c0004"], round=3)
    assert failed is None
    assert "merge conflict in ['config/agent.toml']" in reason and "c0004" in reason
    assert state(repo) == before
    return repo


def test_candidates_rebuilt_from_git_equal_what_was_created(run):
    frame = run.candidates()
    validate(frame, "candidates")
    assert list(frame.columns) == list(empty("candidates").columns)
    expected = pd.DataFrame(
        [
            ["baseline", "", "baseline", None, None, None, None, None, 0],
            ["c0001", "baseline", "mutation", "config", "thinking-runaway", "cap",
             "budget-cap", GATE, 1],
            ["c0002", "baseline", "mutation", "prompt", "careless-submit", "verify",
             "submit-verify", "", 1],
            ["c0003", "c0001", "mutation", "runtime", "looping", "guard", "loop-guard",
             "has_tests", 2],
            ["c0004", "baseline", "mutation", "config", "context-overflow", "tokens",
             "tokens", "n_files >= 3", 2],
            ["c0005", "c0003,c0002", "recombination", None, None, "verify",
             "submit-verify", "", 3],
            ["mix", "baseline,c0002,c0004", "recombination", None, None, "tokens,verify",
             "tokens,submit-verify", "", 3],
        ],
        columns=["candidate", "parents", "kind", "where", "why", "patch_id", "beacon",
                 "env_gate", "round"],
        dtype=object,
    )
    expected["round"] = expected["round"].astype(np.int64)
    got = frame[expected.columns].astype({"round": np.int64})
    pd.testing.assert_frame_equal(got, expected)
    assert frame["branch"].tolist() == ["gsme/" + c for c in expected["candidate"]]
    assert frame["commit"].tolist() == [run.commit_of(c) for c in expected["candidate"]]
    rationale = frame.set_index("candidate")["rationale"]
    assert rationale["c0001"] == RATIONALE and rationale["c0003"] == ""
    assert rationale["c0002"] == VERIFY.rationale
    assert HarnessRepo.open(run.path).candidates().equals(frame)


def test_recombination_env_gate_is_the_disjunction(tmp_path):
    # ``mix`` above merges gate "" (every task) with "n_files >= 3": "" wins.
    repo = HarnessRepo.init(tmp_path / "r")
    repo.add_mutation("baseline", CAP, round=1)
    repo.add_mutation("baseline", GUARD, round=1)
    cand, _ = repo.recombine("baseline", ["c0001", "c0002"], round=2)
    row = repo.candidates().set_index("candidate").loc[cand]
    assert row["env_gate"] == f'{GATE} or has_tests'
    assert row["beacon"] == "budget-cap,loop-guard" and row["patch_id"] == "cap,guard"


def test_trailers_are_real_git_trailers_with_commas_and_quotes(run):
    message = git.Repo(run.path).commit(run.commit_of("c0001")).message
    parsed = subprocess.run(["git", "interpret-trailers", "--parse"], input=message,
                            capture_output=True, text=True, check=True).stdout.splitlines()
    assert parsed == [
        "Gsme-Candidate: c0001", "Gsme-Parent: baseline", "Gsme-Kind: mutation",
        "Gsme-Where: config", "Gsme-Why: thinking-runaway", "Gsme-Beacon: budget-cap",
        "Gsme-Patch: cap", f"Gsme-Env-Gate: {GATE.replace(chr(92), chr(92) * 2)}",
        "Gsme-Mechanism: budget-cap", "Gsme-Round: 1",
    ]
    assert message.startswith("c0001: config/thinking-runaway via budget-cap (cap)\n\n")
    guard = git.Repo(run.path).commit(run.commit_of("c0003")).message
    assert "Gsme-Mechanism: loop guard\\nsecond line\n" in guard


def test_merge_commits_have_base_then_elites_as_parents(run):
    repo = git.Repo(run.path)
    mix = repo.commit(run.commit_of("mix"))
    assert [p.hexsha for p in mix.parents] == [run.commit_of(c)
                                               for c in ("baseline", "c0002", "c0004")]
    c5 = repo.commit(run.commit_of("c0005"))
    assert [p.hexsha for p in c5.parents] == [run.commit_of("c0003"), run.commit_of("c0002")]
    assert "Gsme-Kind: recombination" in c5.message
    assert [p.hexsha for p in repo.commit(run.commit_of("c0003")).parents] == [
        run.commit_of("c0001")]


def expected_files(tmp_path: Path, *patches: Patch) -> dict[str, bytes]:
    root = Path(shutil.copytree(SEED_HARNESS, tmp_path / "expected"))
    for patch in patches:
        apply_patch(root, patch)
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    "candidate, patches",
    [("baseline", ()), ("c0003", (CAP, GUARD)), ("c0005", (CAP, GUARD, VERIFY)),
     ("mix", (VERIFY, TOKENS))],
)
def test_checkout_reproduces_exact_files(run, tmp_path, candidate, patches):
    out = run.checkout(candidate, tmp_path / "out")
    got = {p.relative_to(out).as_posix(): p.read_bytes()
           for p in sorted(out.rglob("*")) if p.is_file()}
    assert got == expected_files(tmp_path, *patches)
    assert not (out / ".git").exists()
    assert [p.id for p in run.patches_of(candidate)] == sorted(p.id for p in patches)
    assert run.patches_of(candidate) == sorted(patches, key=lambda p: p.id)


def test_mix_merges_both_config_lines(run, tmp_path):
    text = harness_files(run.checkout("mix", tmp_path / "m"))["config/agent.toml"]
    assert "max_tokens = 8192" in text and "thinking_budget = 8192" in text


def test_lineage_follows_every_parent(run):
    assert run.lineage("baseline") == ["baseline"]
    assert run.lineage("c0003") == ["baseline", "c0001", "c0003"]
    assert run.lineage("c0005") == ["baseline", "c0001", "c0003", "c0002", "c0005"]
    assert run.lineage("mix") == ["baseline", "c0002", "c0004", "mix"]


def test_notes_merge_and_show_in_git_log(run):
    assert run.notes("c0002") == {}
    run.annotate("c0002", {"decision": "credit", "z": np.float64(2.5), "n": np.int64(30)})
    note = run.annotate("c0002", {"z": 2.75, "delta_pp": float("nan"), "ok": np.bool_(True)})
    assert note == run.notes("c0002")
    assert run.notes("c0002") == {"decision": "credit", "z": 2.75, "n": 30, "delta_pp": None,
                                  "ok": True}
    log = git_out(run, "log", "-1", "--notes=gsme", "gsme/c0002")
    assert '"decision": "credit"' in log and "Notes (gsme)" in log
    with pytest.raises(TypeError, match="JSON-like"):
        run.annotate("c0002", {"bad": object()})
    with pytest.raises(TypeError, match="string keys"):
        run.annotate("c0002", {1: "x"})
    assert run.notes("c0002")["z"] == 2.75


@pytest.mark.parametrize(
    "change, match",
    [
        (FileChange("../escape.md", "x"), r"contains '\.\.'"),
        (FileChange("prompt/../../escape.md", "x"), r"contains '\.\.'"),
        (FileChange("/tmp/escape.md", "x"), "absolute"),
        (FileChange("prompt/big.md", "x" * 40_000), "40000 bytes; at most"),
        (FileChange("prompt/.gitignore", "*"), "git control name"),
        (FileChange("config/agent.toml", "x"), "touches lever 'config'"),
        (FileChange("prompt/system.md", "x", "no such text"), "not found"),
    ],
)
def test_refused_patches_leave_the_repository_unchanged(run, change, match):
    before = state(run)
    patch = Patch(id="bad", where="prompt", why="looping", mechanism="m", beacon="b",
                  changes=(change,))
    with pytest.raises(PatchError, match=match):
        run.add_mutation("c0005", patch, round=4)
    assert state(run) == before
    assert not Path("/tmp/escape.md").exists()


def test_ids_are_monotone_and_checked(tmp_path):
    repo = HarnessRepo.init(tmp_path / "r")
    assert repo.add_mutation("baseline", VERIFY, round=1, candidate="c0041") == "c0041"
    assert repo.add_mutation("baseline", CAP, round=1) == "c0042"
    with pytest.raises(RepoError, match="'c0042' already exists"):
        repo.add_mutation("baseline", GUARD, round=1, candidate="c0042")
    with pytest.raises(RepoError, match="must be a slug"):
        repo.add_mutation("baseline", GUARD, round=1, candidate="Bad/Id")
    with pytest.raises(RepoError, match="unknown candidate 'nope'.*'baseline'"):
        repo.add_mutation("nope", GUARD, round=1)
    with pytest.raises(RepoError, match="round must be"):
        repo.add_mutation("baseline", GUARD, round=-1)
    with pytest.raises(RepoError, match="distinct candidates"):
        repo.recombine("c0041", ["c0041"], round=2)
    with pytest.raises(RepoError, match="distinct candidates"):
        repo.recombine("c0041", [], round=2)
    assert repo.recombine("c0041", ["baseline"], round=2) == (
        None, "merging baseline adds nothing to c0041")
    assert repo.candidates()["candidate"].tolist() == ["baseline", "c0041", "c0042"]


def test_init_and_open_refuse_what_is_not_theirs(tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(RepoError, match="is not empty"):
        HarnessRepo.init(tmp_path / "full")
    with pytest.raises(RepoError, match="not a git repository"):
        HarnessRepo.open(tmp_path / "full")
    git.Repo.init(tmp_path / "plain")
    with pytest.raises(RepoError, match="not a gsme one"):
        HarnessRepo.open(tmp_path / "plain")
    seed = Path(shutil.copytree(SEED_HARNESS, tmp_path / "seed"))
    (seed / "knowledge" / "link").symlink_to(tmp_path)
    with pytest.raises(RepoError, match="symlinks"):
        HarnessRepo.init(tmp_path / "new", baseline_dir=seed)


def test_baseline_working_tree_is_clean_and_untouched(run):
    assert git_out(run, "status", "--porcelain") == ""
    assert git_out(run, "symbolic-ref", "HEAD").strip() == "refs/heads/gsme/baseline"
    assert not (run.path / "prompt" / "verify.md").exists()
    with pytest.raises(RepoError, match="is not empty"):
        run.checkout("c0001", run.path)


def test_discard_removes_a_leaf_candidate_and_its_id_is_reused(tmp_path):
    repo = HarnessRepo.init(tmp_path / "r")
    first = repo.add_mutation("baseline", VERIFY, round=1)
    child = repo.add_mutation(first, CAP, round=2)
    repo.annotate(child, {"gate": "credit"})
    with pytest.raises(RepoError, match="parent of"):
        repo.discard(first)
    with pytest.raises(RepoError, match="baseline"):
        repo.discard("baseline")
    repo.discard(child)
    assert repo.candidates()["candidate"].tolist() == ["baseline", first]
    assert repo.add_mutation(first, CAP, round=2) == child
    assert repo.notes(child) == {}


def test_a_merge_whose_files_outgrow_the_size_limit_is_refused(tmp_path):
    from gsme.patches import MAX_FILE_BYTES as MAX_BYTES

    repo = HarnessRepo.init(tmp_path / "r")
    half = "x" * (MAX_BYTES // 2 + 10) + "\n"

    def grow(pid, first):
        text = half + "middle\n" if first else "middle\n" + half
        return Patch(id=pid, where="knowledge", why="looping", mechanism="notes", beacon=pid,
                     changes=(FileChange("knowledge/notes.md", text),))

    a = repo.add_mutation("baseline", Patch(
        id="base-notes", where="knowledge", why="looping", mechanism="notes", beacon="bn",
        changes=(FileChange("knowledge/notes.md", "middle\n"),)), round=1)
    b = repo.add_mutation(a, grow("front", True), round=2)
    c = repo.add_mutation(a, grow("back", False), round=2)
    before = state(repo)
    made, reason = repo.recombine(b, [c], round=3)
    assert made is None and reason.startswith(f"the merged harness is too large: files over {MAX_BYTES}")
    assert "knowledge/notes.md" in reason
    assert state(repo) == before
