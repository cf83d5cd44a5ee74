"""The fixed prompt prefix read once (editor.prefix): a token-id prefix of every prompt, lossless on both
engines whether it comes from memory, a saved state or a fresh read, and never trusted when stale."""

from __future__ import annotations

import pytest
from editllm.editor.decode import Decoder
from editllm.editor.drafter import CopyDrafter, DraftSchedule
from editllm.editor.edit import EditOptions, prefix_length, prompt_ids
from editllm.editor.prompt import LAYOUTS, rewrite_prompt
from editllm.editor.source import source_from_text

FILES = {
    "stats.py": "import math\n\n\ndef average(xs):\n    total = 0\n    for x in xs:\n        total += x\n"
                "    return total / (len(xs) - 1)\n",
    "notes.md": "# Notes\n\n```python\nprint('hi')\n```\n\nSome text.\n",
    "weird path/ä.txt": "\n\n  leading blank lines\n",
    "empty.py": "",
    "app.js": "// app\nconst x = 1;\n\nfunction f() {\n  return x;\n}\n",
}


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """Saved states go to a fresh cache dir per test, never the user's."""
    monkeypatch.setenv("EDITLLM_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_prefix_ids_are_a_prefix_of_every_prompt_and_the_same_for_all(tokenizer, layout):
    """The saved state is only usable if the prefix's own ids start every prompt's ids, unchanged: one
    prefix for code files and one for prose files (their own wording, editor.prose)."""
    from editllm.editor.prompt import PROSE, language

    heads: dict[bool, set] = {True: set(), False: set()}
    for path, text in FILES.items():
        for instruction in ("Fix the bug.", "  Rename `x` to `y`\n\nand more  "):
            prompt = rewrite_prompt(tokenizer, path, text, instruction, LAYOUTS[layout])
            assert prompt.text.startswith(prompt.prefix)
            ids = tokenizer(prompt.text, add_special_tokens=False)["input_ids"]
            head = tokenizer(prompt.prefix, add_special_tokens=False)["input_ids"]
            assert ids[: len(head)] == head
            heads[language(path) in PROSE].add(tuple(head))
    for group in heads.values():
        if group:
            assert len(group) == 1
            assert (len(group.pop()) > 40) == LAYOUTS[layout].fixed_first  # the fixed wording, or no prefix


def test_instruction_stays_after_the_file(tokenizer):
    prompt = rewrite_prompt(tokenizer, "a.py", "x = 1\n", "Make it 2.")
    assert prompt.text.index("x = 1") < prompt.text.index("Make it 2.")
    assert prompt.text.index("Output the complete updated file") < prompt.text.index("File: a.py")


def _runs(lm, prompt, prefix, n=40, spec=False):
    drafter = CopyDrafter(3, DraftSchedule.parse("adaptive:4,2,32,2")) if spec else None
    return Decoder(lm.engine).run(prompt, n, None, drafter, prefix=prefix)


def _prompt(lm, name="stats.py"):
    prompt = rewrite_prompt(lm.tokenizer, name, FILES[name], "Fix the bug in average.")
    ids = prompt_ids(lm, prompt)
    return ids, prefix_length(lm, prompt, ids)


def test_torch_prefix_kept_in_memory_is_lossless(tiny_lm):
    ids, n = _prompt(tiny_lm)
    assert n > 40
    plain, stats = _runs(tiny_lm, ids, 0)
    assert stats.prefix_tokens == 0 and stats.prefix_source == ""
    first, stats = _runs(tiny_lm, ids, n)
    assert first == plain and stats.prefix_source == "read" and stats.prefix_tokens == n
    other, _ = _prompt(tiny_lm, "app.js")  # another code file: the same fixed prefix
    other_plain, _ = _runs(tiny_lm, other, 0, spec=True)
    _runs(tiny_lm, ids, n)  # leaves the prefix held, with a whole run's cells after it
    kept, stats = _runs(tiny_lm, other, n, spec=True)
    assert kept == other_plain and stats.prefix_source == "memory"
    assert stats.prompt_tokens == len(other)


def test_engines_without_start_are_reset(tiny_lm):
    """An engine that cannot keep a prefix (a server backend, a test double) still decodes the prompt."""

    class Plain:
        def __init__(self, inner):
            self.inner = inner
            self.tokenizer, self.eos, self.vocab_size = inner.tokenizer, inner.eos, inner.vocab_size
            self.forward, self.truncate, self.reset = inner.forward, inner.truncate, inner.reset

    ids, n = _prompt(tiny_lm)
    plain, _ = _runs(tiny_lm, ids, 0)
    inner = tiny_lm.engine
    inner.start(ids[:n])  # a held prefix plus junk must not leak into an engine used without start
    inner.forward([5, 6, 7], keep=1)
    out, stats = Decoder(Plain(inner)).run(ids, 40, None, None, prefix=n)
    assert out == plain and stats.prefix_tokens == 0


@pytest.fixture(scope="module")
def llama_lm(tiny_gguf, tmp_path_factory):
    import editllm.editor.models as models

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EDITLLM_CACHE", str(tmp_path_factory.mktemp("editllm-cache")))
        return models.load_model(str(tiny_gguf), engine="llamacpp")


def _fresh(llama_lm, tiny_gguf):
    """A second engine over the same GGUF: a new process as far as the cache is concerned."""
    from editllm.editor.llamacpp import LlamaCppEngine
    from editllm.editor.models import LLAMACPP_CONTEXT

    return LlamaCppEngine(tiny_gguf, llama_lm.tokenizer, n_ctx=LLAMACPP_CONTEXT)


def test_llamacpp_saved_state_is_lossless_from_disk_and_memory(llama_lm, tiny_gguf, private_cache):
    ids, n = _prompt(llama_lm)
    engine = llama_lm.engine
    plain, _ = Decoder(engine).run(ids, 40, None, prefix=0)
    read, stats = Decoder(engine).run(ids, 40, None, prefix=n)
    assert read == plain and stats.prefix_source == "read"
    files = list((private_cache / "prefix-state").iterdir())
    assert len(files) == 1 and files[0].suffix == ".bin"
    other = _fresh(llama_lm, tiny_gguf)
    loaded, stats = Decoder(other).run(ids, 40, None, prefix=n)
    assert loaded == plain and stats.prefix_source == "disk" and stats.prefix_tokens == n
    spec_ids, _ = _prompt(llama_lm, "app.js")
    reference, _ = Decoder(engine).run(spec_ids, 40, None, prefix=0)
    kept, stats = Decoder(other).run(spec_ids, 40, None, CopyDrafter(3, DraftSchedule()), prefix=n)
    assert kept == reference and stats.prefix_source == "memory"
    other.close()


def test_llamacpp_stale_or_corrupt_state_is_rebuilt(llama_lm, tiny_gguf, private_cache):
    ids, n = _prompt(llama_lm)
    engine = llama_lm.engine
    plain, _ = Decoder(engine).run(ids, 40, None, prefix=0)
    Decoder(engine).run(ids, 40, None, prefix=n)
    (state,) = (private_cache / "prefix-state").iterdir()
    whole = state.read_bytes()
    state.write_bytes(whole[: len(whole) - 100])  # truncated
    other = _fresh(llama_lm, tiny_gguf)
    out, stats = Decoder(other).run(ids, 40, None, prefix=n)
    assert out == plain and stats.prefix_source == "read"
    assert state.read_bytes() == whole  # rebuilt, whole again
    flipped = bytearray(whole)
    flipped[-10] ^= 0xFF  # corrupt payload, right length
    state.write_bytes(bytes(flipped))
    other.reset()
    out, stats = Decoder(other).run(ids, 40, None, prefix=n)
    assert out == plain and stats.prefix_source == "read"
    # another prompt version: other fixed wording gives other prefix ids, another key, never the old state
    changed = ids[: n - 2] + [ids[n - 1], ids[n - 2]] + ids[n:]
    other.reset()
    out, stats = Decoder(other).run(changed, 40, None, prefix=n)
    reference, _ = Decoder(engine).run(changed, 40, None, prefix=0)
    assert out == reference and stats.prefix_source == "read"
    assert len(list((private_cache / "prefix-state").iterdir())) == 2
    # a state copied under another key's name is refused by its header
    a, b = sorted((private_cache / "prefix-state").iterdir())
    a.write_bytes(b.read_bytes())
    other.reset()
    for prompt in (ids, changed):
        out, stats = Decoder(other).run(prompt, 40, None, prefix=n)
        assert out == Decoder(engine).run(prompt, 40, None, prefix=0)[0]
        other.reset()
    other.close()


@pytest.mark.parametrize("mode", ["rewrite", "spec"])
def test_regenerate_uses_the_prefix_across_files(llama_lm, mode, monkeypatch):
    """Through the pipeline, the prefix held across files: the same file gives the same output, and
    spec's equals rewrite's (a random model writes no closing fence: the raw output is compared)."""
    import editllm.editor.edit as edit

    monkeypatch.setattr(edit, "finish_text", lambda src, body, *args: body)
    outs = {}
    for mode_ in ("rewrite", mode):
        for k, name in enumerate(("stats.py", "app.js", "stats.py")):
            src = source_from_text(FILES[name].encode(), name)
            _, stats, output, _ = edit.regenerate(llama_lm, src, src.text, "Fix the bug.",
                                               EditOptions(mode=mode_, max_new_tokens=48, focus=False))
            outs[mode_, k] = output
            assert stats.prefix_tokens > 40 and (k == 0 or stats.prefix_source == "memory")
    assert outs[mode, 0] == outs[mode, 2] == outs["rewrite", 0]
    assert outs[mode, 1] == outs["rewrite", 1]
