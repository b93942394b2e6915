"""gsme beside other tools: optimisers' claims re-tested and their choices gated, runs
exported to trackers.

* :mod:`gsme.integrations.gepa` — re-test what a GEPA run chose on a sealed split at K
  repeats, and re-gate the proposals GEPA accepted on 3-example minibatches;
* :mod:`gsme.integrations.gepa_gate` — gsme's gate inside GEPA: an acceptance criterion
  that credits a proposal only when the paired gate says so, an adapter adding repeats
  and infrastructure re-runs, and a callback writing the decisions;
* :mod:`gsme.integrations.gepa_demo` — an offline GEPA world (a simulated task model with
  known true pass probabilities and a scripted reflection model) for tests and notebooks;
* :mod:`gsme.integrations.mlflow` — a run exported to MLflow: a parent run per gsme run,
  a nested run per candidate with its patch.

They need the optional extras ``pip install "gsme[gepa]"`` (GEPA, and DSPy for
``dspy.GEPA``) and ``"gsme[mlflow]"``; gsme itself imports none of them.
"""

__all__: list[str] = []
