"""A stand-in for a user's own harness runner, driven by gsme's command agent in tests.

Usage: harness_runner.py HARNESS TASK_ID REPEAT RUN_SEED OUT. A careless model: it passes a task
with a fixed chance, better when the harness's runtime declares a ``submit-verify``
middleware (whose beacon it then reports), and its failures say it submitted without
running the tests. Outcomes are a hash of (task, repeat, run seed, harness mechanisms), so
they are reproducible.
"""

import hashlib
import json
import sys
import tomllib
from pathlib import Path


def main() -> int:
    harness, task_id, repeat, run_seed, out = sys.argv[1:6]
    middlewares = [tomllib.loads(p.read_text())
                   for p in sorted(Path(harness, "runtime").glob("*.toml"))]
    verify = [m for m in middlewares if m.get("name") == "submit-verify"]
    chance = 0.75 if verify else 0.35
    key = f"{task_id}|{repeat}|{run_seed}|{bool(verify)}".encode()
    draw = int.from_bytes(hashlib.sha256(key).digest()[:8], "little") / 2**64
    passed = draw < chance
    text = f"task {task_id}: " + ("tests pass, submitted" if passed else
                                  "submitted without running the tests; hidden tests failed")
    result = {"passed": passed, "beacons": [m["beacon"] for m in verify], "tokens": 900,
              "cost_usd": 0.001, "transcript_text": text}
    Path(out, "result.json").write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
