"""Harness directories and the patches applied to them.

A harness is a directory with four levers, ``prompt/``, ``knowledge/``, ``runtime/`` and
``config/``, plus ``patches/``: one TOML manifest per applied patch (``id, where, why,
env_gate, beacon, rationale, mechanism, predicted_tasks`` and the file changes made).

A patch changes files of exactly one lever, its ``where``. :func:`apply_patch` checks every
change against the harness before it writes anything, so a patch either applies whole or
leaves the harness untouched with a :class:`PatchError` that names what is wrong: a path
outside the lever (absolute, ``..``, a symlink out, ``patches/``), a file over the size
limit, an ``old`` text found zero or several times, a change that would change nothing.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path, PurePosixPath

import tomli_w

from gsme.envgate import EnvGateError, parse
from gsme.patch import FileChange, Patch
from gsme.schema import LEVERS

__all__ = [
    "LEVERS",
    "MAX_BYTES",
    "PATCHES_DIR",
    "PatchError",
    "apply_patch",
    "harness_files",
    "patch_from_dict",
    "patch_to_dict",
    "read_patches",
    "validate_patch",
]

MAX_BYTES = 32_768
PATCHES_DIR = "patches"
SLUG = re.compile(r"[a-z0-9][a-z0-9_-]*")
_TEXT_FIELDS = ("id", "where", "why", "mechanism", "beacon", "env_gate", "rationale")
_REQUIRED = ("id", "where", "why", "mechanism", "beacon")


class PatchError(ValueError):
    """A patch that is malformed or does not apply; the message names the field or path."""


def validate_patch(harness_dir: str | Path, patch: Patch, *, max_bytes: int = MAX_BYTES) -> None:
    """Check that ``patch`` applies to the harness at ``harness_dir``; write nothing.

    Changes are checked in order, each against the files as the earlier changes leave
    them, so two changes to one file compose.

    Raises
    ------
    PatchError
        Names the offending field (``id``, ``beacon``, ``why``, ``where``, ``env_gate``,
        ``changes``) or the path and what is wrong with it.
    """
    _plan(Path(harness_dir), patch, max_bytes)


def apply_patch(harness_dir: str | Path, patch: Patch, *, max_bytes: int = MAX_BYTES) -> Path:
    """Apply ``patch`` to the harness at ``harness_dir`` and record its manifest.

    Every change is validated first (see :func:`validate_patch`); nothing is written
    unless all of them apply.

    Returns
    -------
    Path
        The manifest written, ``<harness_dir>/patches/<id>.toml``.

    Examples
    --------
    >>> import shutil, tempfile
    >>> from gsme._paths import SEED_HARNESS
    >>> h = Path(shutil.copytree(SEED_HARNESS, Path(tempfile.mkdtemp()) / "h"))
    >>> p = Patch(id="verify", where="prompt", why="careless-submit", mechanism="submit-verify",
    ...           beacon="verify", changes=(FileChange("prompt/verify.md", "Check first.\\n"),))
    >>> apply_patch(h, p).name, (h / "prompt/verify.md").read_text()
    ('verify.toml', 'Check first.\\n')
    """
    root = Path(harness_dir)
    contents = _plan(root, patch, max_bytes)
    manifest = root / PATCHES_DIR / f"{patch.id}.toml"
    for path, text in contents.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(_dumps(patch_to_dict(patch)), encoding="utf-8")
    return manifest


def read_patches(harness_dir: str | Path) -> list[Patch]:
    """The patches recorded in ``<harness_dir>/patches/*.toml``, sorted by id.

    Raises
    ------
    PatchError
        A manifest is not valid TOML or not a valid patch; the message names the file.
    """
    folder = Path(harness_dir) / PATCHES_DIR
    patches = []
    for path in sorted(folder.glob("*.toml")):
        try:
            patch = patch_from_dict(tomllib.loads(path.read_text(encoding="utf-8")))
        except (tomllib.TOMLDecodeError, PatchError, UnicodeDecodeError) as err:
            raise PatchError(f"patch manifest {path} cannot be read: {err}") from None
        if patch.id != path.stem:
            raise PatchError(f"patch manifest {path} holds id {patch.id!r}, not {path.stem!r}")
        patches.append(patch)
    return sorted(patches, key=lambda p: p.id)


def harness_files(harness_dir: str | Path) -> dict[str, str]:
    """Text of every lever file: relative POSIX path → content, sorted by path.

    ``patches/`` and anything outside the four lever folders are left out.
    """
    root = Path(harness_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"harness_dir {root} is not a directory")
    files = {}
    for lever in LEVERS:
        for path in sorted((root / lever).rglob("*")):
            if path.is_file():
                files[path.relative_to(root).as_posix()] = path.read_bytes().decode("utf-8")
    return dict(sorted(files.items()))


def patch_to_dict(patch: Patch) -> dict:
    """A TOML-ready dict of ``patch``; a change's ``old`` is left out when it is None."""
    if not isinstance(patch, Patch):
        raise TypeError(f"patch must be a gsme.patch.Patch, got {type(patch).__name__}")
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


def _change_from_dict(index: int, data) -> FileChange:
    keys = set(data) if isinstance(data, dict) else None
    if keys is None or not {"path", "new"} <= keys <= {"path", "old", "new"}:
        raise PatchError(
            f"patch changes[{index}] must be a table with keys path, new and optionally "
            f"old; got {data!r}"
        )
    for key in keys:
        if not isinstance(data[key], str):
            raise PatchError(f"patch changes[{index}].{key} must be a string: {data[key]!r}")
    return FileChange(path=data["path"], new=data["new"], old=data.get("old"))


def _plan(root: Path, patch: Patch, max_bytes: int) -> dict[Path, str]:
    """Validate ``patch`` against ``root``; return the final content of each file it touches."""
    if not isinstance(patch, Patch):
        raise TypeError(f"patch must be a gsme.patch.Patch, got {type(patch).__name__}")
    if not root.is_dir():
        raise PatchError(f"harness_dir {root} is not a directory")
    _check_fields(patch)
    if (root / PATCHES_DIR / f"{patch.id}.toml").exists():
        raise PatchError(f"patch id {patch.id!r} is already applied to {root}")
    lever = (root / patch.where).resolve()
    contents: dict[Path, str] = {}
    for index, change in enumerate(patch.changes):
        where = f"changes[{index}] (path {getattr(change, 'path', None)!r})"
        target = _target(root, lever, patch.where, change, where)
        current = contents[target] if target in contents else _read(target, where)
        new = _changed(current, change, where)
        size = len(new.encode("utf-8"))
        if size > max_bytes:
            raise PatchError(f"{where} would make a file of {size} bytes; max_bytes={max_bytes}")
        contents[target] = new
    return contents


def _check_fields(patch: Patch) -> None:
    for name in ("id", "beacon", "why"):
        value = getattr(patch, name)
        if not isinstance(value, str) or SLUG.fullmatch(value) is None:
            raise PatchError(
                f"patch {name} {value!r} must be a slug: lowercase letters, digits, '-' and "
                f"'_', starting with a letter or digit"
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
    if not all(isinstance(t, str) for t in patch.predicted_tasks):
        raise PatchError(f"patch predicted_tasks must hold strings: {patch.predicted_tasks!r}")
    if not patch.changes:
        raise PatchError(f"patch {patch.id!r} has no changes; a patch must change a file")


def _target(root: Path, lever: Path, where: str, change, label: str) -> Path:
    if not isinstance(change, FileChange):
        raise PatchError(f"{label} must be a gsme.patch.FileChange, got {type(change).__name__}")
    if not isinstance(change.path, str) or not change.path.strip():
        raise PatchError(f"{label}: path must be a non-empty string")
    if not isinstance(change.new, str) or not isinstance(change.old, (str, type(None))):
        raise PatchError(f"{label}: new must be a string and old a string or None")
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
    target = (root / rel).resolve()
    if not target.is_relative_to(lever) or not lever.is_relative_to(root.resolve()):
        raise PatchError(f"{label} resolves to {target}, outside {root / where} (a symlink?)")
    if target.is_dir():
        raise PatchError(f"{label} is a directory, not a file")
    return target


def _read(path: Path, label: str) -> str | None:
    if not path.exists():
        return None
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise PatchError(f"{label}: the existing file is not UTF-8 text") from None


def _changed(current: str | None, change: FileChange, label: str) -> str:
    if change.old is None:
        if current == change.new:
            raise PatchError(f"{label} rewrites the file with its current content (a no-op)")
        return change.new
    if current is None:
        raise PatchError(f"{label} replaces text in a file that does not exist")
    if change.old == "":
        raise PatchError(f"{label}: old is empty; give the exact text to replace, or old=None")
    if change.old == change.new:
        raise PatchError(f"{label}: old and new are equal (a no-op)")
    first = current.find(change.old)
    if first < 0 or current.find(change.old, first + 1) >= 0:
        found = "not found" if first < 0 else "found more than once"
        raise PatchError(
            f"{label}: old text {found}; it must occur exactly once "
            f"(old begins {change.old[:60]!r})"
        )
    return current.replace(change.old, change.new, 1)


def _dumps(data: dict) -> str:
    text = tomli_w.dumps(data, multiline_strings=True)
    # Multiline TOML strings normalise "\r\n"; fall back to escaped strings when that loses text.
    return text if tomllib.loads(text) == data else tomli_w.dumps(data)
