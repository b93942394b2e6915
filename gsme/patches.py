"""Harnesses and the patches applied to them.

(Over 600 lines because every rule an untrusted patch must pass before anything is written
is here, in one place: lever paths, sizes, env gates, beacons, recombination.)

A harness is a set of text files in four levers, ``prompt/``, ``knowledge/``, ``runtime/``
and ``config/``, plus ``patches/``: one TOML manifest per applied patch (``id, where, why,
env_gate, beacon, rationale, mechanism, predicted_tasks`` and the file changes made). gsme
handles a harness as a mapping of POSIX paths to text (:func:`harness_files` reads one from
a directory; :meth:`gsme.gitrepo.HarnessRepo.files` from git), so evolvers read harnesses
without touching any working tree.

A patch changes files of exactly one lever, its ``where``. :func:`plan_patch` checks every
change before anything is written, so a patch either applies whole or is refused with a
:class:`PatchError` naming what is wrong: a path outside the lever (absolute, ``..``,
``patches/``, a ``.git*`` name, too long), a file or a harness over the size limits
(:func:`check_size`, the one size rule of mutations and recombinations), an ``old`` text
found zero or several times, a change that would change nothing, an env gate that does not
parse, a gated patch an agent could not undo where its gate rejects a task
(:mod:`gsme.gated`: a whole-file write over a non-empty file, new text empty or not
unique in the file), text that is not valid Unicode (a lone surrogate: git and the ledger
store UTF-8) or holds a key-shaped string (:func:`gsme.redact.key_kind`) or the value of
a secret of the run (plain or encoded; a patch is committed to git, so a key in it is
refused, named by field, never shown). Every refusal is a :class:`PatchError`.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import tomli_w

from gsme.envgate import EnvGateError, parse
from gsme.redact import Redactor, key_kind
from gsme.schema import LEVERS

__all__ = [
    "MAX_FILE_BYTES", "MAX_HARNESS_BYTES", "MAX_HARNESS_FILES", "MAX_PATCH_FILES",
    "MAX_PATH_CHARS", "PATCHES_DIR", "SLUG", "FileChange", "Patch", "PatchError",
    "apply_patch", "check_frozen", "check_size", "harness_files", "lever_files",
    "patch_from_dict", "patch_to_dict", "plan_patch", "read_patches", "validate_patch",
]

MAX_FILE_BYTES = 32_768
"""Largest file a harness may hold."""
MAX_HARNESS_BYTES = 1_048_576
"""Largest total size of a harness's files."""
MAX_HARNESS_FILES = 256
"""Most files a harness may hold."""
MAX_PATCH_FILES = 16
"""Most files one patch may change."""
MAX_PATH_CHARS = 160
"""Longest path (and ``MAX_PATH_CHARS // 2`` the longest name in it) a patch may write."""
PATCHES_DIR = "patches"
SLUG = re.compile(r"[a-z0-9][a-z0-9_-]*")
_TEXT_FIELDS = ("id", "where", "why", "mechanism", "beacon", "env_gate", "rationale")
_REQUIRED = ("id", "where", "why", "mechanism", "beacon")
_SAFE_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


@dataclass(frozen=True)
class FileChange:
    """One file change inside a harness, with ``path`` relative to the harness root.

    With ``old`` None the file is written whole (created or replaced) with ``new``.
    With ``old`` given, exactly one occurrence of ``old`` in the existing file becomes
    ``new``; a change that finds ``old`` zero or several times does not apply.

    See Also
    --------
    Patch : The patch that carries the changes.

    Examples
    --------
    >>> from gsme.resources import SEED_HARNESS
    >>> h = harness_files(SEED_HARNESS)
    >>> old = h["prompt/system.md"].splitlines()[0]
    >>> edit = FileChange("prompt/system.md", old + " Verify before you submit.", old=old)
    >>> p = Patch(id="verify", where="prompt", why="careless-submit",
    ...           mechanism="submit-verify", beacon="verify", changes=(edit,))
    >>> plan_patch(h, p)["prompt/system.md"].startswith(old + " Verify")
    True
    """

    path: str
    new: str
    old: str | None = None


@dataclass(frozen=True)
class Patch:
    """An env-gated harness patch aimed at one (where, why) pathology cell.

    ``where`` is the lever whose files the patch changes; ``why`` the failure mode it
    targets; ``mechanism`` names what it does (free text or a catalogue name);
    ``env_gate`` is a predicate over task features (empty: every task); ``beacon`` is the
    activation beacon its code path emits when it acts.

    See Also
    --------
    FileChange : One file change of a patch.
    plan_patch, apply_patch : Check a patch against a harness; write it.
    patch_to_dict : The patch as its TOML manifest.

    Examples
    --------
    >>> p = Patch(id="verify", where="prompt", why="careless-submit", mechanism="submit-verify",
    ...           beacon="verify", env_gate="has_tests",
    ...           changes=(FileChange("prompt/verify.md", "Run the tests first.\\n"),))
    >>> p.where, p.changes[0].path
    ('prompt', 'prompt/verify.md')
    """

    id: str
    where: str
    why: str
    mechanism: str
    beacon: str
    env_gate: str = ""
    rationale: str = ""
    changes: tuple[FileChange, ...] = field(default_factory=tuple)
    predicted_tasks: tuple[str, ...] = field(default_factory=tuple)


class PatchError(ValueError):
    """A patch that is malformed or does not apply; the message names the field or path.

    Examples
    --------
    >>> p = Patch(id="x", where="prompt", why="looping", mechanism="m", beacon="x",
    ...           changes=(FileChange("runtime/a.py", "pass\\n"),))
    >>> try:
    ...     validate_patch({}, p)
    ... except PatchError as err:
    ...     print(err)
    changes[0] (path 'runtime/a.py') touches lever 'runtime', but the patch's where is 'prompt'; a patch changes files under prompt/ only
    """


def harness_files(harness_dir: str | Path) -> dict[str, str]:
    """Every file of the harness at ``harness_dir``: relative POSIX path → text, sorted.

    Files outside the four levers and ``patches/`` are left out; a file that is not UTF-8
    text is refused with a :class:`PatchError`.

    See Also
    --------
    lever_files : The files an evolver may change.
    read_patches : The patches recorded in a harness.

    Examples
    --------
    >>> from gsme.resources import SEED_HARNESS
    >>> list(harness_files(SEED_HARNESS))
    ['config/agent.toml', 'knowledge/notes.md', 'patches/.gitkeep', 'prompt/system.md', 'runtime/README.md']
    """
    root = Path(harness_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"harness_dir {root} is not a directory")
    files = {}
    for folder in (*LEVERS, PATCHES_DIR):
        for path in sorted((root / folder).rglob("*")):
            if path.is_file():
                rel = path.relative_to(root).as_posix()
                try:
                    files[rel] = path.read_bytes().decode("utf-8")
                except UnicodeDecodeError:
                    raise PatchError(f"harness file {rel} is not UTF-8 text") from None
    return dict(sorted(files.items()))


def lever_files(harness: Mapping[str, str]) -> dict[str, str]:
    """The files of the four levers only (what an evolver may change), sorted by path.

    Examples
    --------
    >>> lever_files({"runtime/a.py": "", "patches/p.toml": "", "prompt/system.md": ""})
    {'prompt/system.md': '', 'runtime/a.py': ''}
    """
    return {p: t for p, t in sorted(_mapping(harness).items()) if p.split("/", 1)[0] in LEVERS}


def read_patches(harness: Mapping[str, str]) -> list[Patch]:
    """The patches recorded in ``patches/*.toml`` of a harness mapping, sorted by id.

    Raises
    ------
    PatchError
        A manifest is not valid TOML or not a valid patch; the message names the file.

    Examples
    --------
    A planned patch's manifest reads back as the patch:

    >>> from gsme.resources import SEED_HARNESS
    >>> h = harness_files(SEED_HARNESS)
    >>> p = Patch(id="verify", where="prompt", why="careless-submit", mechanism="submit-verify",
    ...           beacon="verify", changes=(FileChange("prompt/verify.md", "Check first.\\n"),))
    >>> read_patches({**h, **plan_patch(h, p)}) == [p]
    True
    """
    patches = []
    for path, text in sorted(_mapping(harness).items()):
        folder, _, name = path.partition("/")
        if folder != PATCHES_DIR or "/" in name or not name.endswith(".toml"):
            continue
        try:
            patch = patch_from_dict(tomllib.loads(text))
        except (tomllib.TOMLDecodeError, PatchError) as err:
            raise PatchError(f"patch manifest {path} cannot be read: {err}") from None
        if patch.id != name[: -len(".toml")]:
            raise PatchError(f"patch manifest {path} holds id {patch.id!r}, not "
                             f"{name[: -len('.toml')]!r}")
        patches.append(patch)
    return sorted(patches, key=lambda p: p.id)


def plan_patch(harness: Mapping[str, str], patch: Patch, *,
               secrets: Mapping[str, str] | None = None) -> dict[str, str]:
    """Check that ``patch`` applies to ``harness``; return every file it writes.

    Changes are checked in order, each against the files as the earlier changes leave
    them, so two changes to one file compose. The result holds the new text of each
    changed file and the patch's manifest, ``patches/<id>.toml``. A text of the patch
    holding the value of one of ``secrets`` (variable name → value: a run's,
    :func:`gsme.redact.secrets_of`), written plain or encoded, is refused too.

    Raises
    ------
    PatchError
        Names the offending field (``id``, ``beacon``, ``why``, ``where``, ``env_gate``,
        ``changes``) or the path and what is wrong with it.

    See Also
    --------
    validate_patch : The same check, returning nothing.
    apply_patch : Write the planned files into a harness directory.

    Examples
    --------
    >>> from gsme.resources import SEED_HARNESS
    >>> p = Patch(id="verify", where="prompt", why="careless-submit", mechanism="submit-verify",
    ...           beacon="verify", changes=(FileChange("prompt/verify.md", "Check first.\\n"),))
    >>> list(plan_patch(harness_files(SEED_HARNESS), p))
    ['prompt/verify.md', 'patches/verify.toml']
    """
    if not isinstance(patch, Patch):
        raise TypeError(f"patch must be a gsme.patches.Patch, got {type(patch).__name__}")
    _check_text(patch, secrets)
    _check_fields(patch)
    harness = _mapping(harness)
    manifest = f"{PATCHES_DIR}/{patch.id}.toml"
    if manifest in harness:
        raise PatchError(f"patch id {patch.id!r} is already applied to this harness")
    paths = {getattr(c, "path", None) for c in patch.changes}
    if len(paths) > MAX_PATCH_FILES:
        raise PatchError(f"patch changes {len(paths)} files; a patch may change at most "
                         f"{MAX_PATCH_FILES}")
    folders = {p.rsplit("/", 1)[0] for p in harness if "/" in p}
    written: dict[str, str] = {}
    for index, change in enumerate(patch.changes):
        label = f"changes[{index}] (path {str(getattr(change, 'path', None))[:80]!r})"
        path = _target(patch.where, change, label)
        if path in folders or any(f.startswith(path + "/") for f in folders):
            raise PatchError(f"{label} is a directory, not a file")
        current = written.get(path, harness.get(path))
        written[path] = _changed(current, change, label)
        if patch.env_gate.strip():
            _check_undoable(current, written[path], change, label)
    written[manifest] = _dumps(patch_to_dict(patch))
    check_size({**harness, **written})
    return written


def validate_patch(harness: Mapping[str, str], patch: Patch) -> None:
    """Raise :class:`PatchError` unless ``patch`` applies to ``harness``; write nothing.

    Examples
    --------
    >>> h = {"prompt/system.md": "Solve the task."}
    >>> p = Patch(id="x", where="prompt", why="looping", mechanism="m", beacon="x",
    ...           changes=(FileChange("prompt/system.md", "Stop.", old="Retry."),))
    >>> try:
    ...     validate_patch(h, p)
    ... except PatchError as err:
    ...     print(err)
    changes[0] (path 'prompt/system.md'): old text not found; it must occur exactly once (old begins 'Retry.')
    """
    plan_patch(harness, patch)


def apply_patch(harness_dir: str | Path, patch: Patch) -> Path:
    """Apply ``patch`` to the harness directory ``harness_dir`` and record its manifest.

    Every change is validated first (see :func:`plan_patch`); nothing is written unless all
    of them apply, and nothing is written through a symbolic link.

    Returns
    -------
    Path
        The manifest written, ``<harness_dir>/patches/<id>.toml``.

    Examples
    --------
    >>> import shutil, tempfile
    >>> from gsme.resources import SEED_HARNESS
    >>> h = Path(shutil.copytree(SEED_HARNESS, Path(tempfile.mkdtemp()) / "h"))
    >>> p = Patch(id="verify", where="prompt", why="careless-submit", mechanism="submit-verify",
    ...           beacon="verify", changes=(FileChange("prompt/verify.md", "Check first.\\n"),))
    >>> apply_patch(h, p).name, (h / "prompt/verify.md").read_text()
    ('verify.toml', 'Check first.\\n')
    """
    root = Path(harness_dir)
    if not root.is_dir():
        raise PatchError(f"harness_dir {root} is not a directory")
    written = plan_patch(harness_files(root), patch)
    for rel in written:
        _refuse_links(root, rel)
    for rel, text in written.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text.encode("utf-8"))
    return root / PATCHES_DIR / f"{patch.id}.toml"


def check_size(harness: Mapping[str, str]) -> None:
    """The one size rule of every harness, mutated or merged.

    Raises
    ------
    PatchError
        A lever file over :data:`MAX_FILE_BYTES` (a manifest repeats its patch's text, so
        it counts only in the total), more than :data:`MAX_HARNESS_FILES` files, or more
        than :data:`MAX_HARNESS_BYTES` in all; the message names the files.

    Examples
    --------
    >>> check_size({"prompt/system.md": "Solve the task."})
    >>> try:
    ...     check_size({"prompt/big.md": "x" * (MAX_FILE_BYTES + 1)})
    ... except PatchError as err:
    ...     print(err)
    files over 32768 bytes: ['prompt/big.md']
    """
    sizes = {p: len(t.encode("utf-8")) for p, t in harness.items()}
    big = sorted(p for p, n in sizes.items()
                 if n > MAX_FILE_BYTES and not p.startswith(f"{PATCHES_DIR}/"))
    if big:
        raise PatchError(f"files over {MAX_FILE_BYTES} bytes: {big[:5]}")
    if len(sizes) > MAX_HARNESS_FILES:
        raise PatchError(f"the harness would hold {len(sizes)} files; at most "
                         f"{MAX_HARNESS_FILES}")
    total = sum(sizes.values())
    if total > MAX_HARNESS_BYTES:
        raise PatchError(f"the harness would hold {total} bytes; at most {MAX_HARNESS_BYTES}")


def check_frozen(before: Mapping[str, str], after: Mapping[str, str],
                 frozen: tuple[str, ...] | list[str]) -> None:
    """Refuse a harness change that touches a frozen setting.

    ``frozen`` lists settings as ``"<file>:<key>"``: a key (dotted for a nested table) of
    a TOML file of the harness, e.g. ``"config/agent.toml:model"``, the frozen task model
    (:attr:`gsme.agents.TaskAgent.frozen`). A setting absent from both harnesses is
    unchanged; one added, removed or given another value is a change.

    Raises
    ------
    PatchError
        Names the first setting changed, with its value before and after, or a TOML file
        holding a frozen setting that no longer parses.

    Examples
    --------
    >>> before = {"config/agent.toml": 'model = "m1"\\nturn_limit = 4\\n'}
    >>> check_frozen(before, {"config/agent.toml": 'model = "m1"\\nturn_limit = 8\\n'},
    ...              ["config/agent.toml:model"])
    >>> try:
    ...     check_frozen(before, {"config/agent.toml": 'model = "m2"\\n'},
    ...                  ["config/agent.toml:model"])
    ... except PatchError as err:
    ...     print(err)
    the change sets config/agent.toml model to 'm2' (it was 'm1'): a setting the agent names as frozen (the task model is part of the run's commitment); no patch may change it
    """
    for setting in frozen:
        path, _, key = setting.partition(":")
        was, now = (_setting(harness, path, key) for harness in (before, after))
        if was != now:
            told = (f"removes {path} {key}" if now is _ABSENT else
                    f"sets {path} {key} to {now!r}")
            had = "it was absent" if was is _ABSENT else f"it was {was!r}"
            raise PatchError(f"the change {told} ({had}): a setting the agent names as "
                             "frozen (the task model is part of the run's commitment); no "
                             "patch may change it")


_ABSENT = object()


def _setting(harness: Mapping[str, str], path: str, key: str):
    """The value at dotted ``key`` of the TOML file ``path`` of ``harness`` (_ABSENT)."""
    text = harness.get(path)
    if text is None:
        return _ABSENT
    try:
        value = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise PatchError(f"{path} holds the frozen setting {key!r} and does not parse as "
                         f"TOML: {err}") from None
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return _ABSENT
        value = value[part]
    return value


def patch_to_dict(patch: Patch) -> dict:
    """A TOML-ready dict of ``patch``; a change's ``old`` is left out when it is None.

    See Also
    --------
    patch_from_dict : Its inverse.

    Examples
    --------
    >>> p = Patch(id="verify", where="prompt", why="careless-submit", mechanism="submit-verify",
    ...           beacon="verify", changes=(FileChange("prompt/verify.md", "Check first."),))
    >>> patch_to_dict(p)["changes"]
    [{'path': 'prompt/verify.md', 'new': 'Check first.'}]
    >>> patch_from_dict(patch_to_dict(p)) == p
    True
    """
    if not isinstance(patch, Patch):
        raise TypeError(f"patch must be a gsme.patches.Patch, got {type(patch).__name__}")
    out = {name: getattr(patch, name) for name in _TEXT_FIELDS}
    out["predicted_tasks"] = list(patch.predicted_tasks)
    out["changes"] = [
        {"path": c.path, **({} if c.old is None else {"old": c.old}), "new": c.new}
        for c in patch.changes
    ]
    return out


def patch_from_dict(data: dict) -> Patch:
    """Inverse of :func:`patch_to_dict`.

    Raises
    ------
    PatchError
        Missing or unknown keys, or a field of the wrong type; the message names it.

    See Also
    --------
    patch_to_dict : Its inverse.

    Examples
    --------
    >>> p = patch_from_dict({"id": "verify", "where": "prompt", "why": "careless-submit",
    ...                      "mechanism": "submit-verify", "beacon": "verify",
    ...                      "changes": [{"path": "prompt/verify.md", "new": "Check first."}]})
    >>> p.changes
    (FileChange(path='prompt/verify.md', new='Check first.', old=None),)
    """
    if not isinstance(data, dict):
        raise PatchError(f"a patch must be a table/dict, got {type(data).__name__}")
    allowed = set(_TEXT_FIELDS) | {"predicted_tasks", "changes"}
    unknown = sorted(set(data) - allowed)
    missing = [key for key in _REQUIRED if key not in data]
    if unknown or missing:
        raise PatchError(
            f"patch has unknown key(s) {unknown} / lacks key(s) {missing}; "
            f"allowed keys: {sorted(allowed)}"
        )
    for name in _TEXT_FIELDS:
        if name in data and not isinstance(data[name], str):
            raise PatchError(f"patch field {name!r} must be a string, got {data[name]!r}")
    tasks = data.get("predicted_tasks", [])
    if not isinstance(tasks, (list, tuple)) or not all(isinstance(t, str) for t in tasks):
        raise PatchError(f"patch field 'predicted_tasks' must be a list of strings: {tasks!r}")
    changes = data.get("changes", [])
    if not isinstance(changes, (list, tuple)):
        raise PatchError(f"patch field 'changes' must be a list, got {changes!r}")
    return Patch(
        **{name: data[name] for name in _TEXT_FIELDS if name in data},
        predicted_tasks=tuple(tasks),
        changes=tuple(_change_from_dict(i, c) for i, c in enumerate(changes)),
    )


# ---------------------------------------------------------------------------- internals


def _mapping(harness) -> Mapping[str, str]:
    if not isinstance(harness, Mapping):
        raise TypeError(f"harness must be a mapping of paths to text (e.g. "
                        f"gsme.patches.harness_files(folder) or run.harness(candidate)), "
                        f"got {type(harness).__name__}")
    return harness


def _change_from_dict(index: int, data) -> FileChange:
    keys = set(data) if isinstance(data, dict) else None
    if keys is None or not {"path", "new"} <= keys <= {"path", "old", "new"}:
        raise PatchError(
            f"patch changes[{index}] must be a table with keys path, new and optionally "
            f"old; got {str(data)[:200]}"
        )
    for key in keys:
        if not isinstance(data[key], str):
            raise PatchError(f"patch changes[{index}].{key} must be a string: {data[key]!r}")
    return FileChange(path=data["path"], new=data["new"], old=data.get("old"))


def _check_text(patch: Patch, secrets: Mapping[str, str] | None) -> None:
    """Refuse a text field that is not encodable UTF-8 or holds a key or the value of one of
    ``secrets`` (in any form :class:`~gsme.redact.Redactor` finds), naming the field only
    (a field of the wrong type is left to the checks that name its type)."""
    held = Redactor(secrets) if secrets else None
    for name, text in _texts(patch):
        if not isinstance(text, str):
            continue
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as err:
            raise PatchError(f"patch {name} is not valid Unicode text (a lone surrogate at "
                             f"character {err.start}); it must encode as UTF-8") from None
        kind = key_kind(text)
        if kind is not None:
            raise PatchError(f"patch {name} holds a key-shaped string ({kind}); credentials "
                             "never go in a harness, which is committed to git")
        secret = None if held is None else held.find(text)
        if secret is not None:
            raise PatchError(f"patch {name} holds the value of {secret}, a secret of this run; "
                             "credentials never go in a harness, which is committed to git")


def _texts(patch: Patch):
    """``(field name, value)`` of every text a patch writes: its fields, predicted tasks and
    each change's path, old and new text."""
    for name in _TEXT_FIELDS:
        yield name, getattr(patch, name)
    for index, task in enumerate(patch.predicted_tasks):
        yield f"predicted_tasks[{index}]", task
    for index, change in enumerate(patch.changes):
        for name in ("path", "old", "new"):
            yield f"changes[{index}].{name}", getattr(change, name, None)


def _check_fields(patch: Patch) -> None:
    for name in ("id", "beacon", "why"):
        value = getattr(patch, name)
        if not isinstance(value, str) or SLUG.fullmatch(value) is None or len(value) > 64:
            raise PatchError(
                f"patch {name} {str(value)[:80]!r} must be a slug of at most 64 characters: "
                f"lowercase letters, digits, '-' and '_', starting with a letter or digit"
            )
    if patch.where not in LEVERS:
        raise PatchError(f"patch where {patch.where!r} is not a lever; allowed: {list(LEVERS)}")
    for name in ("mechanism", "env_gate", "rationale"):
        if not isinstance(getattr(patch, name), str):
            raise PatchError(f"patch {name} must be a string, got {getattr(patch, name)!r}")
    if not patch.mechanism.strip():
        raise PatchError("patch mechanism is empty; name what the patch does")
    try:
        parse(patch.env_gate)
    except EnvGateError as err:
        raise PatchError(f"patch env_gate does not parse: {err}") from None
    except (RecursionError, MemoryError, ValueError) as err:  # a gate parse must not crash
        raise PatchError(f"patch env_gate cannot be parsed: {type(err).__name__}") from None
    if not all(isinstance(t, str) for t in patch.predicted_tasks):
        raise PatchError(f"patch predicted_tasks must hold strings: {patch.predicted_tasks!r}")
    if not patch.changes:
        raise PatchError(f"patch {patch.id!r} has no changes; a patch must change a file")


def _target(where: str, change, label: str) -> str:
    """The checked relative path ``change`` writes."""
    if not isinstance(change, FileChange):
        raise PatchError(f"{label} must be a gsme.patches.FileChange, got "
                         f"{type(change).__name__}")
    if not isinstance(change.path, str) or not change.path.strip():
        raise PatchError(f"{label}: path must be a non-empty string")
    if not isinstance(change.new, str) or not isinstance(change.old, (str, type(None))):
        raise PatchError(f"{label}: new must be a string and old a string or None")
    if len(change.path) > MAX_PATH_CHARS:
        raise PatchError(f"{label}: the path has {len(change.path)} characters; at most "
                         f"{MAX_PATH_CHARS}")
    if "\\" in change.path or "\x00" in change.path:
        raise PatchError(f"{label}: use '/' separators; backslashes and NUL are refused")
    rel = PurePosixPath(change.path)
    if rel.is_absolute() or re.match(r"[A-Za-z]:", change.path):
        raise PatchError(f"{label} is absolute; paths are relative to the harness root")
    if ".." in rel.parts:
        raise PatchError(f"{label} contains '..'; it must stay inside {where}/")
    head = rel.parts[0]
    if head == PATCHES_DIR:
        raise PatchError(f"{label} writes into {PATCHES_DIR}/, which only manifests may hold")
    if head != where:
        other = f"lever {head!r}" if head in LEVERS else "no lever"
        raise PatchError(
            f"{label} touches {other}, but the patch's where is {where!r}; a patch changes "
            f"files under {where}/ only"
        )
    if len(rel.parts) < 2:
        raise PatchError(f"{label} names the lever folder itself, not a file inside it")
    for part in rel.parts[1:]:
        if part.lower().startswith(".git"):
            raise PatchError(f"{label}: {part!r} is a git control name; refused")
        if len(part) > MAX_PATH_CHARS // 2 or not _SAFE_PART.fullmatch(part):
            raise PatchError(f"{label}: file and folder names are letters, digits, '_', '-' "
                             f"and '.', at most {MAX_PATH_CHARS // 2} characters, not "
                             "starting with '.' or '-'")
    return rel.as_posix()


def _changed(current: str | None, change: FileChange, label: str) -> str:
    if change.old is None:
        if current == change.new:
            raise PatchError(f"{label} rewrites the file with its current content (a no-op)")
        new = change.new
    else:
        if current is None:
            raise PatchError(f"{label} replaces text in a file that does not exist")
        if change.old == "":
            raise PatchError(f"{label}: old is empty; give the exact text to replace, or "
                             "old=None")
        if change.old == change.new:
            raise PatchError(f"{label}: old and new are equal (a no-op)")
        first = current.find(change.old)
        if first < 0 or current.find(change.old, first + 1) >= 0:
            found = "not found" if first < 0 else "found more than once"
            raise PatchError(
                f"{label}: old text {found}; it must occur exactly once "
                f"(old begins {change.old[:60]!r})"
            )
        new = current.replace(change.old, change.new, 1)
    size = len(new.encode("utf-8"))
    if size > MAX_FILE_BYTES:
        raise PatchError(f"{label} would make a file of {size} bytes; at most "
                         f"{MAX_FILE_BYTES}")
    return new


def _check_undoable(current: str | None, new: str, change: FileChange, label: str) -> None:
    """Refuse a change of a gated patch that an agent could not undo on the tasks its gate
    rejects (:func:`gsme.gated.undo`): a whole-file write over a non-empty file, or a
    replacement whose new text is empty or not unique in the file it leaves."""
    if change.old is None:
        if current:
            raise PatchError(f"{label} writes a whole file over a non-empty one; a gated "
                             "patch gives old (the text it replaces), so an agent can undo "
                             "it where its env_gate rejects the task")
    elif not change.new or new.find(change.new, new.find(change.new) + 1) >= 0:
        raise PatchError(f"{label}: new text is {'empty' if not change.new else 'not unique'} "
                         "in the file; a gated patch's new text must occur once, so an agent "
                         "can undo it where its env_gate rejects the task")


def _refuse_links(root: Path, rel: str) -> None:
    """Refuse a write whose path runs through a symbolic link (out of the harness)."""
    here = root
    for part in PurePosixPath(rel).parts:
        here = here / part
        if here.is_symlink():
            raise PatchError(f"{here} is a symbolic link; gsme never writes through one")


def _dumps(data: dict) -> str:
    text = tomli_w.dumps(data, multiline_strings=True)
    # Multiline TOML strings normalise "\r\n"; fall back to escaped strings when that loses text.
    return text if tomllib.loads(text) == data else tomli_w.dumps(data)
