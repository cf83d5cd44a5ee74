"""The llama.cpp engine on a tiny F32 GGUF written at test time from the tiny random Qwen2."""

from __future__ import annotations

import llama_cpp  # noqa: F401 - a dependency: a missing build must fail here, not skip
import numpy as np
import pytest
import torch
from conftest import TINY_HEAD_SCALE as HEAD_SCALE
from editllm.editor.llamacpp import LlamaCppEngine


@pytest.fixture(scope="session")
def engine(tiny_gguf) -> LlamaCppEngine:
    return LlamaCppEngine(tiny_gguf, n_ctx=1024, n_batch=64, threads=1)


IDS = [151644, 8948, 198, 2610, 525, 264, 23560, 2038, 6440, 13, 151645, 198, 151644, 872, 198] + list(
    range(1000, 1090)
)


def test_logits_match_the_torch_model(engine, tiny_model_dir):
    """Same weights, same tokens: llama.cpp's F32 logits equal transformers' (the converter is right)."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    # untie: with tied embeddings, scaling lm_head's data would scale the input embedding too
    model.lm_head.weight = torch.nn.Parameter(model.lm_head.weight.detach().clone() * HEAD_SCALE)
    with torch.no_grad():
        ref = model(torch.tensor([IDS])).logits[0, -5:].numpy()
    engine.reset()
    got = engine.forward(IDS, keep=5).copy()
    assert got.shape == ref.shape
    assert np.abs(got - ref).max() < 1e-2 * np.abs(ref).max()
    assert (got.argmax(-1) == ref.argmax(-1)).all()


def test_truncate_then_forward_equals_never_having_seen_the_draft(engine):
    """A rejected draft leaves no trace: the rows after a crop are those of a clean run."""
    engine.reset()
    clean = engine.forward(IDS[:60], keep=1).copy()
    clean_next = engine.forward([IDS[60]], keep=1).copy()
    engine.reset()
    engine.forward(IDS[:50], keep=1)
    engine.forward(IDS[50:60] + [7, 8, 9, 10], keep=5)  # a draft of 4 wrong tokens rides along
    engine.truncate(4)
    assert engine.length == 60
    again = engine.forward([IDS[60]], keep=1)
    assert np.allclose(again, clean_next, atol=1e-3 * np.abs(clean_next).max())
    assert int(again.argmax()) == int(clean_next.argmax())
    assert clean.shape == (1, engine.n_vocab)


def test_long_input_goes_in_chunks_with_kept_rows_in_the_last(engine):
    """More tokens than n_batch (64): chunked, and the kept rows are still the last positions."""
    ids = IDS + IDS[15:]  # 195 tokens
    engine.reset()
    rows = engine.forward(ids, keep=3).copy()
    engine.reset()
    engine.forward(ids[:-3], keep=1)
    one_by_one = [engine.forward([t], keep=1).copy()[0] for t in ids[-3:]]
    assert engine.length == len(ids)
    assert (rows.argmax(-1) == np.array([r.argmax() for r in one_by_one])).all()


def test_bad_keep_and_full_context_are_refused(engine):
    from editllm.editor.errors import EditError

    engine.reset()
    with pytest.raises(ValueError):
        engine.forward([1, 2], keep=3)
    with pytest.raises(EditError):
        engine.forward(list(range(100, 100 + 1025)), keep=1)


# --- the engine inside editllm: the same drafter, matcher and resolver as on torch ---------------------------

FILES = {
    "stats.py": "import math\n\n\ndef average(xs):\n    total = 0\n    for x in xs:\n        total += x\n"
                "    return total / (len(xs) - 1)\n\n\ndef spread(xs):\n    return max(xs) - min(xs)\n",
    "notes.md": "# Notes\n\nSome text with a tpyo.\n\n```python\nprint('hi')\n```\n\nMore text here.\n",
    "empty_end.py": "x = 1\ny = 2",
}


@pytest.fixture(scope="session")
def llama_lm(tiny_gguf, tmp_path_factory):
    """The tiny GGUF loaded the way `editllm --engine llamacpp` loads a model (tokenizer cached once)."""
    import editllm.editor.models as models

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EDITLLM_CACHE", str(tmp_path_factory.mktemp("editllm-cache")))
        return models.load_model(str(tiny_gguf), engine="llamacpp")


@pytest.mark.parametrize("name", sorted(FILES))
@pytest.mark.parametrize("focus", [True, False])
def test_spec_is_byte_identical_to_rewrite_on_llamacpp(llama_lm, name, focus):
    """Lossless on this engine too: spec's verified drafts give rewrite's exact bytes (and stop point)."""
    from editllm.editor.edit import EditOptions, edit_file
    from editllm.editor.source import source_from_text

    src = source_from_text(FILES[name].encode(), name)
    instruction = "Fix the bug in average." if name == "stats.py" else "Fix the typo."
    outs = {}
    for mode in ("rewrite", "spec"):
        try:
            res = edit_file(llama_lm, src, instruction, EditOptions(mode=mode, max_new_tokens=96, focus=focus))
            outs[mode] = (res.raw_output, res.new_text, res.stats.output_tokens)
        except Exception as exc:  # noqa: BLE001 - a random model may write no closing fence: compare that too
            outs[mode] = (type(exc).__name__, str(exc))
    assert outs["spec"] == outs["rewrite"]
    assert llama_lm.engine_name == "llamacpp" and llama_lm.model is None


def test_oracle_program_gives_the_exact_text_on_llamacpp(llama_lm):
    """Copy mode's runtime on llama.cpp: the gold program's copies enter the cache in one forward each
    and the resolved text is exactly the target."""
    from editllm.editor.copymode import run_oracle
    from editllm.grammar.program import oracle

    before = FILES["stats.py"]
    after = before.replace("(len(xs) - 1)", "len(xs)")
    text, stats = run_oracle(llama_lm, "stats.py", before, "Fix the bug in average.", oracle(before, after))
    assert text == after
    assert stats.prefilled_tokens > 0 and stats.forwards < stats.output_tokens


def test_copy_mode_runs_on_llamacpp(llama_lm):
    """The model-written program path (grammar mask on llama.cpp's logits): a usable program or a
    clean fallback to spec, never a crash."""
    from editllm.editor.copymode import ProgramFailed, run_copy
    from editllm.editor.edit import EditOptions, edit_file
    from editllm.editor.errors import EditError
    from editllm.editor.source import source_from_text

    try:  # the program loop itself: grammar masks applied to llama.cpp's rows
        text, stats = run_copy(llama_lm, "stats.py", FILES["stats.py"], "Fix the bug in average.", 64)
        assert stats.forwards >= 1 and isinstance(text, str)
    except (ProgramFailed, EditError) as exc:  # a random model's program may be unusable: said in one line
        assert str(exc) and "\n" not in str(exc)
    src = source_from_text(FILES["stats.py"].encode(), "stats.py")
    try:  # and through edit_file, with its fallback to spec
        res = edit_file(llama_lm, src, "Fix the bug in average.", EditOptions(mode="copy", max_new_tokens=64))
        assert res.fallback is None or isinstance(res.fallback, str)
    except EditError as exc:
        assert "nothing written" in str(exc)


def test_engine_choice():
    from editllm.editor.errors import EditError
    from editllm.editor.models import pick_engine

    assert pick_engine("auto", "bundled:1.5b", "cpu", None) == "llamacpp"
    assert pick_engine("auto", "m.gguf", "cpu", None) == "llamacpp"
    assert pick_engine("auto", "bundled:1.5b", "cuda", None) == "static"  # the GPU engine (editor.static)
    assert pick_engine("auto", "bundled:1.5b", "cpu", "adapter/") == "torch"
    assert pick_engine("auto", "some/dir", "cpu", None) == "torch"
    assert pick_engine("torch", "bundled:1.5b", "cpu", None) == "torch"
    for engine, spec, device, adapter in (("llamacpp", "some/dir", "cpu", None), ("llamacpp", "m.gguf", "cuda", None),
                                          ("llamacpp", "m.gguf", "cpu", "a/"), ("fast", "m.gguf", "cpu", None)):
        with pytest.raises(EditError):
            pick_engine(engine, spec, device, adapter)


def test_cli_fix_on_llamacpp_reports_the_engine(tiny_gguf, tmp_path, monkeypatch):
    """`editllm fix --model X.gguf` on the CPU takes llama.cpp by default and says so in --stats."""
    import json

    from editllm.cli.main import app
    from typer.testing import CliRunner

    monkeypatch.setenv("EDITLLM_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "stats.py").write_text(FILES["stats.py"])
    res = CliRunner().invoke(app, ["fix", "stats.py", "Fix the bug in average.", "--model", str(tiny_gguf),
                                   "--max-new-tokens", "64", "--stats", "--quiet"])
    assert res.exit_code in (0, 2), res.output
    lines = res.stderr.strip().splitlines()
    stats = json.loads(lines[0])
    assert stats["engine"] == "llamacpp" and stats["dtype"] == "gguf"
    if res.exit_code == 2:  # a random model may never close the file: the stats with its error, then the error
        assert len(lines) == 2 and lines[1].startswith("editllm: error: ") and lines[1][16:] in stats["error"]


def test_two_engines_freed_in_any_order_do_not_crash(tiny_gguf):
    """llama.cpp's log callback is process-global: an engine that owned it and was freed first left a
    dangling pointer that the next engine's free called (a segfault at pytest's teardown). In a
    subprocess, so a crash fails this test instead of the run."""
    import subprocess
    import sys

    code = (
        "import gc, sys\n"
        "from editllm.editor.llamacpp import LlamaCppEngine\n"
        "a = LlamaCppEngine(sys.argv[1], n_ctx=256, n_batch=32, threads=1)\n"
        "b = LlamaCppEngine(sys.argv[1], n_ctx=256, n_batch=32, threads=1)\n"
        "b.forward([1, 2, 3], keep=1)\n"
        "del b; gc.collect()\n"
        "a.forward([1, 2, 3], keep=1)\n"
        "del a; gc.collect()\n"
        "print('ok')\n"
    )
    res = subprocess.run([sys.executable, "-c", code, str(tiny_gguf)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and res.stdout.strip() == "ok", (res.returncode, res.stderr[-2000:])


@pytest.mark.parametrize("fixture", ["llama_lm", "tiny_lm"])
def test_asking_again_on_the_cached_prompt_writes_what_a_fresh_ask_writes(fixture, request):
    """Copy mode's second ask (`run_copy`) cuts the cache back to the prompt and reads only its last token;
    on either engine it must write the program a fresh ask with the same banned copy writes."""
    from editllm.editor.copymode import CopyRun, ProgramFailed
    from editllm.grammar import Copy

    lm = request.getfixturevalue(fixture)
    text = FILES["stats.py"]

    def ask(banned: frozenset, cached: bool):
        run = CopyRun(lm, "stats.py", text, "Fix the bug in average.", banned=banned)
        try:
            _, ops = run.run_model(48, cached=cached)
        except ProgramFailed:  # a random model's program may be unusable: its tokens still compare
            ops = []
        return run, ops, run.program

    _, ops, _ = ask(frozenset(), cached=False)
    banned = frozenset([op for op in ops if isinstance(op, Copy)][:1] or [Copy(1, 3)])
    again, _, again_program = ask(banned, cached=True)
    fresh, _, fresh_program = ask(banned, cached=False)
    assert len(again_program) > 8 and again_program == fresh_program
    assert again.stats.forwards == fresh.stats.forwards and again.stats.prompt_tokens == fresh.stats.prompt_tokens
