"""List gsme's public functions and classes that have no docstring of their own.

Public means: in the ``__all__`` of a public module (see ``docs/apigen.py``). Constants
carry no docstring of their own and are not counted. Run ``python docs/undocumented.py``
(``--examples`` also lists docstrings without an ``Examples`` section, ``--methods``
public methods without a docstring); it exits 1 when a public function or class has no
docstring.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from apigen import canonical, exports, kind


def public_objects() -> dict[str, object]:
    """Every public function, class and exception, by its canonical dotted name."""
    table = exports()
    names = canonical(table)
    return {names[(m, n)]: obj for m, pairs in table.items() for n, obj in pairs
            if kind(obj) in ("function", "class", "exception")}


def _own_doc(obj: object) -> str:
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
    return (doc or "").strip()


def _gsme_own() -> dict[str, object]:
    """The public objects gsme defines: a class another library defines
    (``pydantic.ValidationError``, re-exported by :mod:`gsme.settings`) is that library's to
    document and is not counted."""
    return {name: obj for name, obj in public_objects().items()
            if obj.__module__.split(".")[0] == "gsme"}


def undocumented() -> list[str]:
    """Canonical names of gsme's public functions and classes with no docstring of their own."""
    return sorted(name for name, obj in _gsme_own().items() if not _own_doc(obj))


def without_examples() -> list[str]:
    """Canonical names of gsme's own public functions and classes whose docstring has no
    ``Examples`` section."""
    return sorted(name for name, obj in _gsme_own().items()
                  if "Examples\n" not in _own_doc(obj))


def undocumented_methods() -> list[str]:
    """Public methods and properties of gsme's public classes with no docstring, inherited
    ones counting (a method implementing an interface shows the interface's)."""
    out = []
    for name, cls in public_objects().items():
        if not inspect.isclass(cls) or not cls.__module__.startswith("gsme"):
            continue
        for attr, value in vars(cls).items():
            func = value.fget if isinstance(value, property) else getattr(value, "__func__", value)
            if attr.startswith("_") or not (inspect.isfunction(func) or isinstance(value, property)):
                continue
            if not (inspect.getdoc(getattr(cls, attr)) or "").strip():
                out.append(f"{name}.{attr}")
    return sorted(out)


def main(argv: list[str]) -> int:
    objects = public_objects()
    missing = undocumented()
    print(f"{len(objects)} public functions and classes; {len(missing)} without a docstring")
    print("".join(f"  {name}\n" for name in missing), end="")
    if "--examples" in argv:
        bare = without_examples()
        print(f"{len(bare)} without an Examples section")
        print("".join(f"  {name}\n" for name in bare), end="")
    if "--methods" in argv:
        bare = undocumented_methods()
        print(f"{len(bare)} public methods without a docstring")
        print("".join(f"  {name}\n" for name in bare), end="")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
