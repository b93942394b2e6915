"""A stand-in harness runner for the command agent tests.

Usage: script_agent.py MODE OUT [EXTRA...]. Writes OUT/result.json according to MODE:
pass, fail, sleep, crash, infra, bad-json, no-result, env, args, transcript-file,
crash-with-result, bad-field.
"""

import json
import os
import sys
import time
from pathlib import Path


def write(out: Path, **result) -> None:
    (out / "result.json").write_text(json.dumps(result))


def main() -> int:
    mode, out = sys.argv[1], Path(sys.argv[2])
    task = json.loads((out / "task.json").read_text())
    if mode == "pass":
        write(out, passed=True, beacons=["submit-verify"], tokens=120, cost_usd=0.002,
              transcript_text=f"solved {task['task_id']}")
    elif mode == "fail":
        write(out, passed=False, error="wrong answer")
    elif mode == "sleep":
        time.sleep(60)
    elif mode == "crash":
        raise RuntimeError("the runner blew up")
    elif mode == "infra":
        print("sandbox unavailable", file=sys.stderr)
        return 75
    elif mode == "bad-json":
        (out / "result.json").write_text("{passed: yes")
    elif mode == "no-result":
        pass
    elif mode == "env":
        write(out, passed=True, transcript_text=json.dumps(sorted(os.environ)),
              error=os.environ.get("GSME_EXTRA"))
    elif mode == "args":
        write(out, passed=True, transcript_text=json.dumps(sys.argv[3:]))
    elif mode == "transcript-file":
        (out / "log.txt").write_text("step 1\nstep 2\n")
        write(out, passed=False, infra_ok=True, transcript="log.txt", tokens=None)
    elif mode == "crash-with-result":
        write(out, passed=True, beacons=["late"])
        return 3
    elif mode == "bad-field":
        write(out, passed="yes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
