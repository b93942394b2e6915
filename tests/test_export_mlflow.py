"""gsme.integrations.mlflow and ``gsme export``: a run in a local MLflow store (a folder in
tmp_path; no server, no network)."""

import sys

import pandas as pd
import pytest

from gsme import explain, report
from gsme.cli import EXIT_USAGE, main
from gsme.experiments import simulated_run
from gsme.integrations.mlflow import MISSING, RUN_ID_TAG, ExportError, export
from gsme.run import Run

mlflow = pytest.importorskip("mlflow")


@pytest.fixture(scope="module")
def sealed(tmp_path_factory):
    run = simulated_run("tiny", rounds=1, root=tmp_path_factory.mktemp("runs"))
    run.close()
    return run.path


@pytest.fixture
def uri(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 asks for it
    return (tmp_path / "mlruns").as_uri()


def _exported(path, uri, **kwargs):
    with Run.open(path, read_only=True) as run:
        return export(run, uri, **kwargs)


def _runs(uri, experiment_id, **kwargs):
    """The experiment's MLflow runs, parent first, then by name."""
    found = mlflow.MlflowClient(uri).search_runs([experiment_id], **kwargs)
    return sorted(found, key=lambda r: ("mlflow.parentRunId" in r.data.tags,
                                        r.info.run_name))


def test_every_candidate_has_a_nested_run_holding_its_decision(sealed, uri):
    done = _exported(sealed, uri)
    parent, *nested = _runs(uri, done.experiment_id)
    assert parent.info.run_id == done.parent_run_id
    assert {r.data.tags["mlflow.parentRunId"] for r in nested} == {done.parent_run_id}
    with Run.open(sealed, read_only=True) as run:
        candidates, decisions = run.candidates(), run.decisions()
        rates = explain.train_rates(run).set_index("candidate")["rate"]
        reasons = explain.keep_reasons(run).set_index("child")["keep_reason"]
    assert [r.info.run_name for r in nested] == sorted(candidates["candidate"])
    decisions = decisions.set_index("child")
    numbers = decisions.select_dtypes(["number", "bool"]).columns
    for mlflow_run in nested:
        name = mlflow_run.info.run_name
        tags, metrics = mlflow_run.data.tags, mlflow_run.data.metrics
        assert tags["gsme.candidate"] == name
        row = candidates.set_index("candidate").loc[name]
        assert (tags.get("where"), tags.get("why")) == (row["where"], row["why"])
        assert metrics.pop("train_rate") == pytest.approx(rates[name], rel=1e-12)
        if name not in decisions.index:  # the baseline: nothing decided
            assert metrics == {} and "decision" not in tags and "keep_reason" not in tags
            continue
        decision = decisions.loc[name]
        expected = {c: float(decision[c]) for c in numbers if not pd.isna(decision[c])}
        assert metrics == pytest.approx(expected, rel=1e-12)
        assert tags["keep_reason"] == reasons[name]
        assert {"delta_pp", "z", "p_one_sided", "round", "kept"} <= set(metrics)
        assert (tags["decision"], tags["parent"]) == (decision["decision"], decision["parent"])


def test_the_parent_holds_the_config_and_the_run_table(sealed, uri):
    done = _exported(sealed, uri)
    parent = mlflow.MlflowClient(uri).get_run(done.parent_run_id).data
    with Run.open(sealed, read_only=True) as run:
        table = report.run_table(run).iloc[0]
        config, run_id, rounds = run.config, run.run_id, run.rounds_done()
        path = str(run.path.resolve())
    numbers = {k: float(v) for k, v in table.items()
               if not isinstance(v, str) and v is not None and not pd.isna(v)}
    assert parent.metrics == pytest.approx({**numbers, "rounds_done": rounds}, rel=1e-12)
    assert {"train_delta_pp", "sealed_delta_pp", "sealed_z", "sealed_p_one_sided",
            "retention_pct", "trials_spent"} <= set(parent.metrics)
    assert parent.params["policy"] == config.policy
    assert parent.params["gate.design"] == config.gate.design
    assert parent.params["gate.k"] == str(config.gate.k)
    assert parent.params["run_seed"] == str(config.run_seed)
    assert (parent.params["agent.kind"], parent.params["agent.preset"]) == ("sim", "tiny")
    assert parent.params["schedule.rounds"] == "1"
    assert parent.tags[RUN_ID_TAG] == run_id and parent.tags["gsme.dir"] == path
    assert (parent.tags["simulated"], parent.tags["sealed"]) == ("yes", "yes")
    assert parent.tags["selected"] == table["selected"]
    assert parent.tags["sealed_decision"] == table["sealed_decision"]
    with Run.open(sealed, read_only=True) as run:
        ship = report.run_ship_line(run)
        shipped = report.recommendation(report.run_table(run)).loc[0, "shipped"]
    assert parent.tags["gsme.ship"] == ship and parent.tags["mlflow.note.content"].endswith(ship)
    assert parent.tags["shipped"] == shipped


def test_artifacts_hold_each_patch(sealed, uri, tmp_path):
    done = _exported(sealed, uri)
    with Run.open(sealed, read_only=True) as run:
        details = explain.patch_details(run).set_index("candidate")
    client = mlflow.MlflowClient(uri)
    for row in done.runs.dropna().itertuples():
        folder = client.download_artifacts(row.mlflow_run_id, "patch",
                                           str(tmp_path / row.candidate))
        diff = (tmp_path / row.candidate / "patch" / "diff.patch").read_text()
        rationale = (tmp_path / row.candidate / "patch" / "rationale.md").read_text()
        assert folder.endswith("patch")
        assert diff == details.at[row.candidate, "diff"] and diff.startswith("diff --git")
        assert rationale == details.at[row.candidate, "rationale"]


def test_re_exporting_replaces_the_earlier_export(sealed, uri):
    first = _exported(sealed, uri)
    second = _exported(sealed, uri)
    assert second.experiment_id == first.experiment_id
    assert second.replaced == sorted(first.runs["mlflow_run_id"])
    active = _runs(uri, first.experiment_id)
    assert sorted(r.info.run_id for r in active) == sorted(second.runs["mlflow_run_id"])
    assert sum("mlflow.parentRunId" not in r.data.tags for r in active) == 1
    client = mlflow.MlflowClient(uri)
    assert {client.get_run(i).info.lifecycle_stage for i in first.runs["mlflow_run_id"]} == {
        "deleted"}
    other = _exported(sealed, uri, experiment="elsewhere")  # another experiment: its own
    assert other.experiment_id != first.experiment_id and other.replaced == []


def test_a_live_run_exports_without_a_run_table(tmp_path, uri):
    run = simulated_run("tiny", rounds=0, root=tmp_path, finalize=False)
    run.close()
    done = _exported(run.path, uri)
    parent = mlflow.MlflowClient(uri).get_run(done.parent_run_id).data
    assert parent.tags["sealed"] == "no" and set(parent.metrics) == {"rounds_done",
                                                                      "trials_spent"}
    assert done.runs["candidate"].dropna().tolist() == ["baseline"]


def test_the_agent_spec_exports_only_its_named_keys(sealed, uri, monkeypatch):
    spec = {"kind": "command", "model": "m", "env": {"API_TOKEN": "s3cret-value"},
            "command": "run --token s3cret-value"}
    monkeypatch.setattr(Run, "agent_spec", property(lambda self: spec))
    done = _exported(sealed, uri)
    data = mlflow.MlflowClient(uri).get_run(done.parent_run_id).data
    assert {k for k in data.params if k.startswith("agent.")} == {"agent.kind", "agent.model"}
    assert not any("s3cret" in str(v) for v in [*data.params.values(), *data.tags.values()])


def test_the_command_exports_and_says_where(sealed, uri, capsys):
    assert main(["export", str(sealed), "--mlflow", uri, "--experiment", "gsme-tests"]) == 0
    out = capsys.readouterr().out
    experiment = mlflow.MlflowClient(uri).get_experiment_by_name("gsme-tests")
    assert experiment.experiment_id in out and "4 candidate runs" in out
    assert main(["export", str(sealed), "--mlflow", uri, "--experiment", "gsme-tests"]) == 0
    assert "replaced 5 runs" in capsys.readouterr().out


def test_missing_mlflow_is_one_line_and_exit_2(sealed, uri, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "mlflow", None)  # `import mlflow` raises ImportError
    with Run.open(sealed, read_only=True) as run, pytest.raises(ImportError, match="gsme"):
        export(run, uri)
    assert main(["export", str(sealed), "--mlflow", uri]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err == f"gsme: error: {MISSING}\n" and 'pip install "gsme[mlflow]"' in err


def test_a_store_mlflow_refuses_is_one_line_and_exit_2(sealed, capsys):
    with Run.open(sealed, read_only=True) as run, pytest.raises(ExportError, match="nope://"):
        export(run, "nope://nowhere")
    assert main(["export", str(sealed), "--mlflow", "nope://nowhere"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("gsme: error: MLflow at nope://nowhere") and err.count("\n") == 1


def test_the_tracking_uri_defaults_to_mlflow_tracking_uri(sealed, uri, tmp_path, monkeypatch,
                                                          capsys):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    assert main(["export", str(sealed), "--mlflow"]) == 0
    out = capsys.readouterr().out
    experiment = mlflow.MlflowClient(uri).get_experiment_by_name("gsme")
    assert f"-> {uri} experiment {experiment.experiment_id}" in out
    done = _exported(sealed, None)
    assert done.tracking_uri == uri and len(done.replaced) == 5
    elsewhere = (tmp_path / "given").as_uri()  # a URI given wins over the variable
    assert main(["export", str(sealed), "--mlflow", elsewhere]) == 0
    assert mlflow.MlflowClient(elsewhere).get_experiment_by_name("gsme") is not None
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    assert main(["export", str(sealed), "--mlflow"]) == EXIT_USAGE
    assert capsys.readouterr().err == (
        "gsme: error: no MLflow tracking URI: give one or set MLFLOW_TRACKING_URI\n")


def test_a_database_store_without_sqlalchemy_names_the_package_to_install(
        sealed, tmp_path, monkeypatch, capsys):
    from mlflow.store.db.db_types import DATABASE_ENGINES
    from mlflow.tracking._tracking_service.utils import _tracking_store_registry

    for scheme in DATABASE_ENGINES:  # as mlflow-skinny without SQLAlchemy registers them
        monkeypatch.delitem(_tracking_store_registry._registry, scheme, raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["export", str(sealed), "--mlflow", "sqlite:///mlflow.db"]) == EXIT_USAGE
    assert capsys.readouterr().err == (
        "gsme: error: MLflow at sqlite:///mlflow.db: the installed MLflow cannot write a sqlite "
        "store: pip install mlflow (mlflow-skinny lacks SQLAlchemy)\n")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "postgresql+psycopg2://db/mlflow")
    assert main(["export", str(sealed), "--mlflow"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "a postgresql store: pip install mlflow" in err and err.count("\n") == 1


@pytest.mark.parametrize("full, install", [
    (True, "psycopg2"),  # the full package lacks only the database's driver
    (False, "mlflow (mlflow-skinny lacks SQLAlchemy)")])
def test_a_module_a_database_store_lacks_is_named(sealed, monkeypatch, capsys, full, install):
    from gsme.integrations import mlflow as exporter

    def missing(**_):
        raise ModuleNotFoundError("No module named 'psycopg2'", name="psycopg2")

    monkeypatch.setattr(mlflow, "MlflowClient", missing)
    monkeypatch.setattr(exporter, "_full_mlflow", lambda: full)
    assert main(["export", str(sealed), "--mlflow", "postgresql://db/mlflow"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err == ("gsme: error: MLflow at postgresql://db/mlflow: the installed MLflow cannot "
                   f"write a postgresql store: pip install {install}\n")


def test_export_shows_a_progress_bar_on_a_terminal_and_none_with_quiet(sealed, uri,
                                                                        monkeypatch, capsys):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(["export", str(sealed), "--mlflow", uri]) == 0
    shown = capsys.readouterr()
    assert "gsme export: writing 5 MLflow runs" in shown.err and "%|" in shown.err
    assert main(["export", str(sealed), "--mlflow", uri, "--quiet"]) == 0
    quiet = capsys.readouterr()
    assert quiet.err == "" and "replaced 5 runs" in quiet.out
