"""Untrusted patches: every refusal is a PatchError, nothing is written, git holds exactly
the validated files."""

import shutil

import pytest

from gsme.gitrepo import HarnessRepo
from gsme.patches import (
    MAX_HARNESS_BYTES,
    MAX_PATCH_FILES,
    FileChange,
    Patch,
    PatchError,
    apply_patch,
    harness_files,
    plan_patch,
)
from gsme.resources import SEED_HARNESS


def patch(*changes, **kw):
    fields = {"id": "p", "where": "prompt", "why": "looping", "mechanism": "m", "beacon": "b",
              "changes": changes, **kw}
    return Patch(**fields)


@pytest.mark.parametrize("bad, says", [
    (patch(FileChange("prompt/.gitignore", "*")), "git control name"),
    (patch(FileChange("prompt/.git/config", "[core]")), "git control name"),
    (patch(FileChange("prompt/" + "n" * 300 + ".md", "x")), "characters"),
    (patch(FileChange("prompt/a.md", "x"), env_gate="(" * 249 + "a" + ")" * 249),
     "env_gate"),
    (patch(FileChange("prompt/a.md", "x"), env_gate="not " * 2000 + "a"), "env_gate"),
    (patch(*[FileChange(f"prompt/f{i}.md", "x") for i in range(MAX_PATCH_FILES + 1)]),
     "at most"),
])
def test_malicious_patches_are_patch_errors(tmp_path, bad, says):
    harness = shutil.copytree(SEED_HARNESS, tmp_path / "h")
    before = harness_files(harness)
    with pytest.raises(PatchError, match=says):
        plan_patch(before, bad)
    with pytest.raises(PatchError, match=says):
        apply_patch(harness, bad)
    assert harness_files(harness) == before


def test_a_patch_cannot_grow_a_harness_past_its_total_size():
    files = {f"knowledge/{i}.md": "x" * 30_000 for i in range(MAX_HARNESS_BYTES // 30_000)}
    grow = patch(*[FileChange(f"prompt/g{i}.md", "y" * 30_000) for i in range(4)])
    with pytest.raises(PatchError, match=f"at most {MAX_HARNESS_BYTES}"):
        plan_patch(files, grow)


def test_a_symlinked_patches_folder_is_never_written_through(tmp_path):
    harness = shutil.copytree(SEED_HARNESS, tmp_path / "h")
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.rmtree(harness / "patches")
    (harness / "patches").symlink_to(outside)
    with pytest.raises(PatchError, match="symbolic link"):
        apply_patch(harness, patch(FileChange("prompt/a.md", "x")))
    assert list(outside.iterdir()) == [] and not (harness / "prompt" / "a.md").exists()


def test_the_committed_tree_is_exactly_the_validated_patch(tmp_path):
    repo = HarnessRepo.init(tmp_path / "r")
    good = patch(FileChange("prompt/a.md", "alpha\n"),
                 FileChange("prompt/system.md", "# The system prompt", "# System prompt"))
    expected = {**repo.files("baseline"), **plan_patch(repo.files("baseline"), good)}
    name = repo.add_mutation("baseline", good, round=1)
    assert repo.files(name) == expected
    assert repo.files("baseline") == harness_files(SEED_HARNESS)  # the parent is untouched
