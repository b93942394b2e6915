"""A credential anywhere in a config or spec is refused, named by where it is, never echoed."""

import pytest
from faultkit import cli, one_line_error, tiny_config

from gsme import sim
from gsme.credentials import refuse_credentials
from gsme.run import Run
from gsme.settings import ConfigError

KEY = "sk-ant-api03-" + "A1b2C3d4" * 6


@pytest.mark.parametrize("agent, where", [
    ((f'[agent]\nkind = "command"\ntasks = "t.csv"\ncommand = "run {{out}}"\n'
      f'[agent.env]\nANTHROPIC_API_KEY = "{KEY}"\n'), "env.ANTHROPIC_API_KEY"),
    (f'[agent]\nkind = "command"\ntasks = "t.csv"\ncommand = "run --key {KEY} {{out}}"\n',
     "command holds a key-shaped string"),
    (f'[agent]\nkind = "sim"\npreset = "tiny"\n[agent.extra]\nnotes = ["x", "{KEY}"]\n',
     "extra.notes[1] holds a key-shaped string"),
])
def test_nested_credentials_are_refused_without_the_value(tmp_path, capsys, agent, where):
    path = tiny_config(tmp_path / "c.toml", tmp_path / "run")
    path.write_text(path.read_text().split("[agent]")[0] + agent + '[evolver]\nkind = "rule"\n')
    code, out, err = cli(capsys, "run", path)
    line = one_line_error(err)
    assert code == 2 and where in line and "environment" in line
    assert KEY not in out + err and not (tmp_path / "run").exists()


@pytest.mark.parametrize("value, refused", [
    ({"api_key": "x"}, True), ({"nested": {"client_secret": "x"}}, True),
    ({"password": "hunter2"}, True), ({"access_token": "t"}, True),
    ({"tokens": 5, "max_tokens": 100, "digest_tokens": 9}, False),
    ({"pass_env": ["ANTHROPIC_API_KEY"]}, False), ({"api_key": ""}, False),
    ({"cmd": "ghp_" + "x" * 36}, True), ({"aws": "AKIA" + "A" * 16}, True),
    ({"pem": "-----BEGIN RSA PRIVATE KEY-----\nabc"}, True), ({"note": "sk-ant"}, False),
])
def test_credential_names_and_shapes(value, refused):
    if refused:
        with pytest.raises(ConfigError, match="credentials never go"):
            refuse_credentials(value, "[agent]")
    else:
        refuse_credentials(value, "[agent]")


def test_a_run_built_in_python_refuses_credentials_in_its_specs(tmp_path):
    with pytest.raises(ConfigError, match=r"\[evolver\] api_key"):
        Run.create(tmp_path / "r", agent=sim.preset("tiny"),
                   evolver_spec={"kind": "claude", "api_key": KEY})
    assert not (tmp_path / "r").exists()
