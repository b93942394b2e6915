"""A trial runner of your own, as gsme's command agent calls it (a stand-in: SIMULATED).

Usage: ``runner.py HARNESS TASK_ID REPEAT RUN_SEED OUT``. gsme hands it a fresh copy of the
candidate's harness; it runs the task and writes ``OUT/result.json``. This one pretends to
be a model that passes a task more often when the harness's ``runtime/`` folder turns on
the ``submit-verify`` middleware, whose beacon it then reports. Outcomes are a hash of the
task, repeat, run seed and harness, so they are reproducible.
"""

import hashlib
import json
import sys
import tomllib
from pathlib import Path

harness, task_id, repeat, run_seed, out = sys.argv[1:6]
runtime = [tomllib.loads(path.read_text()) for path in Path(harness, "runtime").glob("*.toml")]
verify = [middleware for middleware in runtime if middleware.get("name") == "submit-verify"]
key = f"{task_id}|{repeat}|{run_seed}|{bool(verify)}".encode()
draw = int.from_bytes(hashlib.sha256(key).digest()[:8], "little") / 2**64
passed = draw < (0.75 if verify else 0.35)
transcript = (f"task {task_id}: tests pass, submitted" if passed else
              f"task {task_id}: submitted without running the tests; hidden tests failed")
Path(out, "result.json").write_text(json.dumps({
    "passed": passed, "beacons": [m["beacon"] for m in verify], "transcript_text": transcript}))
