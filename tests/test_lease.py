"""training/lease.py: the GPU job's parts on the tiny model (tasks carried as JSON, batched greedy decoding,
the editor's pipeline fed decoded outputs, encoded sequences, a whole run on the CPU)."""

from __future__ import annotations

import gzip
import json
import random

import pytest
import torch
from editllm.editor.edit import EditOptions
from editllm.editor.focus import focus_of
from editllm.editor.source import split_lines
from editllm.training.data import Example, read_jsonl, write_jsonl
from editllm.training.distill import Task, distill, fixed_check, prompt_of, python_tasks, replay
from editllm.training.lease import generate_batch, load_encoded, main, save_encoded
from editllm.training.sft import IGNORE, encode_example, eos_id

ORIGINAL = '''import math


def total(items):
    """Sum of the items."""
    result = 0
    for item in items:
        result = result + item
    return result


def mean(items):
    if not items:
        raise ValueError("no items")
    return total(items) / len(items)


def spread(items):
    m = mean(items)
    return math.sqrt(sum((x - m) ** 2 for x in items) / len(items))


def report(items):
    print(total(items), mean(items), spread(items))
'''
MUTATED = ORIGINAL.replace("result = result + item", "result = result - item")
INSTRUCTION = "Fix `total`: it returns a negative number for positive items."


def test_tasks_survive_json_with_their_checks():
    tasks = python_tasks(ORIGINAL, random.Random(3))
    assert {t.kind for t in tasks} >= {"type_hints", "docstring", "logging", "bug"}
    for task in tasks:
        back = Task.from_json(task.to_json())
        assert (back.kind, back.instruction, back.before) == (task.kind, task.instruction, task.before)
        for text in (task.before, ORIGINAL, ORIGINAL.replace("def ", "def x_")):
            expect = task.check(text) if task.check else None
            assert (back.check(text) if back.check else None) == expect, (task.kind, text[:40])
    bug = next(t for t in tasks if t.kind == "bug")
    assert Task.from_json(bug.to_json()).check(ORIGINAL) is None
    assert Task.from_json(bug.to_json()).check(bug.before) == "bug not fixed exactly"


def test_encoded_sequences_round_trip(tmp_path):
    seqs = [([5, 6, 7, 151645], [IGNORE, IGNORE, 7, 151645]), ([1] * 13, [IGNORE] * 12 + [1])]
    save_encoded(seqs, tmp_path / "s.npz")
    assert load_encoded(tmp_path / "s.npz") == seqs


@pytest.fixture(scope="module")
def sharp_model(tmp_path_factory, tokenizer_dir):
    """The tiny Qwen2 with its head scaled up: greedy has no near-ties for padding to flip."""
    from served_models import scale_head, write_qwen2
    from transformers import AutoModelForCausalLM

    out = write_qwen2(tokenizer_dir, tmp_path_factory.mktemp("sharp"), scale_head)
    return out, AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32).eval()


def test_batched_greedy_equals_one_at_a_time(sharp_model):
    _, model = sharp_model
    prompts = [([11, 22, 33, 44, 55, 66, 77], 9), ([101, 202], 12), ([7, 8, 9, 10], 5)]
    got = generate_batch(model, prompts, eos=[151645], pad=151643, deadline=float("inf"), log=lambda m: None)
    for ids, new in prompts:
        with torch.no_grad():
            one = model.generate(input_ids=torch.tensor([ids]), max_new_tokens=new, do_sample=False,
                                 eos_token_id=[151645], pad_token_id=151643)[0, len(ids):].tolist()
        cut = one.index(151645) if 151645 in one else len(one)
        assert got[tuple(ids)] == (one[:cut], "eos" if cut < len(one) else "max_new_tokens")


def test_batches_respect_the_token_budget(sharp_model):
    _, model = sharp_model
    prompts = [([i + 1] * (3 + i), 4) for i in range(6)]
    lines = []
    got = generate_batch(model, prompts, eos=[151645], pad=151643, deadline=float("inf"), batch_tokens=20,
                         log=lines.append)
    assert len(got) == 6 and len(lines) >= 3  # rows × (prompt + budget) ≤ 20: at most two rows a batch
    assert generate_batch(model, prompts, [151645], 151643, deadline=0.0, log=lines.append).keys() <= got.keys()


def test_replayed_outputs_go_through_the_editors_checks(tiny_lm, tmp_path):
    """A decoded output that fixes the bug is kept as an example with its program; a task whose prompt was
    not decoded is logged as such, not kept."""
    task = Task("bug", INSTRUCTION, MUTATED, fixed_check(ORIGINAL), "total", ORIGINAL)
    other = Task("docstring", "Add a docstring to `mean`.", ORIGINAL, None, "mean")
    opts = EditOptions(mode="rewrite")
    ids, max_new = prompt_of(tiny_lm, "stats.py", task, opts)
    assert max_new > 0 and prompt_of(tiny_lm, "stats.py", other, opts)[0] != ids
    focus = focus_of(ORIGINAL, INSTRUCTION, split_lines(ORIGINAL))
    shown = focus.text if focus else ORIGINAL
    out = tiny_lm.tokenizer(shown + "```\n", add_special_tokens=False)["input_ids"]
    counts = distill(tiny_lm, 5, tmp_path / "d.jsonl.gz", tasks=[("pkg/stats.py", "stats.py", task),
                                                                  ("pkg/stats.py", "stats.py", other)],
                     opts=EditOptions(mode="rewrite", generate=replay({tuple(ids): (out, "eos")})))
    assert counts == {"kept": 1, "edit error: not decoded in the batch": 1}
    [ex] = read_jsonl(tmp_path / "d.jsonl.gz")
    assert (ex.before, ex.after, ex.source) == (MUTATED, ORIGINAL, "distill:bug:pkg/stats.py")
    assert "<gen>" in ex.program


def test_distillation_begins_no_task_after_its_deadline(tiny_lm, tmp_path):
    import time

    task = Task("bug", INSTRUCTION, MUTATED, fixed_check(ORIGINAL), "total", ORIGINAL)
    counts = distill(tiny_lm, 5, tmp_path / "d.jsonl.gz", tasks=[("pkg/stats.py", "stats.py", task)],
                     opts=EditOptions(mode="rewrite"), deadline=time.time() - 1)
    assert counts == {} and not (tmp_path / "d.jsonl.gz.attempts").read_text()


@pytest.mark.parametrize("decoder", ["batch", "spec"])
def test_a_whole_run_on_the_cpu(tiny_model_dir, tokenizer, tokenizer_dir, tmp_path, decoder, capsys):
    """pack's files in, an adapter (bf16 safetensors, loadable by peft) and the distillation logs out; the
    tasks decoded in batches by transformers, or by editllm's spec mode on the static engine; examples distilled
    before the lease are packed and trained beside the ones distilled in it, with the same weight."""
    from editllm.training.lease import pack
    from peft import PeftModel
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    ex = Example("stats.py", INSTRUCTION, MUTATED, ORIGINAL, "synthetic:test").finish()
    write_jsonl([ex, ex], tmp_path / "syn.jsonl.gz", tokenizer)
    earlier = Example("stats.py", "Add a docstring to `mean`.", ORIGINAL, ORIGINAL.replace(
        "def mean(items):\n", 'def mean(items):\n    """The average."""\n'), "distill:docstring:pkg/stats.py").finish()
    write_jsonl([earlier], tmp_path / "earlier.jsonl.gz", tokenizer)
    pack(tmp_path / "syn.jsonl.gz", 2, 0, tokenizer_dir, tmp_path / "pack", [tmp_path / "earlier.jsonl.gz"])
    assert len(load_encoded(tmp_path / "pack" / "synthetic.npz")) == 2
    assert load_encoded(tmp_path / "pack" / "distilled.npz") == [encode_example(tokenizer, earlier, eos_id(tokenizer))]
    with gzip.open(tmp_path / "pack" / "tasks.jsonl.gz", "rt") as f:  # public files: too long for the tiny model
        assert sum(1 for _ in f) == 2
    tasks = [Task("bug", INSTRUCTION, MUTATED, None, "total", ORIGINAL), Task("docstring", "Add a docstring to "
                                                                              "`mean`.", ORIGINAL, None, "mean")]
    with gzip.open(tmp_path / "pack" / "tasks.jsonl.gz", "wt") as f:
        f.writelines(json.dumps({"label": "pkg/stats.py", "path": "stats.py", **t.to_json()}) + "\n" for t in tasks)
    main(["run", "--hf", str(tiny_model_dir), "--pack", str(tmp_path / "pack"), "--out", str(tmp_path / "run"),
          "--device", "cpu", "--minutes", "2", "--distill-minutes", "0.5", "--train-minutes", "0.5",
          "--lora", "2", "--steps", "3", "--warmup", "1", "--max-len", "8192", "--save-seconds", "0",
          "--decoder", decoder])
    adapter = tmp_path / "run" / "adapter"
    weights = load_file(adapter / "adapter_model.safetensors")
    assert weights and all(w.dtype == torch.bfloat16 for w in weights.values())
    assert (tmp_path / "run" / "distill.jsonl.gz.attempts").read_text().count("\n") == 2
    kept_now = len(read_jsonl(tmp_path / "run" / "distill.jsonl.gz"))
    log = capsys.readouterr().err
    assert f"training on {2 + 2 * (1 + kept_now)} sequences (1 distilled earlier and {kept_now} now" in log
    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    assert isinstance(PeftModel.from_pretrained(base, adapter), PeftModel)


def test_distilling_here_leaves_out_what_was_distilled_before(tiny_model_dir, tokenizer, tmp_path, monkeypatch):
    """`lease.py distill`: the drawn tasks less those of an earlier distillation, decoded here by spec mode;
    every attempt logged, so a second call does nothing again."""
    from editllm.training import lease

    tasks = [Task("bug", INSTRUCTION, MUTATED, None, "total", ORIGINAL),
             Task("docstring", "Add a docstring to `mean`.", ORIGINAL, None, "mean")]
    monkeypatch.setattr(lease, "draw_tasks", lambda n, seed: [{"label": "pkg/stats.py", "path": "stats.py",
                                                               **t.to_json()} for t in tasks][:n])
    earlier = Example("stats.py", INSTRUCTION, MUTATED, ORIGINAL, "distill:bug:pkg/stats.py").finish()
    write_jsonl([earlier], tmp_path / "earlier.jsonl.gz", tokenizer)
    out = tmp_path / "here.jsonl.gz"
    said = []
    counts = lease.distill_here(2, 0, [tmp_path / "earlier.jsonl.gz"], out, 1.0, model=str(tiny_model_dir),
                                log=said.append)
    assert sum(counts.values()) == 1 and said[0].startswith("1 of 1 tasks (2 drawn, less 1 distilled before)")
    [attempt] = (tmp_path / "here.jsonl.gz.attempts").read_text().splitlines()
    assert "Add a docstring to `mean`." in attempt
    assert lease.distill_here(2, 0, [tmp_path / "earlier.jsonl.gz"], out, 1.0, model=str(tiny_model_dir),
                              log=said.append) == {}


def test_pack_refuses_distilled_examples_that_lost_code(tokenizer, tokenizer_dir, tmp_path):
    """Rewrite mode's outputs from before the editor caught them may hold a placeholder (`editor.elision`) or a
    statement dropped beside a changed one: copy mode must not learn to lose the user's lines."""
    from editllm.training.data import lossy
    from editllm.training.lease import pack

    good = Example("stats.py", "Add a docstring to `mean`.", ORIGINAL, ORIGINAL.replace(
        "def mean(items):\n", 'def mean(items):\n    """The average."""\n'), "distill:docstring:pkg/stats.py").finish()
    cut = Example("stats.py", "Add a docstring to `mean`.", ORIGINAL, good.after.split("def mean")[0] +
                  "# ... existing code ...\n", "distill:docstring:pkg/stats.py")
    dropped = Example("stats.py", "Add a docstring to `mean`.", ORIGINAL,
                      good.after.replace("import math\n", "import logging\n"), "distill:docstring:pkg/stats.py")
    assert not lossy(good) and lossy(cut) and lossy(dropped)
    # what only the editor's later checks caught (`edit.finish_edit` judges): a file that no longer parses
    broken = Example("stats.py", "Add a docstring to `mean`.", ORIGINAL,
                     good.after.replace("return result", "return (result"), "distill:docstring:pkg/stats.py")
    assert lossy(broken)
    crlf = Example("stats.py", good.instruction, ORIGINAL.replace("\n", "\r\n"), good.after.replace("\n", "\r\n"),
                   good.source)
    assert not lossy(crlf)  # a review: CRLF text went to the editor as the model's, which writes `\n` lines
    write_jsonl([good], tmp_path / "syn.jsonl.gz", tokenizer)
    write_jsonl([good, cut, dropped], tmp_path / "earlier.jsonl.gz", tokenizer)
    pack(tmp_path / "syn.jsonl.gz", 1, 0, tokenizer_dir, tmp_path / "pack", [tmp_path / "earlier.jsonl.gz"])
    assert load_encoded(tmp_path / "pack" / "distilled.npz") == [encode_example(tokenizer, good, eos_id(tokenizer))]
