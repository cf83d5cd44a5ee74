"""benchmarks/where_edited.py: where a mode's edits landed against the gold fix."""

from __future__ import annotations

import json

from editllm.bench.where_edited import changed_lines, main, place, tally

BEFORE = "def f(x):\n    y = x - 1\n    return y\n\n\ndef g(x):\n    return x\n"
GOLD = BEFORE.replace("x - 1", "x + 1")


def test_an_edit_is_at_the_fix_elsewhere_or_none():
    assert changed_lines(BEFORE, GOLD) == {1}
    assert changed_lines(BEFORE, BEFORE.replace("    return y\n", "    z = y\n    return z\n")) == {2}
    assert changed_lines(BEFORE, BEFORE.replace("def f(x):\n", "def f(x):\n    # note\n")) == {1}  # inserted before
    assert place(BEFORE, GOLD, GOLD) == "at the fix"
    assert place(BEFORE, GOLD, BEFORE.replace("x - 1", "x - 2")) == "at the fix"  # the right line, a wrong repair
    assert place(BEFORE, GOLD, BEFORE.replace("return x", "return -x")) == "elsewhere"
    assert place(BEFORE, GOLD, BEFORE) == "unchanged" and place(BEFORE, GOLD, None) == "no output"


def test_a_runs_outputs_are_tallied_per_mode(tmp_path, capsys):
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "a", "before": BEFORE, "after": GOLD}) + "\n")
    outputs = [{"id": "a", "mode": "spec", "text": BEFORE}, {"id": "a", "mode": "copy", "text": GOLD},
               {"id": "other", "mode": "copy", "text": "x"}]  # a case not given: left out
    (tmp_path / "outputs.jsonl").write_text("".join(json.dumps(o) + "\n" for o in outputs))
    counts = tally({"a": {"before": BEFORE, "after": GOLD}}, outputs)
    assert counts["spec"]["unchanged"] == 1 and counts["copy"]["at the fix"] == 1 and sum(counts["copy"].values()) == 1
    main([str(tmp_path), "--cases", str(cases)])
    assert capsys.readouterr().out.splitlines()[2:] == ["| spec | 1 | 0 | 0 | 0 |", "| copy | 0 | 1 | 0 | 0 |"]


def test_copy_programs_are_read_for_idle_gen_spans_and_the_first_copys_distance(tmp_path, capsys):
    """The selector's commonest miss: a first copy one line off, then the next line written as it was."""
    from editllm.bench.where_edited import program_misses

    case = {"id": "a", "instruction": "the result is one too small", "before": BEFORE, "after": GOLD}
    idle = '<copy lines="1-2"/><gen>    return y\n</gen><copy lines="4-7"/>'
    right = '<copy lines="1-1"/><gen>    y = x + 1\n</gen><copy lines="3-7"/>'
    outputs = [{"id": "a", "mode": "copy", "program": idle}, {"id": "a", "mode": "copy", "program": right},
               {"id": "a", "mode": "spec", "text": BEFORE}]  # no program: not in this table
    counts = program_misses({"a": case}, outputs)
    assert counts == {"copy": {"programs": 2, "idle gen": 1, "1 off": 1, "same": 1}}
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(case) + "\n")
    (tmp_path / "outputs.jsonl").write_text("".join(json.dumps(o | {"text": BEFORE}) + "\n" for o in outputs))
    main([str(tmp_path), "--cases", str(cases)])
    assert capsys.readouterr().out.splitlines()[-1] == "| copy | 2 | 1 | 1 | 1 | 0 | 0 |"
