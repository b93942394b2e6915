"""Run a candidate solution against test cases, in a separate isolated Python process.

Invoked as ``python -I _pyfunc_runner.py REPORT_PATH`` with ``{"code", "entry_point",
"cases"}`` as JSON on standard input. Each case has ``call`` (a Python expression calling
the entry point) and either ``expected`` (a Python expression for the value) or ``raises``
(a builtin exception name). Writes ``{"status", "error", "results"}`` as JSON to
REPORT_PATH, where status is ``ok``, ``syntax_error``, ``load_error`` or ``missing``, and
each result is ``{"ok", "kind", "detail"}``: ``kind`` is ``pass``, ``wrong answer``,
``no exception`` or the name of the exception raised; ``detail`` says what happened. This file is never imported by the library.
"""

import builtins
import json
import sys

MEMORY_BYTES = 1 << 30
MAX_REPR = 200


def main() -> None:
    report_path = sys.argv[1]
    payload = json.load(sys.stdin)
    _limit_memory()
    report = _run(payload["code"], payload["entry_point"], payload["cases"])
    with open(report_path, "w", encoding="utf-8") as fh:
        json.dump(report, fh)


def _limit_memory() -> None:
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    except (ImportError, ValueError, OSError):  # platform without address-space limits
        pass


def _run(code: str, entry_point: str, cases: list) -> dict:
    try:
        compiled = compile(code, "solution.py", "exec")
    except SyntaxError as exc:
        return _fail("syntax_error", f"SyntaxError: {exc.msg} (line {exc.lineno})")
    namespace = {"__name__": "solution"}
    try:
        exec(compiled, namespace)  # noqa: S102 (this process exists to run it)
    except BaseException as exc:  # noqa: BLE001 (the solution's own top level failed)
        return _fail("load_error", f"{type(exc).__name__} while loading the solution: {exc}")
    func = namespace.get(entry_point)
    if not callable(func):
        return _fail("missing", f"the solution defines no function named {entry_point!r}")
    results = [_case(case, entry_point, func) for case in cases]
    return {"status": "ok", "error": None, "results": results}


def _case(case: dict, entry_point: str, func) -> dict:
    call = case["call"]
    try:
        got = eval(call, {entry_point: func})
    except BaseException as exc:  # noqa: BLE001 (any failure of the solution is a result)
        wanted = case.get("raises")
        if wanted and isinstance(exc, getattr(builtins, wanted)):
            return {"ok": True, "kind": "pass", "detail": ""}
        name = type(exc).__name__
        return {"ok": False, "kind": name, "detail": f"{call} raised {name}: {_short(exc)}"}
    if "raises" in case:
        detail = f"{call} returned {_short(got)}; expected {case['raises']} to be raised"
        return {"ok": False, "kind": "no exception", "detail": detail}
    expected = eval(case["expected"], {})
    try:
        ok = bool(got == expected)
    except BaseException as exc:  # noqa: BLE001 (a result whose == fails)
        name = type(exc).__name__
        return {"ok": False, "kind": name, "detail": f"{call}: comparing the result raised {name}"}
    if ok:
        return {"ok": True, "kind": "pass", "detail": ""}
    detail = f"{call} returned {_short(got)}; expected {_short(expected)}"
    return {"ok": False, "kind": "wrong answer", "detail": detail}


def _short(value) -> str:
    text = repr(value) if not isinstance(value, BaseException) else str(value)
    return text if len(text) <= MAX_REPR else text[: MAX_REPR - 3] + "..."


def _fail(status: str, error: str) -> dict:
    return {"status": status, "error": error, "results": []}


if __name__ == "__main__":
    main()
