"""Tables of results, beside the published ones they should reproduce."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as sps

from gsme import policy, stats
from gsme._renamed import renamed_keywords
from gsme.resources import PAPER_TABLE
from gsme.schema import BASELINE, SEALED_ROUND
from gsme.settings import GateConfig

__all__ = ["SHIP_RULE", "SHIP_RULES", "cost_table", "number", "paper_table", "recommendation",
           "run_ship_line", "run_table", "ship_line"]


@renamed_keywords(config="gate")
def paper_table(*, gate: GateConfig | None = None) -> pd.DataFrame:
    """The seed paper's results table with retention and p recomputed by gsme beside it.

    The published columns come from ``data/paper_table.csv`` as printed (deltas rounded
    to 0.1 pp, z to 0.01, retention to whole percent; the paper computed retention from
    unrounded deltas, so the recomputed value may differ by that rounding).

    Parameters
    ----------
    gate : GateConfig, optional
        Its ``z_crit`` decides ``credited``; default :class:`~gsme.settings.GateConfig`.

    Returns
    -------
    DataFrame
        ``benchmark, train_delta_pp, sealed_delta_pp, z, retention_pct, preliminary``
        (published) and ``retention_pct_gsme`` (:func:`gsme.stats.retention` of the
        published deltas), ``retention_tolerance_pp`` (the largest gap between the two
        that the printed rounding explains: each delta off by up to 0.05 pp, propagated
        to first order, plus 0.5 for the whole-percent retention), ``p_value_gsme``
        (two-sided p of the published z, as papers print it), ``p_one_sided_gsme`` (the p
        of a gain, 1 − Φ(z): the one the credit rule compares with its level) and
        ``credited`` (z ≥ ``gate.z_crit``, i.e. ``p_one_sided_gsme`` ≤ α).

    Examples
    --------
    >>> table = paper_table()
    >>> gdpval = table.loc[table["benchmark"] == "GDPval", ["p_value_gsme", "p_one_sided_gsme"]]
    >>> gdpval.round(4).to_dict("records")
    [{'p_value_gsme': 0.0332, 'p_one_sided_gsme': 0.0166}]
    """
    table = pd.read_csv(PAPER_TABLE, dtype={"benchmark": object})
    table["preliminary"] = table["preliminary"].astype(bool)
    table["retention_pct_gsme"] = stats.retention(
        table["train_delta_pp"].to_numpy(), table["sealed_delta_pp"].to_numpy()
    )
    table["retention_tolerance_pp"] = _rounding_tolerance(table)
    table["p_value_gsme"] = stats.p_value(table["z"].to_numpy())
    table["p_one_sided_gsme"] = stats.p_value(table["z"].to_numpy(), alternative="greater")
    table["credited"] = table["z"].to_numpy() >= (gate or GateConfig()).z_crit
    return table


def _rounding_tolerance(table: pd.DataFrame) -> np.ndarray:
    train = table["train_delta_pp"].to_numpy(np.float64)
    sealed = table["sealed_delta_pp"].to_numpy(np.float64)
    ratio = 100.0 * np.abs(sealed / train)
    return ratio * (0.05 / np.abs(sealed) + 0.05 / np.abs(train)) + 0.5


def run_table(run) -> pd.DataFrame:
    """The paper's row for one sealed run: train and sealed Δ, z, p, retention, pass@k.

    Train statistics compare the selected harness with the baseline on the train split,
    sealed ones on the test split scored once by :func:`gsme.measure.finalize`: the
    one-look paired test (:func:`gsme.stats.paired_test`) with the run's own gate settings,
    over the first ``k`` repeats of every task (:func:`gsme.stats.first_repeats`, ``k`` the
    gate's). Rates, Δ and pass@k read those same repeats, so the adaptive design's extra
    repeats on mixed tasks do not bias them; a rate is each harness's over its own tasks
    (:func:`gsme.stats.candidate_rates`, the rate every surface shows), Δ the paired
    difference over the tasks both have; the test split is scored at ``k`` repeats
    anyway. Where trials carry graded scores, rates and Δ are of scores and pass@k counts
    ``passed`` (the agent's threshold decides it). p-values are one-sided, the p of a gain, as the gate's rule reads them (it
    credits when one is at most α = 2.5%). For a simulated agent the true effects from its
    ground truth stand beside the measured ones (``true_train_delta_pp``,
    ``true_sealed_delta_pp``); for other agents they are NaN.

    Returns
    -------
    DataFrame
        One row: ``agent, simulated, isolation`` (how a command agent's trials ran:
        ``sandbox`` or ``none``, :mod:`gsme.sandbox`; None for other agents), ``policy,
        design, selected, n_train, n_test, rate_train_base, rate_train_selected,
        train_delta_pp, train_z, train_p_one_sided,
        rate_sealed_base, rate_sealed_selected, sealed_delta_pp, sealed_z,
        sealed_p_one_sided, sealed_decision`` (the sealed test's decision at one-sided α),
        ``sealed_ci_low_pp, sealed_ci_high_pp`` (the sealed Δ's two-sided interval at the
        level of the decision: Δ ± q·se, q the critical value of the gate's reference, so
        the low end is above 0 exactly when the t or normal reference credits; a decision
        by the exact sign-flip p, with few changed tasks, can differ at the edge),
        ``retention_pct, pass_at_<k>_train_base, pass_at_<k>_train_selected,
        pass_at_<k>_test_base, pass_at_<k>_test_selected`` (``<k>`` the gate's ``k``),
        ``trials_spent, trials_borrowed, candidates, credited, kept``,
        ``significance_tests`` (comparisons that reached the significance gate),
        ``false_credits_if_null`` (tests × the one-sided level α: the credits expected
        if every tested child were truly null, before any outcome is seen; over repeated
        runs it bounds the expected number of false credits, but it is not a bound on
        ``false_credits_estimate``, which is conditional on what this run measured),
        ``false_credits_estimate`` and ``false_keeps_estimate`` (the expected number of
        credited, and of kept, children whose true effect is ≤ 0: the sum of their posterior
        probabilities of no gain under the proposal mix learned from the run's comparisons
        and those it learned from, :func:`gsme.policy.expected_effects`; an estimate that
        is as good as the learned mix), ``true_train_delta_pp, true_sealed_delta_pp``.

    Raises
    ------
    RuntimeError
        When the run is not sealed yet (call ``measure.finalize(run)`` first).

    See Also
    --------
    cost_table : What the same run spent, round by round.
    paper_table : The paper's published rows.

    Examples
    --------
    >>> from gsme import experiments
    >>> run = experiments.simulated_run("tiny", rounds=1, progress=False)  # SIMULATED
    >>> row = run_table(run)
    >>> row.loc[0, ["policy", "selected", "n_train", "n_test", "sealed_decision"]].to_dict()
    {'policy': 'learned', 'selected': 'c0001', 'n_train': 16, 'n_test': 8, 'sealed_decision': 'inconclusive'}
    >>> row[["train_delta_pp", "sealed_delta_pp", "true_train_delta_pp"]].round(1)
       train_delta_pp  sealed_delta_pp  true_train_delta_pp
    0             4.2             16.7                  9.3
    >>> run.close()
    """
    sealed = run.sealed_result
    if sealed is None:
        raise RuntimeError("the run is not sealed: call measure.finalize(run) before run_table(run)")
    chosen = str(sealed.loc[sealed["role"] == "selected", "candidate"].iloc[0])
    gate = run.config.gate
    trials = run.trials()
    counted = stats.first_repeats(trials[trials["candidate"].isin([BASELINE, chosen])],
                                  k=gate.k)
    isolation = (run.agent_spec or {}).get("isolation", getattr(run.agent, "isolation", None))
    row = {"agent": run.agent.name, "simulated": bool(run.agent.simulated),
           "isolation": isolation, "policy": run.config.policy, "design": gate.design,
           "selected": chosen,
           "n_train": len(run.tasks("train")), "n_test": len(run.tasks("test"))}
    for split, name in (("train", "train"), ("test", "sealed")):
        test = _versus_baseline(counted, chosen, split, gate)
        rates = stats.candidate_rates(counted, k=gate.k, split=split).set_index("candidate")
        row[f"rate_{name}_base"] = float(rates["rate"].get(BASELINE, np.nan))
        row[f"rate_{name}_selected"] = float(rates["rate"].get(chosen, np.nan))
        row[f"{name}_delta_pp"] = test["delta_pp"]
        row[f"{name}_z"] = test["z"]
        row[f"{name}_p_one_sided"] = test["p_one_sided"]
        if name == "sealed":
            row["sealed_decision"] = test["decision"]
            half = _critical(gate, test) * test["se_pp"]
            row["sealed_ci_low_pp"] = test["delta_pp"] - half
            row["sealed_ci_high_pp"] = test["delta_pp"] + half
    row["retention_pct"] = stats.retention(row["train_delta_pp"], row["sealed_delta_pp"])
    passes = counted.drop(columns="score", errors="ignore")  # graded: pass@k of 'passed'
    at_k = stats.pass_at_k(passes, k=gate.k).set_index(["candidate", "split"])["pass_at_k"]
    for split in ("train", "test"):
        row[f"pass_at_{gate.k}_{split}_base"] = at_k.get((BASELINE, split), np.nan)
        row[f"pass_at_{gate.k}_{split}_selected"] = at_k.get((chosen, split), np.nan)
    decisions = run.decisions()
    tested = int(decisions["decision"].isin(["credit", "cull", "inconclusive"]).sum())
    row["trials_spent"] = run.trials_spent()
    row["trials_borrowed"] = int(trials["borrowed_from"].notna().sum())
    row["candidates"] = len(run.candidates()) - 1
    row["credited"] = int((decisions["decision"] == "credit").sum())
    row["kept"] = int(decisions["kept"].sum())
    row["significance_tests"] = tested
    row["false_credits_if_null"] = tested * gate.alpha
    no_gain = 1.0 - policy.expected_effects(decisions, past=run.comparisons(before_round=1),
                                            keep=run.config.keep)["p_positive"]
    row["false_credits_estimate"] = float(no_gain[decisions["decision"] == "credit"].sum())
    row["false_keeps_estimate"] = float(no_gain[decisions["kept"].astype(bool)].sum())
    row.update(_true_effects(run, chosen))
    return pd.DataFrame([row])


def _versus_baseline(trials: pd.DataFrame, chosen: str, split: str, gate) -> pd.Series:
    """The paired test of ``chosen`` against the baseline; a null row when it is the baseline."""
    if chosen != BASELINE:
        return stats.paired_test(trials, parent=BASELINE, child=chosen, split=split,
                                 gate=gate).iloc[0]
    rate = float(stats.candidate_rates(trials, k=gate.k, split=split)["rate"].iloc[0])
    return pd.Series({"rate_parent": rate, "rate_child": rate, "delta_pp": 0.0, "se_pp": 0.0,
                      "z": 0.0, "p_one_sided": 1.0, "n_tasks": 0, "decision": "inconclusive"})


def _critical(gate, test: pd.Series) -> float:
    """The critical value the gate's reference compares the sealed z with (one-sided α)."""
    if gate.reference == "t" and test["n_tasks"] > 1:
        return float(sps.t.isf(gate.alpha, test["n_tasks"] - 1))
    return float(gate.z_crit)


def _true_effects(run, chosen: str) -> dict:
    if not hasattr(run.agent, "true_effect"):
        return {"true_train_delta_pp": np.nan, "true_sealed_delta_pp": np.nan}
    child, base = run.harness(chosen), run.harness(BASELINE)
    return {"true_train_delta_pp": run.agent.true_effect(child, base, "train"),
            "true_sealed_delta_pp": run.agent.true_effect(child, base, "test")}


def number(value, *, p: bool = False, signed: bool = False) -> str:
    """A value as every surface prints it (command line, page, explorer, MLflow texts).

    Three significant digits (whole numbers from 100), no ``-0``, a p below 0.001 as
    ``< 0.001`` (else three decimals), a missing value (None, NaN, NA) as ``n/a``; with
    ``signed``, a ``+`` before a positive number.

    Examples
    --------
    >>> number(0.0007035, p=True), number(0.0, p=True), number(0.29, p=True)
    ('< 0.001', '< 0.001', '0.290')
    >>> number(float("nan")), number(None), number(15.62, signed=True), number(-0.0)
    ('n/a', 'n/a', '+15.6', '0')
    """
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return "n/a"
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, np.bool_, int, np.integer)) and not signed:
        return str(value.item() if hasattr(value, "item") else value)
    value = float(value)
    value = 0.0 if abs(value) < 1e-9 else value  # a tie computed as a sum of thirds
    if p:
        return "< 0.001" if value < 0.001 else f"{value:.3f}"
    text = f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"
    text = "0" if text in ("-0", "-0.0", "-0.00") else text
    return "+" + text if signed and value > 0 and text != "0" else text


def _sealed_credit(table: pd.DataFrame) -> np.ndarray:
    return (table["sealed_decision"] == "credit").to_numpy()


#: Ship rules: which sealed outcomes ship the selected harness (each a function of a frame
#: with ``sealed_decision, sealed_delta_pp, sealed_p_one_sided``, one bool per row); when a
#: rule does not ship it, the baseline (or the last harness a sealed test credited) stays.
SHIP_RULES = {
    "always": lambda table: np.ones(len(table), dtype=bool),
    "sealed_credit": _sealed_credit,
    "sealed_positive": lambda table: (table["sealed_delta_pp"].round(9) > 0).to_numpy(),
    "sealed_p20": lambda table: (table["sealed_p_one_sided"] <= 0.20).to_numpy(),
}
#: The rule :func:`recommendation` applies (chosen from ``benchmarks/evidence.py``'s table).
SHIP_RULE = "sealed_credit"


def recommendation(table: pd.DataFrame, *, fallback: str = BASELINE,
                   rule: str = SHIP_RULE) -> pd.DataFrame:
    """What to ship after a sealed run: the selected harness when the sealed test credits
    it, else ``fallback`` (the baseline, or the last harness a sealed test credited).

    A pure function of the run's table (:func:`run_table`); :func:`ship_line` words it.
    Only this decision is called **shipped**.

    Parameters
    ----------
    table : DataFrame
        :func:`run_table`'s row (``selected, n_test, sealed_decision, sealed_delta_pp,
        sealed_ci_low_pp, sealed_ci_high_pp, sealed_p_one_sided``).
    fallback : str
        The harness that stays when the selected one is not shipped.
    rule : str
        A key of :data:`SHIP_RULES` (default :data:`SHIP_RULE`).

    Returns
    -------
    DataFrame
        One row: ``shipped`` (the harness to deploy), ``ships`` (True when it is the
        selected harness and not the fallback), ``rule, selected, n_test, sealed_decision,
        sealed_delta_pp`` (selected vs baseline, first ``k`` repeats of the sealed tasks),
        ``sealed_ci_low_pp, sealed_ci_high_pp, sealed_p_one_sided`` and ``reason`` (why,
        in words).

    Raises
    ------
    ValueError
        ``rule`` is not a ship rule.

    Examples
    --------
    >>> row = pd.DataFrame([{"selected": "c0016", "n_test": 44, "sealed_decision": "inconclusive",
    ...                      "sealed_delta_pp": 1.2, "sealed_ci_low_pp": -3.0,
    ...                      "sealed_ci_high_pp": 5.4, "sealed_p_one_sided": 0.29}])
    >>> recommendation(row).loc[0, "shipped"]
    'baseline'
    >>> recommendation(row, rule="sealed_positive").loc[0, "shipped"]
    'c0016'
    """
    if rule not in SHIP_RULES:
        raise ValueError(f"rule must be one of {list(SHIP_RULES)}, got {rule!r}")
    row = table.iloc[0]
    chosen = str(row["selected"])
    ships = chosen != BASELINE and bool(SHIP_RULES[rule](table.iloc[:1])[0])
    out = {"shipped": chosen if ships else fallback, "ships": ships, "rule": rule,
           "selected": chosen, **{c: row[c] for c in _SHIP_COLUMNS}}
    out["reason"] = _ship_reason(out)
    return pd.DataFrame([out])


_SHIP_COLUMNS = ("n_test", "sealed_decision", "sealed_delta_pp", "sealed_ci_low_pp",
                 "sealed_ci_high_pp", "sealed_p_one_sided")
_SEALED_WORDS = {"credit": "the sealed test credits {c}",
                 "cull": "the sealed test finds {c} worse than the baseline",
                 "inconclusive": "the sealed test does not credit {c} (its gain is not shown)"}


def _ship_reason(rec: dict) -> str:
    if rec["selected"] == BASELINE:
        return "the run kept no child that beat the baseline on train: nothing to test"
    verdict = _SEALED_WORDS.get(rec["sealed_decision"], "the sealed test: {c} "
                                + str(rec["sealed_decision"])).format(c=rec["selected"])
    rule = "" if rec["rule"] == SHIP_RULE else f" (ship rule {rec['rule']})"
    return (f"{verdict}{rule}; sealed Δ {number(rec['sealed_delta_pp'], signed=True)} pp vs "
            f"baseline [{number(rec['sealed_ci_low_pp'], signed=True)}, "
            f"{number(rec['sealed_ci_high_pp'], signed=True)}] on {rec['n_test']} sealed "
            f"tasks, one-sided p {_p_words(rec['sealed_p_one_sided'])}")


def _p_words(p) -> str:
    text = number(p, p=True)
    return text if text.startswith("<") else f"= {text}"


@renamed_keywords(rec="recommendation")
def ship_line(recommendation: pd.DataFrame | None) -> str:
    """The one line every surface prints for a :func:`recommendation` (None: not sealed).

    Examples
    --------
    >>> row = pd.DataFrame([{"selected": "c0016", "n_test": 44, "sealed_decision": "credit",
    ...                      "sealed_delta_pp": 15.9, "sealed_ci_low_pp": 8.1,
    ...                      "sealed_ci_high_pp": 23.7, "sealed_p_one_sided": 0.0007}])
    >>> ship_line(recommendation(row))
    'ship c0016: the sealed test credits c0016; sealed Δ +15.9 pp vs baseline [+8.1, +23.7] on 44 sealed tasks, one-sided p < 0.001'
    >>> ship_line(None)
    'ship: not decided, the run is not sealed (gsme resume DIR seals it)'
    """
    if recommendation is None:
        return "ship: not decided, the run is not sealed (gsme resume DIR seals it)"
    row = recommendation.iloc[0]
    action = f"ship {row['shipped']}" if row["ships"] else f"keep {row['shipped']}"
    if not row["ships"] and row["shipped"] == BASELINE:
        action = "keep the baseline"
    return f"{action}: {row['reason']}"


def run_ship_line(run) -> str:
    """:func:`ship_line` of a run: its recommendation once sealed, else "not decided".

    Examples
    --------
    >>> from gsme import experiments
    >>> run = experiments.simulated_run("tiny", rounds=1, progress=False)  # SIMULATED
    >>> run_ship_line(run).startswith("keep the baseline: the sealed test does not credit c0001")
    True
    >>> run.close()
    """
    if run.sealed_result is None:
        return ship_line(None)
    return ship_line(recommendation(run_table(run)))


_CALL_COUNTS = ["input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
                "output_tokens", "cost_usd"]


def cost_table(run) -> pd.DataFrame:
    """What a run spent, round by round: evolver calls and the trials actually run.

    Rounds are those of the ledger: 0 is the cold start (the baseline on the train split),
    1, 2, ... the evolution rounds, :data:`~gsme.schema.SEALED_ROUND` (-1) the sealed test
    scored by :func:`gsme.measure.finalize`; evolver calls recorded outside a round have round NA.
    Borrowed trials cost nothing and are not counted. A cost the ledger does not know
    (NaN: a model without a price, an agent that reports none) makes its sums NaN, never
    a silent 0.

    Returns
    -------
    DataFrame
        One row per round that spent anything, in the order 0, 1, 2, ..., -1, NA:
        ``round`` (Int64), ``evolver_calls``, ``evolver_input_tokens`` (uncached input,
        cache writes and cache reads), ``evolver_output_tokens``, ``evolver_usd``,
        ``trials`` (run, not borrowed), ``trial_tokens``, ``trial_usd`` and
        ``total_usd``.

    Examples
    --------
    >>> from gsme import experiments
    >>> run = experiments.simulated_run("tiny", rounds=1, progress=False)  # SIMULATED
    >>> cost_table(run)[["round", "evolver_calls", "trials"]]  # round -1: the sealed test
       round  evolver_calls  trials
    0      0              0      49
    1      1              0     317
    2     -1              0      50
    >>> run.close()
    """
    calls = run.calls().reindex(columns=["round", *_CALL_COUNTS])
    counts = calls[_CALL_COUNTS].astype(np.float64)
    trials = run.trials()
    trials = trials[trials["borrowed_from"].isna()]
    rows = pd.concat([
        pd.DataFrame({"round": calls["round"], "evolver_calls": 1,
                      "evolver_input_tokens": counts[_CALL_COUNTS[:3]].sum(axis=1, skipna=False),
                      "evolver_output_tokens": counts["output_tokens"],
                      "evolver_usd": counts["cost_usd"], "trials": 0, "trial_tokens": 0.0,
                      "trial_usd": 0.0}),
        pd.DataFrame({"round": trials["round"], "evolver_calls": 0, "evolver_input_tokens": 0.0,
                      "evolver_output_tokens": 0.0, "evolver_usd": 0.0, "trials": 1,
                      "trial_tokens": trials["tokens"], "trial_usd": trials["cost_usd"]}),
    ], ignore_index=True).astype({"round": "Int64", "evolver_calls": np.int64,
                                  "trials": np.int64})
    table = (rows.groupby("round", dropna=False)
             .agg(lambda column: column.sum(skipna=False)).reset_index())
    table["total_usd"] = table["evolver_usd"] + table["trial_usd"]
    return table.sort_values("round", key=_round_order, ignore_index=True)


def _round_order(rounds: pd.Series) -> pd.Series:
    """Sort keys putting rounds 0, 1, 2, ... first, then the sealed test, then NA."""
    keys = rounds.astype(np.float64)
    return keys.where(keys != SEALED_ROUND, keys.max() + 1)
