"""editor.tokenizer: the light tokenizer gives transformers' ids, text and prompts, and the llama.cpp path
imports neither torch nor transformers once the cache is warm."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from editllm.editor.tokenizer import RUNTIME, LightTokenizer, differences, save_light
from hypothesis import given
from hypothesis import strategies as st

TEXTS = [
    "def average(xs):\n    return sum(xs) / (len(xs) - 1)\n",
    "",
    " ",
    "\n\n\n",
    "\t\tindented\twith\ttabs\r\nand CRLF\r\n",
    "x" * 300,
    "    " * 20 + "deep = 1\n",
    "café cafe\u0301 ñ n\u0303 Å A\u030a",  # composed and decomposed: transformers' Qwen2 normalizes to NFC
    "日本語とEnglish混在、emoji 🙂👍🏽🏳️‍🌈 and math ∑∫√",
    "<|im_start|>system\nnot really<|im_end|>\n<|endoftext|><|fim_prefix|>",
    "s = f\"{x!r:>10}\" + '\\n' + r'\\d+' + \"\"\"doc\"\"\"  # 'quotes'\n",
    "1234567890 3.14159 -1e-9 0xFF 1_000_000",
    "   leading and trailing   ",
    "\u00a0\u2028\u2029\u200b\ufeff odd spaces",
]


@pytest.fixture(scope="module")
def light(tokenizer, tmp_path_factory) -> LightTokenizer:
    """The light copy of the test Qwen tokenizer, saved and loaded back from disk."""
    folder = tmp_path_factory.mktemp("light")
    assert save_light(tokenizer, folder)
    loaded = LightTokenizer.load(folder)
    assert loaded is not None
    return loaded


@pytest.mark.parametrize("text", TEXTS)
def test_same_ids_and_text_as_transformers(light, tokenizer, text):
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert light(text, add_special_tokens=False)["input_ids"] == ids
    assert light.encode(text, add_special_tokens=False) == ids
    for skip in (False, True):
        assert light.decode(ids, skip_special_tokens=skip, clean_up_tokenization_spaces=False) == \
            tokenizer.decode(ids, skip_special_tokens=skip, clean_up_tokenization_spaces=False)
    assert light.convert_ids_to_tokens(ids) == tokenizer.convert_ids_to_tokens(ids)


@given(st.text(max_size=80))
def test_same_ids_on_any_text(light, tokenizer, text):
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert light(text, add_special_tokens=False)["input_ids"] == ids
    assert light.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False) == \
        tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)


def test_same_special_tokens_and_sizes(light, tokenizer):
    assert light.eos_token_id == tokenizer.eos_token_id and light.pad_token_id == tokenizer.pad_token_id
    assert light.bos_token_id == tokenizer.bos_token_id and light.unk_token_id == tokenizer.unk_token_id
    assert light.all_special_ids == tokenizer.all_special_ids
    assert len(light) == len(tokenizer) and light.vocab_size == tokenizer.vocab_size
    assert light.get_vocab() == tokenizer.get_vocab()
    names = ["<|im_end|>", "<|im_start|>", "def", "not-a-token-at-all"]
    assert light.convert_tokens_to_ids(names) == tokenizer.convert_tokens_to_ids(names)


def test_same_rewrite_and_copy_prompts(light, tokenizer):
    """The prompts editllm builds render to the same text (and so the same ids) with either tokenizer."""
    from editllm.editor.prompt import LAYOUTS, copy_prompt, rewrite_prompt

    for path, text, instruction in (("stats.py", TEXTS[0], "Fix the bug."),
                                    ("notes.md", "# Ünïcödé\n\n```py\nx\n```\n", "Fix the typo\t "),
                                    ("empty.txt", "", "Add a line.")):
        for name, layout in LAYOUTS.items():
            ours, theirs = rewrite_prompt(light, path, text, instruction, layout), \
                rewrite_prompt(tokenizer, path, text, instruction, layout)
            assert ours == theirs, name
            assert light(ours.text, add_special_tokens=False)["input_ids"] == \
                tokenizer(theirs.text, add_special_tokens=False)["input_ids"]
        assert copy_prompt(light, path, text, instruction) == copy_prompt(tokenizer, path, text, instruction)
    chat = [{"role": "user", "content": "hi"}]
    assert light.apply_chat_template(chat, tokenize=True, add_generation_prompt=True) == \
        tokenizer(tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True),
                  add_special_tokens=False)["input_ids"]


def test_a_tokenizer_it_cannot_mirror_is_marked_and_not_loaded(tokenizer, tmp_path):
    """transformers' `{% generation %}` tag is not supported here: the check catches the template and
    the light copy is refused (the caller keeps transformers), instead of rendering other prompts."""
    import copy

    hf = copy.deepcopy(tokenizer)
    hf.chat_template = tokenizer.chat_template.replace(
        "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}",
        "{% generation %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
        "{% endgeneration %}")
    assert hf.chat_template != tokenizer.chat_template
    assert not save_light(hf, tmp_path)
    assert LightTokenizer.load(tmp_path) is None
    assert json.loads((tmp_path / "editllm-meta.json").read_text())["verified"] is False


def test_differences_sees_a_changed_pipeline(light, tokenizer):
    """The verification can fail: a pipeline without transformers' NFC normalizer encodes decomposed
    accents differently, and `differences` says so."""
    from tokenizers import Tokenizer

    backend = Tokenizer.from_str(light.backend_tokenizer.to_str())
    backend.normalizer = None
    assert differences(LightTokenizer(backend, light.meta), tokenizer)
    assert not differences(light, tokenizer)


def test_llguidance_matcher_is_the_same_on_either_tokenizer(light, tokenizer):
    """Copy mode's matcher builds llguidance's tokenizer from the `tokenizers` pipeline: the same masks
    from the light tokenizer as from transformers', and numpy rows pick like torch rows."""
    import torch
    from editllm.grammar.matcher import ProgramMatcher

    eos = [tokenizer.convert_tokens_to_ids("<|im_end|>")]
    ours = ProgramMatcher(light, 12, 151936, eos)
    theirs = ProgramMatcher(tokenizer, 12, 151936, eos)
    assert torch.equal(ours.mask(), theirs.mask())
    rows = np.random.default_rng(0).standard_normal(151936).astype(np.float32)
    assert ours.pick(rows) == theirs.pick(torch.from_numpy(rows.copy())) is not None
    for token in light('<copy lines="1-', add_special_tokens=False)["input_ids"]:
        ours.advance(token)
        theirs.advance(token)
        assert torch.equal(ours.mask(), theirs.mask())


@pytest.fixture(scope="module")
def warm_cache(tiny_gguf, tmp_path_factory) -> tuple[Path, LightTokenizer]:
    """An editllm cache where the tiny GGUF's tokenizer was converted (through transformers, once)."""
    import editllm.editor.models as models

    cache = tmp_path_factory.mktemp("editllm-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EDITLLM_CACHE", str(cache))
        first = models.gguf_tokenizer(tiny_gguf)
    return cache, first


def test_gguf_tokenizer_is_light_after_the_first_use(tiny_gguf, warm_cache, monkeypatch):
    import editllm.editor.models as models

    cache, first = warm_cache
    assert isinstance(first, LightTokenizer)  # the first use converted, checked and saved the light copy
    assert list(cache.glob(f"tokenizer-*/{RUNTIME}"))
    monkeypatch.setenv("EDITLLM_CACHE", str(cache))
    again = models.gguf_tokenizer(tiny_gguf)
    assert isinstance(again, LightTokenizer) and again is not first
    text = TEXTS[0] + TEXTS[8]
    assert again(text, add_special_tokens=False)["input_ids"] == first(text, add_special_tokens=False)["input_ids"]


EDIT_IN_A_FRESH_PROCESS = """
import json, sys
from editllm.cli.main import app
path, gguf = sys.argv[1], sys.argv[2]
args = ["fix", path, "Fix the bug in average.", "--model", gguf, "--engine", "llamacpp", "--max-new-tokens", "24",
        "--stats", "--quiet"]
codes = [app([*args, "--mode", mode], standalone_mode=False) or 0 for mode in ("rewrite", "spec")]
heavy = sorted(m for m in ("torch", "transformers") if m in sys.modules)
print("RESULT " + json.dumps({"codes": codes, "heavy": heavy}))
"""


def test_llamacpp_edit_imports_neither_torch_nor_transformers(tiny_gguf, warm_cache, tmp_path):
    """The whole `editllm fix` on the llama.cpp engine, rewrite and spec, in a fresh process with a warm
    cache: neither torch nor transformers is imported, and --stats says when the model was ready."""
    env = {**os.environ, "EDITLLM_CACHE": str(warm_cache[0]), "OMP_WAIT_POLICY": "PASSIVE"}
    source = Path(tmp_path / "stats.py")
    source.write_text("def average(xs):\n    return sum(xs) / (len(xs) - 1)\n")
    res = subprocess.run([sys.executable, "-c", EDIT_IN_A_FRESH_PROCESS, source.name, str(tiny_gguf)],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900)
    assert res.returncode == 0, res.stderr[-2000:]
    result = json.loads(res.stdout.strip().splitlines()[-1].removeprefix("RESULT "))
    assert result["heavy"] == []
    assert all(code in (0, 2) for code in result["codes"])  # 2: a random model may never close the file
    records = [json.loads(line) for line in res.stderr.splitlines() if line.startswith("{")]
    assert len(records) == len(result["codes"])  # one --stats record per edit, a refused one with its error
    assert ["error" in r for r in records] == [code == 2 for code in result["codes"]]
    for record in records:
        assert record["engine"] == "llamacpp"
        assert record["ready_seconds"] >= record["load_seconds"] - 0.05  # the load is part of the process's life
        assert record["peak_rss_mb"] > 10


@pytest.mark.bundled
def test_bundled_tokenizer_light_copy_matches_transformers():
    """The bundled model's cached tokenizer: the light copy gives transformers' ids and prompts."""
    from editllm.editor.modelspec import bundled_for, cache_dir
    from editllm.editor.prompt import copy_prompt, rewrite_prompt
    from transformers import AutoTokenizer

    gguf = cache_dir() / bundled_for("bundled:1.5b").gguf_name
    folders = list(cache_dir().glob(f"tokenizer-{gguf.stem}-*"))
    light = LightTokenizer.load(folders[0]) if folders else None
    if light is None:
        pytest.skip("the bundled model's light tokenizer is not cached (run `editllm fix` once)")
    hf = AutoTokenizer.from_pretrained(folders[0])
    assert not differences(light, hf)
    for text in TEXTS:
        assert light(text, add_special_tokens=False)["input_ids"] == hf(text, add_special_tokens=False)["input_ids"]
    assert rewrite_prompt(light, "a.py", TEXTS[0], "Fix it.") == rewrite_prompt(hf, "a.py", TEXTS[0], "Fix it.")
    assert copy_prompt(light, "a.py", TEXTS[0], "Fix it.") == copy_prompt(hf, "a.py", TEXTS[0], "Fix it.")
