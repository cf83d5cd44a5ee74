"""editllm through an SGLang server.

Without a server (the normal suite): the requests the SGLang client sends (`input_ids`, greedy with every
penalty stated, the grammar as `sampling_params.ebnf`, the adapter as `lora_path`), how its answers read
(`output_ids`, finish reasons, cached and speculated counts), which engine `--server URL` detects, and the copy
loop run over that client: the loop is remote.modes', shared with llama-server and vLLM.

With a REAL SGLang server (marked `sglang`; `EDITLLM_SGLANG` names a venv with SGLang, else they skip): the
tiny Qwen2 HF folders test_vllm builds, served on the CPU: rewrite and the copy loop through SGLang equal the
local torch engine on the same folder, token for token; programs resolve; grammars are obeyed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from editllm.editor.errors import EditError
from editllm.editor.source import source_from_text
from editllm.grammar.program import Copy
from editllm.remote.client import ServerError
from editllm.remote.modes import RemoteModel, edit_remote, run_copy_loop, server_generate
from editllm.remote.session import open_client
from editllm.remote.sglang import SglangClient, as_llama_answer
from served_models import (
    chain,
    chat_ids,
    check_another_tokenizer_is_refused,
    check_bench,
    check_cli_fix,
    check_copy_loop_writes_local_copy_modes_program,
    check_request_grammar_obeyed,
    greedy,
    local_lm,
    scale_head,
    write_qwen2,
)

EOS = 151645  # <|im_end|>
MODEL = "/models/tiny"


def models(*adapters: str) -> dict:
    base = {"id": MODEL, "object": "model", "owned_by": "sglang", "root": MODEL, "parent": None,
            "max_model_len": 2048}
    return {"object": "list", "data": [base] + [{"id": a, "owned_by": "sglang", "root": f"/lora/{a}",
                                                 "parent": MODEL} for a in adapters]}


def server_info(**extra) -> dict:
    return {"model_path": MODEL, "speculative_algorithm": None, "context_length": None, "version": "0.5.23",
            **extra}


PAGES = {"/v1/models": models(), "/server_info": server_info()}


def generated(tokens: list[int], finish: dict | None = None, **meta) -> dict:
    finish = finish if finish is not None else {"type": "stop", "matched": EOS}
    return {"text": "", "output_ids": tokens,
            "meta_info": {"finish_reason": finish, "prompt_tokens": 5, "completion_tokens": len(tokens),
                          "cached_tokens": 0, "e2e_latency": 0.1, **meta}}


# --- requests and answers, without a server ----------------------------------------------------------------

def test_a_request_carries_token_ids_greedy_without_penalties_and_the_grammar_as_ebnf(fake):
    http = fake(PAGES)
    client = SglangClient("http://sglang:30000")
    body = client.body([1, 2, 3], 7, grammar='root ::= "a"', stop=["\n```"], ban=[9, 4])
    params = body["sampling_params"]
    assert body["input_ids"] == [1, 2, 3] and body["stream"] is False and "text" not in body
    assert params["max_new_tokens"] == 7 and params["temperature"] == 0
    assert params["repetition_penalty"] == 1.0 and params["presence_penalty"] == params["frequency_penalty"] == 0
    assert params["no_stop_trim"] is True and params["skip_special_tokens"] is False
    assert params["ebnf"] == 'root ::= "a"' and params["stop"] == ["\n```"]
    assert params["logit_bias"] == {"4": -100, "9": -100}
    assert "lora_path" not in body and "cache_salt" not in body
    plain = client.body([1], 1)["sampling_params"]
    assert not {"ebnf", "stop", "logit_bias"} & set(plain)
    salted = [client.body([1], 1, cache_prompt=False)["cache_salt"] for _ in range(2)]
    assert salted[0] != salted[1]  # no cached prefix carries a fresh salt: the prompt is read anew
    assert http.sent == []  # nothing asked of the server to build a request without the adapter


def test_the_adapter_is_named_as_the_requests_lora_path(fake):
    fake({**PAGES, "/v1/models": models("selector")})
    client = SglangClient("http://sglang:30000")
    assert client.info().adapters == ("selector",) and client.info().model == MODEL
    assert client.body([1], 1, lora=1.0)["lora_path"] == "selector"
    assert "lora_path" not in client.body([1], 1, lora=0.0)
    fake(PAGES)
    with pytest.raises(ServerError, match="--enable-lora --lora-paths"):
        SglangClient("http://sglang:30000").body([1], 1, lora=1.0)


@pytest.mark.parametrize("finish,stop_type", [({"type": "stop", "matched": EOS}, "eos"),
                                              ({"type": "stop", "matched": "\n```"}, "word"),
                                              ({"type": "length", "length": 3}, "limit")])
def test_answers_read_as_llama_servers(finish, stop_type):
    got = as_llama_answer(generated([5, 6, EOS], finish, cached_tokens=64), 120.0)
    assert got["tokens"] == [5, 6, EOS] and got["stop_type"] == stop_type
    t = got["timings"]
    assert (t["predicted_n"], t["predicted_ms"], t["prompt_n"], t["cache_n"]) == (3, 120.0, 5, 64)
    assert "draft_n" not in t


def test_speculation_counts_are_read_from_the_answer():
    t = as_llama_answer(generated([1, 2], spec_num_proposed_drafts=12, spec_num_correct_drafts=5), 1.0)["timings"]
    assert (t["draft_n"], t["draft_n_accepted"]) == (12, 5)


def test_an_aborted_request_says_why_and_whether_to_retry():
    with pytest.raises(ServerError, match="abort.*grammar") as refused:
        as_llama_answer(generated([], {"type": "abort", "message": "invalid grammar", "status_code": 400}), 1.0)
    assert not refused.value.transient
    with pytest.raises(ServerError) as dropped:
        as_llama_answer(generated([], {"type": "abort", "message": "Aborted"}), 1.0)
    assert dropped.value.transient
    with pytest.raises(ServerError, match="no output_ids") as old:
        as_llama_answer({"text": "x", "meta_info": {}}, 1.0)
    assert not old.value.transient
    assert as_llama_answer([generated([7])], 1.0)["tokens"] == [7]  # a batch of one


def test_sglang_is_detected_and_its_settings_read(fake):
    http = fake(PAGES)
    assert type(open_client("http://sglang:30000")) is SglangClient
    assert [p for p, _ in http.sent] == ["/props", "/v1/models"]
    info = SglangClient("http://sglang:30000").info()
    assert (info.kind, info.model, info.n_ctx, info.speculative, info.model_path) == ("sglang", MODEL, 2048, None,
                                                                                      MODEL)
    fake({"/v1/models": models(), "/get_server_info": server_info(speculative_algorithm="NGRAM")})
    assert SglangClient("http://sglang:30000").info().speculative == "sglang NGRAM"  # SGLang before /server_info
    http = fake({})
    assert type(open_client("http://sglang:30000", kind="sglang")) is SglangClient and http.sent == []


def test_an_sglang_model_bans_nothing_and_names_its_engine(fake, tokenizer, tmp_path):
    fake(PAGES)
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    lm = RemoteModel(SglangClient("http://sglang:30000"), tokenizer, "m", gguf=gguf)
    assert lm.engine_name == "sglang" and lm.banned == frozenset() and lm.context_length == 2048


def test_the_copy_loop_runs_over_the_sglang_client(fake, tokenizer):
    """Each request carries the program so far and the copied lines' ids, and its grammar as `ebnf`; answers
    keep the end token (`no_stop_trim`)."""
    from editllm.remote.copyloop import copy_parts

    ids = lambda s: tokenizer(s, add_special_tokens=False)["input_ids"]  # noqa: E731
    script = [generated(ids('<copy lines="1-2"/>') + [EOS]), generated(ids('<gen>C = 3\n</gen><copy lines="4-4"/>')
                                                                     + [EOS]), generated([EOS])]
    http = fake(PAGES, script)
    lm = RemoteModel(SglangClient("http://sglang:30000"), tokenizer, "m")
    src = source_from_text(b"a = 1\nb = 2\nc = 3\nd = 4\n", "m.py")
    prompt, resolver, stats = copy_parts(lm, src.path, src.text, src.lines, "Capitalise c.")
    assert run_copy_loop(lm, prompt, resolver, stats, 200) == "a = 1\nb = 2\nC = 3\nd = 4\n"
    sent = http.bodies("/generate")
    assert sent[1]["input_ids"] == prompt + ids('<copy lines="1-2"/>') + resolver.tokens(Copy(1, 2))
    grammars = [b["sampling_params"]["ebnf"] for b in sent]
    assert '"1-"' in grammars[0] and '"2-"' not in grammars[1] and '"3-"' in grammars[1]
    assert stats.spans == 2 and stats.requests == 3 and stats.program.endswith('<copy lines="4-4"/>')


def test_a_stop_word_continues_on_sglang_as_on_llama_server(fake, tokenizer):
    ids = lambda s: tokenizer(s, add_special_tokens=False)["input_ids"]  # noqa: E731
    script = [generated(ids("x = 1\n```"), {"type": "stop", "matched": "\n```"}), generated(ids("py\ny = 2\n") + [EOS])]
    http = fake(PAGES, script)
    lm = RemoteModel(SglangClient("http://sglang:30000"), tokenizer, "m")
    out, stats = server_generate("rewrite")(lm, [1, 2], 50, None)
    assert tokenizer.decode(out) == "x = 1\n```py\ny = 2\n" and stats.stop_reason == "eos"
    sent = http.bodies("/generate")
    assert sent[1]["input_ids"] == [1, 2] + ids("x = 1\n```")
    assert sent[1]["sampling_params"]["max_new_tokens"] == 50 - len(ids("x = 1\n```"))


def test_a_server_whose_child_died_is_not_waited_out(tmp_path):
    """SGLang's scheduler dies in a child process and the server may live on unhealthy: its log line ends the
    wait (a `--enable-lora` on a CPU waited out the 600 s start-up limit before)."""
    import time

    from editllm.remote.sglangserver import FAILED, SglangServer

    class Dying(SglangServer):
        def command(self) -> list[str]:
            return ["bash", "-c", f"echo '{FAILED}. It usually means the child failed.'; sleep 120"]

    began = time.monotonic()
    with pytest.raises(EditError, match="did not become healthy"):
        Dying(tmp_path, startup_timeout=120).start()
    assert time.monotonic() - began < 60


# --- a real SGLang server ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sglang_python():
    """SGLang's interpreter: the tests skip where EDITLLM_SGLANG is unset, and fail where it names a venv
    whose SGLang does not import (a broken install must not pass as a skip)."""
    from editllm.remote.sglangserver import ENV
    from editllm.remote.sglangserver import sglang_python as find

    if not os.environ.get(ENV):
        pytest.skip(f"{ENV} is not set (a venv with SGLang: see the README)")
    try:
        return find()
    except EditError as exc:
        pytest.fail(str(exc))


# dtype float32 (the local torch engine's), 2k context, a small KV pool; CPU flags come from SglangServer
BASE_ARGS = ["--dtype", "float32", "--context-length", "2048", "--max-total-tokens", "8192", "--skip-server-warmup"]


@pytest.fixture(scope="module")
def chain_dir(sglang_python, tokenizer_dir, tmp_path_factory) -> Path:
    return write_qwen2(tokenizer_dir, tmp_path_factory.mktemp("sglang-chain"), chain)


@pytest.fixture(scope="module")
def random_dir(sglang_python, tokenizer_dir, tmp_path_factory) -> Path:
    return write_qwen2(tokenizer_dir, tmp_path_factory.mktemp("sglang-random"), scale_head)


@pytest.fixture(scope="module")
def chain_server(chain_dir, sglang_python):
    from editllm.remote.sglangserver import SglangServer

    with SglangServer(chain_dir, BASE_ARGS, python=sglang_python) as server:
        yield server


@pytest.fixture(scope="module")
def random_server(random_dir, sglang_python):
    """The random model. No adapter: SGLang 0.5.23's LoRA layers pin host memory, which needs an accelerator
    (`--enable-lora` on a CPU: "pin_memory=True requires a CUDA or other accelerator backend"); the adapter's
    request (`lora_path`) is checked without a server above."""
    from editllm.remote.sglangserver import SglangServer

    with SglangServer(random_dir, BASE_ARGS, python=sglang_python) as server:
        yield server


@pytest.mark.sglang
def test_sglang_is_detected_and_rewrite_through_it_equals_the_local_engine(chain_server, chain_dir):
    """`--server URL` finds SGLang by itself; rewrite and spec (no speculation on a CPU: spec runs as its greedy
    decoding, and says so) write the local torch engine's file on the same HF folder."""
    from editllm.editor.edit import EditOptions, edit_file
    from editllm.remote.session import connect

    served = connect(chain_server.url, str(chain_dir))
    assert isinstance(served.client, SglangClient) and served.engine_name == "sglang"
    assert served.info.speculative is None and served.context_length == 2048
    local = local_lm(chain_dir)
    src = source_from_text(b"value = 1\nother = 2\n", "settings.cfg")
    for mode in ("rewrite", "spec"):
        opts = EditOptions(mode=mode, allow_deletions=True)
        ours, theirs = edit_file(local, src, "Simplify.", opts), edit_remote(served, src, "Simplify.", opts)
        assert theirs.new_text == ours.new_text == "pass)\n" and theirs.raw_output == ours.raw_output
        # the server stops at its stop word "\n```"; whether that line is a fence is the next token (here EOS),
        # which a second request writes
        assert theirs.stats.output_tokens == ours.stats.output_tokens == 3 and theirs.stats.requests == 2


@pytest.mark.sglang
def test_the_copy_loop_through_sglang_writes_local_copy_modes_program(chain_server, chain_dir):
    check_copy_loop_writes_local_copy_modes_program(chain_server.url, chain_dir)


@pytest.mark.sglang
def test_cli_fix_through_sglang(chain_server, chain_dir, tmp_path, monkeypatch):
    check_cli_fix(chain_server.url, chain_dir, "sglang", tmp_path, monkeypatch)


@pytest.mark.sglang
def test_bench_through_sglang_records_what_it_ran(chain_server, chain_dir, tmp_path):
    """rewrite, spec and copy (the copy loop, or spec after a fallback) through SGLang, without an error."""
    check_bench(chain_server.url, chain_dir, "sglang", tmp_path, "rewrite,spec,copy")


@pytest.mark.sglang
def test_an_sglang_server_with_another_tokenizer_is_refused(chain_server):
    check_another_tokenizer_is_refused(SglangClient(chain_server.url))


@pytest.mark.sglang
def test_greedy_through_sglang_equals_local_greedy_and_its_cache_serves_continuations(random_server, random_dir):
    """A random model's 64 greedy tokens through SGLang: the local torch engine's, token for token; a
    continuation of the same ids finds them in the radix cache."""
    from editllm.remote.session import connect

    served, local = connect(random_server.url, str(random_dir)), local_lm(random_dir)
    ids = chat_ids(served.tokenizer, "Repeat:\ndef f(x):\n    return x + 1\n\n\ndef g(x):\n    return x + 1\n")
    out, stats = server_generate("rewrite")(served, ids, 64, None)
    ref = greedy(local.model, ids, 64)
    cut = next((k for k, t in enumerate(ref) if t in served.engine.eos), len(ref))
    assert out == ref[:cut]
    again = served.client.complete(ids + out[:8], 4)
    assert again["timings"]["cache_n"] >= len(ids)
    fresh = served.client.complete(ids + out[:8], 4, cache_prompt=False)
    assert fresh["timings"]["cache_n"] == 0 and fresh["tokens"] == again["tokens"]


@pytest.mark.sglang
@pytest.mark.parametrize("after", [0, 3, 9])
def test_what_sglang_writes_under_a_request_grammar_obeys_it(random_server, random_dir, after):
    """The copy loop's GBNF as `ebnf` to the llguidance backend."""
    check_request_grammar_obeyed(SglangClient(random_server.url), random_dir, after)
