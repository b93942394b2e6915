"""Numbers (issue 32): a NaN or infinite effect, size or target power is refused by ``power``
and ``compare`` (it was a power of 1.0); scores outside [0, 1] are refused where trials
enter (the schema), so nothing prints them as pp of a rate."""

import numpy as np
import pandas as pd
import pytest
from faultkit import cli, one_line_error

from gsme import compare, io, power, stats
from gsme.schema import FrameError

NAN, INF = float("nan"), float("inf")


def _trials(score=None):
    rng = np.random.default_rng(5)
    t = pd.DataFrame({"candidate": np.repeat(["base", "v2"], 60),
                      "task_id": np.tile(np.repeat([f"t{i}" for i in range(20)], 3), 2),
                      "split": "train", "repeat": np.tile([0, 1, 2], 40),
                      "passed": rng.random(120) < np.repeat([0.4, 0.7], 60)})
    return t if score is None else t.assign(score=score)


@pytest.mark.parametrize("call, says", [
    (lambda: power.power(n_tasks=50, effect_pp=NAN, repeat_sd_pp=70.7, k=3), "effect_pp"),
    (lambda: power.power(n_tasks=50, effect_pp=[5, INF], repeat_sd_pp=70.7, k=3), "effect_pp"),
    (lambda: power.power(n_tasks=NAN, effect_pp=5, repeat_sd_pp=70.7, k=3), "n_tasks"),
    (lambda: power.power_table(n_tasks=[50], effect_pp=[NAN], k=[3]), "effect_pp"),
    (lambda: compare.compare(_trials(), parent="base", child="v2", effect_pp=NAN), "effect_pp"),
    (lambda: compare.compare(_trials(), parent="base", child="v2", power=NAN), "power"),
])
def test_a_nan_or_infinite_number_is_refused_naming_it(call, says):
    with pytest.raises(ValueError, match=f"{says} must be a finite number"):
        call()


def test_a_finite_effect_still_has_its_power():
    assert power.power(n_tasks=100, effect_pp=10, repeat_sd_pp=70.7, k=3) == pytest.approx(
        0.679, abs=5e-4)


@pytest.mark.parametrize("score", [1.5, -0.25, 70.0])
def test_scores_outside_0_1_are_refused_at_every_entry(tmp_path, capsys, score):
    bad = _trials(score=np.where(np.arange(120) == 7, score, 0.5))
    for call in (lambda: compare.compare(bad, parent="base", child="v2"),
                 lambda: stats.paired_test(bad, parent="base", child="v2")):
        with pytest.raises(FrameError, match="column 'score'"):
            call()
    paths = [tmp_path / f"{name}.csv" for name in ("base", "v2")]
    for path, name in zip(paths, ("base", "v2")):
        bad[bad["candidate"] == name].to_csv(path, index=False)
    with pytest.raises(FrameError, match="column 'score'"):
        io.read_trials(paths[0])
    code, out, err = cli(capsys, "compare", *paths, "--format", "csv")
    assert code == 2 and "column 'score'" in one_line_error(err) and out == ""
