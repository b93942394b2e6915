"""One word per concept (issue 33): every keyword of gsme's public functions and every frame
column is made of words the glossary defines (``docs/glossary.rst``) or plain words listed
here with why they are allowed; no public function takes ``config=`` (a ``GateConfig`` is
``gate=``, a ``KeepConfig`` ``keep=``, a ``RunConfig`` ``run_config=``)."""

import importlib
import inspect
import pkgutil
import re
from fnmatch import fnmatch
from pathlib import Path

import pandas as pd
import pytest

import gsme
from gsme import gates, prior, schema, stats
from gsme.settings import GateConfig, KeepConfig

GLOSSARY = Path(__file__).resolve().parents[1] / "docs" / "glossary.rst"

#: Modules that only forward renamed names until 0.4.0 (their names are checked where they live).
FORWARDING = {"gsme.sequential"}

#: Plain words a keyword or column may use beside the glossary's, by why each is plain.
PLAIN = {
    "statistics: standard names in their textbook sense (alpha, df, se, sd, z, p, null)":
        ("alpha alternative boundary confidence crit delta df effect exact futility grid group "
         "k level mask mean n null p point power pred predicted rate reach reference sample sd "
         "se shape share sided signed simulations target threshold true u value weight x y z"),
    "units and counts (pp: percentage points; s: seconds; mtok: a million tokens)":
        ("calls chars cost counts cpu dollars frac fraction high hours last limit low max mb "
         "memory min minutes mtok number per pp s seconds size tally tok tokens top total usd"),
    "plotting: matplotlib's and seaborn's own argument names":
        "annot ax bar cmap dpi fmt highlight hue markers palette title width",
    "the lever names (a harness folder each, docs/glossary.rst: lever)":
        "config prompt",
    "software: files, processes, schemas, and the tools gsme reads (Inspect, GEPA, Dask)":
        ("adapter add address answer api args argv batch benchmark books branch builtins cache "
         "capture chunk client code coined column command commit components content create "
         "data dataset default definition diff digest dir entry err error eval event "
         "executables exit experiment expr facts feedback files flags flush folder format "
         "frame ge gold grade harbor health hidden hints home id import index input isin "
         "isolation item iterations jobs key kind label le lock log make members message name "
         "named network nullable obj opts order output params parts path patience payload "
         "pickle pool prefilter prefix problems processes progress read readable record ref "
         "reflective refresh replace replaced repo response result retries reward rng root row "
         "sandbox schema scorer secrets set sink skill snapshots solver source spec state "
         "statement status step table tag temperature text thinking timeout timestamp tool trace "
         "tracking trainset transport tree trigger trust turn undone unique update uploads uri "
         "val valset view whole workdir workers workspace writable write"),
    "plain English in its everyday sense":
        ("accept acted activated added admitted after allow allowed ambiguous base before "
         "below best by categories change changed check classes concurrency concurrent "
         "creation cumulative current decided described difficulty dropped either empty "
         "evidence examples expected explore factor fail failed fallback family fault "
         "finalize floor from frozen given hard honours identical improvement is known learn "
         "match new of ok old on one only onset out paper past previous rationale real reason "
         "reports runaway same seen start started stop stored susceptibility tested to valid "
         "variant want wanted what worth"),
}
#: Public functions still taking ``config=``, by why (each a pattern of qualified names).
STILL_CONFIG = {
    "gsme.config.RunSpec": "a run's settings are its config, as run.config",
    "gsme.evolvers.*Template": "the files a patch writes into the config lever",
}

#: Plurals not made by adding -s or -es.
PLURALS = {"children": "child", "diagnoses": "diagnosis"}


def glossary_words(text: str) -> set[str]:
    """The words of the glossary's terms (``activation``, ``keep rule`` → keep, rule)."""
    body = text.split(".. glossary::", 1)[1]
    terms = re.findall(r"^   (\S[^\n]*)$", body, flags=re.MULTILINE)
    return {w for term in terms if not term.startswith(":")
            for w in re.findall(r"[a-z]+", term.lower())}


def known_words() -> set[str]:
    return glossary_words(GLOSSARY.read_text()) | {
        w for words in PLAIN.values() for w in words.split()}


def unknown(names: dict[str, str], known: set[str]) -> dict[str, list[str]]:
    """Words of identifiers ``names`` (name → where it is used) that ``known`` lacks, each
    with where it is used; a plural (``trials``, ``patches``, ``policies``) counts as its
    singular."""
    out: dict[str, list[str]] = {}
    for name, where in names.items():
        for word in filter(None, name.lower().split("_")):
            forms = {word, word.removesuffix("s"), word.removesuffix("es"),
                     PLURALS.get(word), word.removesuffix("ies") + "y"}
            if not forms & known:
                out.setdefault(word, []).append(where)
    return out


def public_functions():
    """(qualified name, function) of every public function, class and method gsme exports."""
    for info in pkgutil.walk_packages(gsme.__path__, "gsme."):
        if info.name in FORWARDING or any(p.startswith("_") for p in info.name.split(".")[1:]):
            continue
        module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            where = f"{info.name}.{name}"
            if inspect.isfunction(obj):
                yield where, obj
            elif inspect.isclass(obj) and obj.__module__.startswith("gsme"):
                yield where, obj
                for attr, member in vars(obj).items():
                    member = getattr(member, "__func__", member)
                    if not attr.startswith("_") and inspect.isfunction(member):
                        yield f"{where}.{attr}", member


def keywords(function) -> dict[str, str]:
    """Each parameter a caller may name → ``function(parameter)``."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: f"{function.__qualname__}({p.name})" for p in parameters
            if p.name not in ("self", "cls") and p.kind not in (p.VAR_POSITIONAL,
                                                               p.VAR_KEYWORD)}


def all_keywords() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for where, function in public_functions():
        for name in keywords(function):
            out.setdefault(name, []).append(f"{where}({name})")
    return out


def test_glossary_words_are_its_terms():
    text = ".. glossary::\n   :sorted:\n\n   keep rule\n      Which children.\n\n   where × why\n"
    assert glossary_words(text) == {"keep", "rule", "where", "why"}
    assert {"parent", "child", "credited", "kept", "sealed"} <= known_words()


def test_the_checker_finds_a_new_word():
    def toy(trials, *, gate=None, n_tasks=3, fudge_factor=0.5):
        """A public function with one keyword the glossary does not know."""
    found = unknown(keywords(toy), known_words())
    assert list(found) == ["fudge"] and found["fudge"] == [
        f"{toy.__qualname__}(fudge_factor)"]
    assert unknown({"trials": "x", "patches": "y", "run_config": "z"}, known_words()) == {}


def test_every_public_keyword_is_a_known_word():
    found = unknown({name: ", ".join(where[:3]) for name, where in all_keywords().items()},
                    known_words())
    assert not found, ("keywords outside docs/glossary.rst and PLAIN (define the word in the "
                       f"glossary, name it by a known word, or add it to PLAIN with why): {found}")


def test_every_frame_column_is_a_known_word():
    columns = {c.name: f"{name} frame" for name, frame in schema.FRAMES.items()
               for c in (*frame.columns, *frame.optional)}
    assert not unknown(columns, known_words())


def test_no_public_function_takes_config():
    taking = sorted(where for where, function in public_functions()
                    if "config" in keywords(function))
    unexplained = [w for w in taking if not any(fnmatch(w, p) for p in STILL_CONFIG)]
    assert not unexplained, ("a GateConfig is gate=, a KeepConfig keep=, a RunConfig "
                             f"run_config=: {unexplained}")


@pytest.mark.parametrize("where", sorted(
    where for where, function in public_functions() if hasattr(function, "renamed_keywords")))
def test_renamed_keywords_are_out_of_the_signature(where):
    function = dict(public_functions())[where]
    names = keywords(function)
    assert set(function.renamed_keywords.values()) <= set(names)
    assert not set(function.renamed_keywords) & set(names)


@pytest.fixture
def ab_trials():
    return pd.DataFrame({"candidate": ["p"] * 3 + ["c"] * 3, "task_id": ["t1", "t2", "t3"] * 2,
                         "split": "train", "repeat": 0, "passed": [0, 1, 0, 1, 1, 0]})


def test_the_old_keyword_still_works_for_one_release(ab_trials):
    gate = GateConfig(min_tasks=2)
    with pytest.warns(DeprecationWarning, match=r"paired_test\(config=\) is now paired_test\(gate=\)"):
        old = stats.paired_test(ab_trials, parent="p", child="c", config=gate)
    assert old.equals(stats.paired_test(ab_trials, parent="p", child="c", gate=gate))
    with pytest.warns(DeprecationWarning, match="grid"):
        assert (prior.grid(config=KeepConfig(grid_max_pp=4.0)) ==
                prior.grid(KeepConfig(grid_max_pp=4.0))).all()
    with pytest.raises(TypeError, match=r"takes gate= \(formerly config=\), not both"):
        gates.credit(ab_trials, None, gate=gate, config=gate)


def test_a_frame_with_the_old_child_column_still_works_for_one_release(ab_trials):
    gate = GateConfig(min_tasks=2, design="fixed")
    new = gates.significance_gate(ab_trials, pd.DataFrame({"child": ["c"], "parent": ["p"]}),
                                  gate=gate)
    with pytest.warns(DeprecationWarning, match="pairs column 'candidate' is now 'child'"):
        old = gates.significance_gate(
            ab_trials, pd.DataFrame({"candidate": ["c"], "parent": ["p"]}), gate=gate)
    assert old.equals(new) and new["child"].tolist() == ["c"]
    candidates = pd.DataFrame({
        "candidate": ["p", "c"], "parents": ["", "p"], "kind": ["baseline", "mutation"],
        "where": [None, "prompt"], "why": [None, "looping"], "patch_id": [None, "x"],
        "beacon": [None, "x"], "env_gate": None, "commit": None, "branch": None,
        "round": [0, 1], "rationale": None})
    decisions = gates.credit(ab_trials.assign(activated=True), candidates,
                             gate=gate.model_copy(update={"parent_trials": "stored"}))
    with pytest.warns(DeprecationWarning, match="decisions column 'candidate' is now 'child'"):
        assert schema.validate(decisions.rename(columns={"child": "candidate"}),
                               "decisions")["child"].tolist() == ["c"]


def test_a_run_records_decisions_with_the_old_child_column_for_one_release(tmp_path):
    from gsme import experiments

    with experiments.simulated_run("tiny", root=tmp_path, rounds=1, finalize=False) as run:
        decided = run.decisions()
        old = decided.drop(columns="round").rename(columns={"child": "candidate"})
        with pytest.warns(DeprecationWarning, match="decisions column 'candidate' is now"):
            run.record("decisions", old.assign(split="test"), round=9)
        again = run.decisions()
        assert again.loc[again["round"] == 9, "child"].tolist() == decided["child"].tolist()
        with pytest.raises(schema.FrameError, match=r"missing column\(s\) \['z'\]"):
            run.record("decisions", decided.drop(columns=["round", "z"]), round=9)
