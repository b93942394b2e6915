import json

import pytest

from gsme.vocabulary import Label, Vocabulary

REQUIRED = ["thinking-runaway", "premature-finalization", "careless-submit", "tool-misuse",
            "format-error", "looping", "context-overflow"]


def test_default_holds_the_required_labels():
    vocab = Vocabulary.default()
    assert set(REQUIRED) <= set(vocab.labels)
    frame = vocab.to_frame()
    assert list(frame.columns) == ["label", "definition", "added_by"]
    assert frame["label"].tolist() == vocab.labels
    assert (frame["added_by"] == "gsme").all() and frame["definition"].str.len().min() > 10


@pytest.mark.parametrize(
    "raw, slug",
    [("Premature finalization", "premature-finalization"),
     ("  premature_finalization ", "premature-finalization"),
     ("PREMATURE--Finalization!", "premature-finalization"),
     ("tool misuse (API)", "tool-misuse-api"), ("x2", "x2")],
)
def test_normalise(raw, slug):
    assert Vocabulary.normalise(raw) == slug


@pytest.mark.parametrize("raw", ["", "  ", "--!", "é"])
def test_normalise_refuses_empty_slugs(raw):
    with pytest.raises(ValueError, match="no letters or digits"):
        Vocabulary.normalise(raw)


def test_add_deduplicates_and_keeps_the_first_entry():
    vocab = Vocabulary.default()
    n = len(vocab)
    assert vocab.add("Careless Submit", "another meaning", "evolver") == "careless-submit"
    assert len(vocab) == n
    assert vocab.to_frame().set_index("label").loc["careless-submit", "added_by"] == "gsme"
    assert vocab.add("Hallucinated API", " Invents an API. ", "claude") == "hallucinated-api"
    assert vocab.labels[-1] == "hallucinated-api" and len(vocab) == n + 1
    assert vocab.definition("hallucinated API") == "Invents an API."
    assert "Hallucinated_API" in vocab and "nope" not in vocab and None not in vocab


@pytest.mark.parametrize("definition, added_by, name", [("", "x", "definition"),
                                                         ("d", " ", "added_by"),
                                                         (None, "x", "definition")])
def test_add_requires_definition_and_author(definition, added_by, name):
    vocab = Vocabulary()
    with pytest.raises(ValueError, match=f"{name} of label 'new-mode'"):
        vocab.add("New mode", definition, added_by)
    assert len(vocab) == 0


def test_unknown_definition_lists_labels():
    with pytest.raises(KeyError, match="unknown why label 'nope'.*looping"):
        Vocabulary.default().definition("nope")


def test_dict_round_trip_through_json():
    vocab = Vocabulary.default()
    vocab.add("new one", "A new failure mode.", "evolver")
    again = Vocabulary.from_dict(json.loads(json.dumps(vocab.to_dict())))
    assert again == vocab and again.labels == vocab.labels
    assert again != Vocabulary.default()


@pytest.mark.parametrize("data", [{}, {"labels": "x"}, {"labels": [{"label": "a"}]}, []])
def test_from_dict_refuses_bad_data(data):
    with pytest.raises(ValueError, match="labels"):
        Vocabulary.from_dict(data)


def test_constructor_normalises_and_checks_entries():
    vocab = Vocabulary([Label("A b", "d", "me"), Label("a_b", "e", "you")])
    assert vocab.labels == ["a-b"] and vocab.definition("a-b") == "d"
    with pytest.raises(TypeError, match="Label objects"):
        Vocabulary([("a", "b", "c")])
