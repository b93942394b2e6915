"""Configs are checked against what the statistics support before a run directory is made
(issue 32): one line, exit 2, nothing created; the Python settings refuse the same."""

import resource

import pytest
from faultkit import cli, gsme, one_line_error, tiny_config

from gsme.settings import (
    MAX_CONFIG_BYTES,
    MAX_EXACT_REPEATS,
    MAX_LOOKS,
    GateConfig,
    RunConfig,
    ValidationError,
)

BEYOND = [
    ("run_seed", "-1", "run_seed = -1: Input should be greater than or equal to 0"),
    ("gate", '{ design = "fixed", k = 41, k_max = 41 }',
     f"k_max (41) must be <= {MAX_EXACT_REPEATS}, the most repeats the exact sign-flip p"),
    ("gate", '{ design = "fixed", k = 1000000000, k_max = 1000000000 }',
     "gate.k = 1000000000: Input should be less than or equal to 100"),
    ("gate", '{ design = "fixed", k = 1000000000, k_max = 1000000000, exact_below = 0 }',
     "gate.k = 1000000000: Input should be less than or equal to 100"),
    ("gate", '{ design = "adaptive", k = 3, k_max = 100000000, k_step = 1 }',
     "gate.k_max = 100000000: Input should be less than or equal to 100"),
    ("gate", '{ design = "adaptive", k = 1, k_max = 40, k_step = 1 }',
     f"make 40 looks, more than {MAX_LOOKS}"),
]


@pytest.mark.parametrize("key, value, says", BEYOND)
def test_settings_beyond_the_statistics_are_refused_before_the_run_exists(
        tmp_path, capsys, key, value, says):
    path = tiny_config(tmp_path / "c.toml", tmp_path / "run", **{key: value})
    code, _, err = cli(capsys, "run", path)
    assert code == 2 and says in one_line_error(err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.toml"]


@pytest.mark.parametrize("settings", [
    {"k": 41, "k_max": 41}, {"k": 10**9, "k_max": 10**9, "exact_below": 0},
    {"design": "adaptive", "k": 3, "k_max": 10**8, "k_step": 1},
])
def test_the_python_settings_share_the_bounds(settings):
    with pytest.raises(ValidationError):
        GateConfig(**settings)
    with pytest.raises(ValidationError):
        RunConfig(run_seed=-1)


def test_the_largest_supported_settings_are_accepted():
    assert GateConfig(k=MAX_EXACT_REPEATS, k_max=MAX_EXACT_REPEATS).k == MAX_EXACT_REPEATS
    assert GateConfig(k=100, k_max=100, exact_below=0).k == 100
    assert GateConfig(design="adaptive", k=1, k_step=1, k_max=MAX_LOOKS).k_max == MAX_LOOKS


def _two_gib():
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def test_a_config_file_is_read_up_to_its_size_limit(tmp_path):
    """``gsme run /dev/zero`` read until memory ran out; the child runs under a 2 GiB cap."""
    done = gsme("run", "/dev/zero", preexec_fn=_two_gib, timeout=120, cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-500:]
    assert f"larger than {MAX_CONFIG_BYTES:,} bytes" in one_line_error(done.stderr)
    big = tmp_path / "big.toml"
    big.write_text("# padding\n" * (MAX_CONFIG_BYTES // 10 + 1))
    done = gsme("run", big, timeout=120, cwd=tmp_path)
    assert done.returncode == 2 and "larger than" in one_line_error(done.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.toml"]
