"""benchmarks/selector_probe.py: the teacher-forced probe's sequences are training's, its kinds the right ones."""

from __future__ import annotations

from editllm.bench.selector_probe import labelled, probe
from editllm.training.data import Example
from editllm.training.sft import IGNORE, encode_example

BEFORE = "def area(w, h):\n    return w + h\n\n\ndef name():\n    return 'box'\n"
AFTER = BEFORE.replace("w + h", "w * h")


def test_the_probe_labels_the_training_sequence(tokenizer):
    ex = Example("m.py", "the product comes out as a sum", BEFORE, AFTER, "t").finish()
    ids, kinds = labelled(tokenizer, ex, 151645)
    want, labels = encode_example(tokenizer, ex, 151645)
    assert ids == want and [k is None for k in kinds] == [y == IGNORE for y in labels]
    text = {k: "".join(tokenizer.decode([t]) for t, kk in zip(ids, kinds, strict=True) if kk == k)
            for k in set(kinds) - {None}}
    assert text["copy tag"] == '<copy lines="1-1"/><copy lines="3-6"/>' and text["gen markup"] == "<gen></gen>"
    assert "*" in text["gen, changed"] and "+" not in text["gen, changed"] and "return" in text["gen, as the input"]


def test_the_probe_runs_on_a_model(tiny_lm, tmp_path):
    import json

    cases = tmp_path / "c.jsonl"
    case = {"id": "x", "instruction": "the product is wrong", "before": BEFORE, "after": AFTER}
    cases.write_text(json.dumps(case) + "\n")
    result = probe(tiny_lm, cases)
    assert result["cases"] == 1 and sum(k["tokens"] for k in result["kinds"].values()) > 10
    assert set(result["first_departure"]) <= {"copy tag", "gen markup", "gen, as the input", "gen, changed", "eos",
                                               "none"}
