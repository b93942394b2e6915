"""Resources (issue 32): a plan's size is checked before it allocates (one line, exit 2), and
a long ``gsme compare`` shows a progress bar on a terminal, none with ``--quiet``. (A config
file's size limit: test_fault_config_bounds.py.)"""

import fcntl
import os
import pty
import resource
import struct
import subprocess
import sys
import termios

import numpy as np
import pandas as pd
import pytest
from faultkit import cli, gsme, one_line_error

from gsme import compare
from gsme.settings import MAX_SIMULATED_TRIALS, MAX_TASKS


def _two_gib():
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


@pytest.mark.parametrize("argv, says", [
    (["--tasks", "1000000000"], f"n_tasks must be at most {MAX_TASKS:,} tasks"),
    (["--tasks", "5000"], f"would simulate 18,000,000 trials (simulations x n_tasks x k_max x "
                          f"2), more than {MAX_SIMULATED_TRIALS:,}"),
])
def test_a_plan_too_large_to_hold_is_one_line(argv, says):
    """``gsme plan --tasks 1000000000`` allocated 26 TiB; the child runs under a 2 GiB cap."""
    done = gsme("plan", "--effect", "5", *argv, preexec_fn=_two_gib, timeout=300)
    assert done.returncode == 2 and says in one_line_error(done.stderr)


def test_the_analytic_plan_of_many_tasks_still_works(capsys):
    code, out, _ = cli(capsys, "plan", "--tasks", "5000", "--effect", "5", "--design", "fixed")
    assert code == 0 and "trials_per_side" in out
    with pytest.raises(ValueError, match="would simulate"):
        compare.plan(n_tasks=5000, effect_pp=5, designs=["adaptive"])


def _sides(tmp_path, n_tasks=60, k=3):
    rng = np.random.default_rng(3)
    paths = []
    for name, rate in (("base", 0.3), ("child", 0.7)):
        path = tmp_path / f"{name}.csv"
        pd.DataFrame({"candidate": name, "task_id": np.repeat([f"t{i}" for i in range(n_tasks)], k),
                      "split": "train", "repeat": np.tile(np.arange(k), n_tasks),
                      "passed": (rng.random(n_tasks * k) < rate).astype(int)}).to_csv(path,
                                                                                      index=False)
        paths.append(path)
    return paths


def _on_a_terminal(*argv):
    """Run ``gsme ARGV`` with stderr on a pseudo-terminal: (exit code, stdout, stderr)."""
    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "gsme.cli", *map(str, argv)],
                            stdout=subprocess.PIPE, stderr=secondary)
    os.close(secondary)
    chunks = []
    while True:
        try:
            chunk = os.read(primary, 4096)
        except OSError:  # the terminal closed: the command ended
            break
        if not chunk:
            break
        chunks.append(chunk)
    out = proc.stdout.read().decode()
    code = proc.wait(timeout=120)
    os.close(primary)
    return code, out, b"".join(chunks).decode(errors="replace")


def test_gsme_compare_shows_progress_on_a_terminal_and_none_with_quiet(tmp_path):
    base, child = _sides(tmp_path)
    code, out, err = _on_a_terminal("compare", base, child)
    assert code == 0 and "gsme compare: reading the logs" in err and "gating 360 trials" in err
    code, quiet_out, err = _on_a_terminal("compare", base, child, "--quiet")
    assert code == 0 and err == "" and quiet_out == out


def test_gsme_compare_lists_at_most_twenty_ids_a_direction(tmp_path, capsys):
    code, out, _ = cli(capsys, "compare", *_sides(tmp_path, n_tasks=200), "--quiet")
    line = next(s for s in out.splitlines() if s.startswith("moved up"))
    assert code == 0 and len(line.split(": ", 1)[1].split(" and ")[0].split(",")) == 20
    assert "more (--json lists all)" in line
