"""Configs are checked whole before anything is created; errors are one line with exit 2."""

import pytest
from faultkit import cli, one_line_error, tiny_config

from gsme import config, plugins


@pytest.mark.parametrize("key, value, says", [
    ("rounds", '"five"', "rounds = 'five'"),
    ("rounds", "-3", "rounds = -3: Input should be greater than or equal to 0"),
    ("rounds", "2.5", "rounds = 2.5"),
    ("trial_budget", '"lots"', "trial_budget = 'lots'"),
    ("trial_budget", "-10", "trial_budget = -10"),
    ("children_per_round", "-1", "children_per_round = -1"),
    ("workers", "0", "workers = 0"),
    ("run_seed", '"abc"', "run_seed = 'abc'"),
    ("policy", '"hopeful"', "policy = 'hopeful'"),
    ("frobnicate", "1", "frobnicate = 1: Extra inputs are not permitted"),
    ("rounds", "true", "rounds = true: needs a number, not a boolean"),
    ("trial_budget", "false", "trial_budget = false: needs a number, not a boolean"),
    ("gate", "{ k = true }", "gate.k = true: needs a number, not a boolean"),
])
def test_bad_run_values_name_key_value_and_rule(tmp_path, capsys, key, value, says):
    path = tiny_config(tmp_path / "c.toml", tmp_path / "run", **{key: value})
    code, _, err = cli(capsys, "run", path)
    assert code == 2 and says in one_line_error(err)
    assert not (tmp_path / "run").exists()  # nothing was created
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.toml"]


@pytest.mark.parametrize("text, says", [
    ("run = 5\n", "run = 5 must be a table"),
    ('agent = "sim"\n[run]\ndir = "run"\n', "agent = 'sim' must be a table"),
    ('[[run]]\ndir = "run"\n', "must be a table: write [run] on a line of its own"),
    ('[run]\ndir = "run"\ngate = { design = "fixed" }\n[gate]\nk = 3\n',
     "gate settings are given twice"),
])
def test_tables_that_are_not_tables_are_named(tmp_path, capsys, text, says):
    path = tmp_path / "c.toml"
    path.write_text(text)
    code, _, err = cli(capsys, "run", path)
    assert code == 2 and says in one_line_error(err) and not (tmp_path / "run").exists()


def test_gate_settings_inside_run_are_used_not_dropped(tmp_path):
    path = tiny_config(tmp_path / "c.toml", tmp_path / "run", gate='{ design = "fixed" }')
    assert config.load(path).config.gate.design == "fixed"


@pytest.mark.parametrize("table, says", [
    ('[gate]\nz_crit = -1.0\n', "gate.z_crit = -1.0: Input should be greater than 0"),
    ('[gate]\nk = "three"\n', "gate.k = 'three'"),
    ('[gate]\nk = 2.5\n', "gate.k = 2.5"),
    ('[gate]\nk = 3\nk_max = 2\n', "k_max (2) must be >= k (3)"),
    ('[gate]\ndesign = "bayesian"\n', "gate.design = 'bayesian'"),
])
def test_bad_gate_values_are_refused(tmp_path, capsys, table, says):
    path = tiny_config(tmp_path / "c.toml", tmp_path / "run", gate=None)
    path.write_text(path.read_text() + table)
    code, _, err = cli(capsys, "run", path)
    assert code == 2 and says in one_line_error(err) and not (tmp_path / "run").exists()


def test_a_string_k_is_coerced_only_when_it_is_a_whole_number(tmp_path):
    path = tiny_config(tmp_path / "c.toml", tmp_path / "run", gate=None)
    path.write_text(path.read_text() + '[gate]\nk = "4"\n')
    assert config.load(path).config.gate.k == 4


@pytest.mark.parametrize("dir_value, says", [("5", "dir = 5"), ('""', "dir = ''")])
def test_a_bad_dir_is_named(tmp_path, capsys, dir_value, says):
    path = tiny_config(tmp_path / "c.toml", tmp_path / "run", dir=dir_value)
    code, _, err = cli(capsys, "run", path)
    assert code == 2 and says in one_line_error(err)


def test_run_given_a_folder_says_to_resume(tmp_path, capsys):
    code, _, err = cli(capsys, "run", tmp_path)
    assert code == 2 and "gsme resume DIR" in one_line_error(err)


@pytest.mark.parametrize("argv, says", [
    (["--rounds", "-1"], "rounds = -1"),
    (["--children", "-2"], "children_per_round = -2"),
])
def test_demo_arguments_are_checked(tmp_path, capsys, argv, says):
    code, _, err = cli(capsys, "demo", "--preset", "tiny", "--out", tmp_path / "d", *argv)
    assert code == 2 and says in one_line_error(err) and not (tmp_path / "d").exists()


@pytest.mark.parametrize("spec, says", [
    ({"kind": "sim", "preset": "tiny", "suite_seed": "x"}, "[agent] suite_seed = 'x'"),
    ({"kind": "sim", "preset": "tiny", "colour": "red"}, "[agent] colour = 'red'"),
    ({"kind": "sim", "preset": "nope"}, "preset must be one of"),
    ({"kind": "robot"}, "must be one of ['sim', 'command', 'anthropic']"),
])
def test_plugin_specs_are_checked_against_the_constructor(spec, says):
    with pytest.raises(config.ConfigError) as err:
        plugins.build_agent(spec)
    assert says in str(err.value)


def test_exit_codes_can_be_set_from_toml(tmp_path):
    (tmp_path / "tasks.csv").write_text("task_id,split\nt1,train\nt2,test\n")
    path = tiny_config(tmp_path / "c.toml", tmp_path / "run")
    text = path.read_text().split("[agent]")[0]
    text += ('[agent]\nkind = "command"\ntasks = "tasks.csv"\ncommand = "true {out}"\n'
             '[agent.exit_codes]\n"3" = "infra"\n"4" = "failure"\n[evolver]\nkind = "rule"\n')
    path.write_text(text)
    spec = config.load(path)
    agent = plugins.build_agent(spec.agent)
    assert agent.exit_codes[3] == "infra" and agent.exit_codes[4] == "failure"
    assert agent.exit_codes[0] == "result"  # defaults kept


def test_a_run_directory_name_too_long_for_the_file_system_is_one_line(tmp_path, capsys):
    path = tiny_config(tmp_path / "c.toml", "x" * 300)
    code, _, err = cli(capsys, "run", path)
    assert code == 2 and "File name too long" in one_line_error(err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.toml"]
