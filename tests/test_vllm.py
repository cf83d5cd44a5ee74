"""editllm through vLLM's OpenAI-compatible server.

Without a server (the normal suite): the requests the vLLM client sends (token ids, greedy with every
penalty stated, the grammar as `structured_outputs`, never `guided_grammar`), how its answers read
(`token_ids`, finish and stop reasons, speculation counts), which engine `--server URL` detects, and the copy
loop run over that client: the loop is remote.modes', shared with llama-server.

With a REAL `vllm serve` (marked `vllm`; `EDITLLM_VLLM` names a venv with vLLM, else they skip): two
tiny Qwen2 HF folders built here (head_dim 64: vLLM's CPU attention refuses 16) — a "chain" model whose
next token depends on the last one only (it finishes a rewrite with `pass)` and writes the program
`<copy lines="1-2"/>`), served plainly with the guidance backend, and a random model with its head scaled
up, served with n-gram speculation. Rewrite, spec and the copy loop through vLLM equal the local torch
engine on the same folder, token for token; programs resolve; a server with another tokenizer is refused.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from editllm.editor.errors import EditError
from editllm.editor.source import source_from_text
from editllm.grammar.program import Copy
from editllm.remote.client import ServerClient, ServerError
from editllm.remote.modes import RemoteModel, edit_remote, run_copy_loop, server_generate
from editllm.remote.session import open_client
from editllm.remote.vllm import SPEC_METRIC, VllmClient, as_llama_answer
from served_models import (
    chain,
    chat_ids,
    check_adapter_only_where_named,
    check_another_tokenizer_is_refused,
    check_bench,
    check_cli_fix,
    check_copy_loop_writes_local_copy_modes_program,
    check_request_grammar_obeyed,
    greedy,
    local_lm,
    scale_head,
    write_lora,
    write_qwen2,
)

EOS = 151645  # <|im_end|>
MODEL = "/models/tiny"

# --- vLLM's pages and answers --------------------------------------------------------------------------------


def models(*adapters: str) -> dict:
    base = {"id": MODEL, "object": "model", "owned_by": "vllm", "root": MODEL, "parent": None,
            "max_model_len": 2048}
    return {"object": "list", "data": [base] + [{"id": a, "owned_by": "vllm", "root": f"/lora/{a}",
                                                 "parent": MODEL} for a in adapters]}


def choice(tokens: list[int], finish: str = "stop", reason=None, **extra) -> dict:
    return {"choices": [{"index": 0, "text": "", "token_ids": tokens, "finish_reason": finish,
                         "stop_reason": reason}], "usage": {"prompt_tokens": 5, "completion_tokens": len(tokens)},
            **extra}


# --- requests and answers, without a server ----------------------------------------------------------------

def test_a_request_carries_token_ids_greedy_without_penalties_and_the_grammar_as_structured_outputs(fake):
    http = fake({"/v1/models": models(), "/metrics": "vllm:num_requests_running 0\n"})
    client = VllmClient("http://vllm:8000")
    body = client.body([1, 2, 3], 7, grammar="root ::= \"a\"", stop=["\n```"], ban=[9, 4])
    assert body["prompt"] == [1, 2, 3] and body["max_tokens"] == 7 and body["model"] == MODEL
    assert body["temperature"] == 0 and body["repetition_penalty"] == 1.0  # not generation_config's defaults
    assert body["presence_penalty"] == body["frequency_penalty"] == 0.0
    assert body["return_token_ids"] is True and body["stream"] is False and body["n"] == 1
    assert body["structured_outputs"] == {"grammar": 'root ::= "a"'} and "guided_grammar" not in body
    assert body["stop"] == ["\n```"] and body["logit_bias"] == {"4": -100, "9": -100}
    assert "cache_salt" not in body and "id_slot" not in body  # vLLM's prefix cache is shared: no slots
    plain = client.body([1], 1)
    assert not {"structured_outputs", "stop", "logit_bias"} & set(plain)
    salted = [client.body([1], 1, cache_prompt=False)["cache_salt"] for _ in range(2)]
    assert salted[0] != salted[1]  # no cached prefix carries a fresh salt: the prompt is read anew
    assert http.bodies("/v1/models") == [None]  # read once


def test_the_adapter_is_named_as_the_requests_model(fake):
    fake({"/v1/models": models("selector"), "/metrics": ""})
    client = VllmClient("http://vllm:8000")
    assert client.info().adapters == ("selector",) and client.info().model == MODEL
    assert client.body([1], 1, lora=1.0)["model"] == "selector"
    assert client.body([1], 1, lora=0.0)["model"] == MODEL and client.body([1], 1)["model"] == MODEL
    fake({"/v1/models": models(), "/metrics": ""})
    with pytest.raises(ServerError, match="--enable-lora --lora-modules"):
        VllmClient("http://vllm:8000").body([1], 1, lora=1.0)


@pytest.mark.parametrize("finish,reason,stop_type", [("stop", None, "eos"), ("stop", EOS, "eos"),
                                                     ("stop", "\n```", "word"), ("length", None, "limit")])
def test_answers_read_as_llama_servers(finish, reason, stop_type):
    got = as_llama_answer(choice([5, 6, EOS], finish, reason), 120.0)
    assert got["tokens"] == [5, 6, EOS] and got["stop_type"] == stop_type
    assert got["timings"]["predicted_n"] == 3 and got["timings"]["predicted_ms"] == 120.0


def test_speculation_counts_and_the_cached_prefix_are_read_from_the_answer():
    spec = {"num_draft_tokens": 12, "num_accepted_draft_tokens": 5, "acceptance_histogram": [1, 1, 0, 1, 0]}
    answer = choice([1, 2], metrics={"time_to_first_token_ms": 30.0, "speculative_decoding": spec})
    answer["usage"]["prompt_tokens_details"] = {"cached_tokens": 64}
    t = as_llama_answer(answer, 100.0)["timings"]
    assert (t["draft_n"], t["draft_n_accepted"], t["cache_n"]) == (12, 5, 64)
    assert (t["prompt_ms"], t["predicted_ms"]) == (30.0, 70.0)
    only_histogram = choice([1], metrics={"speculative_decoding": {"acceptance_histogram": [1, 1, 0, 1, 0]}})
    t = as_llama_answer(only_histogram, 1.0)["timings"]
    assert (t["draft_n"], t["draft_n_accepted"]) == (12, 4)  # 3 steps of 4 drafted; 0 + 1 + 3 accepted


def test_an_aborted_request_is_transient_and_an_answer_without_ids_is_not():
    with pytest.raises(ServerError) as aborted:
        as_llama_answer(choice([], "abort"), 1.0)
    assert aborted.value.transient
    with pytest.raises(ServerError, match="return_token_ids") as old:
        as_llama_answer({"choices": [{"text": "x", "finish_reason": "stop"}]}, 1.0)
    assert not old.value.transient


def test_which_engine_answers_is_asked_of_the_server(fake):
    fake({"/props": {"default_generation_settings": {"n_ctx": 512}, "total_slots": 2}})
    assert type(open_client("http://llama:8080")) is ServerClient
    http = fake({"/v1/models": models()})
    assert type(open_client("http://vllm:8000")) is VllmClient
    assert [p for p, _ in http.sent] == ["/props", "/v1/models"]
    fake({"/v1/models": {"data": [{"id": "m", "owned_by": "someone"}]}})
    with pytest.raises(ServerError, match="neither a llama-server") as neither:
        open_client("http://other:1")
    assert not neither.value.transient
    fake({"/props": 503})  # loading or down: the many-files runner retries, no guess is made
    with pytest.raises(ServerError) as busy:
        open_client("http://llama:8080")
    assert busy.value.transient
    http = fake({})
    assert type(open_client("http://vllm:8000", kind="vllm")) is VllmClient and http.sent == []
    with pytest.raises(ServerError, match="unknown server kind"):
        open_client("http://vllm:8000", kind="tgi")


def test_speculation_is_read_from_the_metrics_page(fake):
    fake({"/v1/models": models(), "/metrics": f"# TYPE {SPEC_METRIC}_total counter\n{SPEC_METRIC}_total 0.0\n"})
    assert VllmClient("http://vllm:8000").info().speculative == "vllm speculative decoding"
    fake({"/v1/models": models(), "/metrics": 404})
    assert VllmClient("http://vllm:8000").info().speculative is None


def test_a_vllm_model_bans_nothing_and_names_its_engine(fake, tokenizer, tmp_path):
    """llama-server ends on more tokens than the tokenizer names (so its requests ban them); vLLM ends on the
    model's EOS ids alone, so nothing is banned even where a GGUF of the model is on this machine."""
    fake({"/v1/models": models(), "/metrics": ""})
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    lm = RemoteModel(VllmClient("http://vllm:8000"), tokenizer, "m", gguf=gguf)
    assert lm.engine_name == "vllm" and lm.banned == frozenset() and lm.context_length == 2048


def test_the_copy_loop_runs_over_the_vllm_client(fake, tokenizer):
    """The loop is remote.modes', shared with llama-server: each request carries the program so far and the
    copied lines' ids, and its grammar as `structured_outputs`; answers end with the EOS vLLM returns."""
    from editllm.remote.copyloop import copy_parts

    ids = lambda s: tokenizer(s, add_special_tokens=False)["input_ids"]  # noqa: E731
    script = [choice(ids('<copy lines="1-2"/>') + [EOS]), choice(ids('<gen>C = 3\n</gen><copy lines="4-4"/>')
                                                                 + [EOS]), choice([EOS])]
    http = fake({"/v1/models": models(), "/metrics": ""}, script)
    lm = RemoteModel(VllmClient("http://vllm:8000"), tokenizer, "m")
    src = source_from_text(b"a = 1\nb = 2\nc = 3\nd = 4\n", "m.py")
    prompt, resolver, stats = copy_parts(lm, src.path, src.text, src.lines, "Capitalise c.")
    assert run_copy_loop(lm, prompt, resolver, stats, 200) == "a = 1\nb = 2\nC = 3\nd = 4\n"
    sent = http.bodies("/v1/completions")
    assert sent[1]["prompt"] == prompt + ids('<copy lines="1-2"/>') + resolver.tokens(Copy(1, 2))
    grammars = [b["structured_outputs"]["grammar"] for b in sent]
    assert '"1-"' in grammars[0] and '"2-"' not in grammars[1] and '"3-"' in grammars[1]
    assert stats.spans == 2 and stats.requests == 3 and stats.program.endswith('<copy lines="4-4"/>')
    assert all(b["temperature"] == 0 and "guided_grammar" not in b for b in sent)


def test_a_stop_word_continues_on_vllm_as_on_llama_server(fake, tokenizer):
    """vLLM's stop string ends the text but `token_ids` keep the token that completed it; the client goes on
    from everything written, as it does on llama-server."""
    ids = lambda s: tokenizer(s, add_special_tokens=False)["input_ids"]  # noqa: E731
    script = [choice(ids("x = 1\n```"), "stop", "\n```"), choice(ids("py\ny = 2\n") + [EOS])]
    http = fake({"/v1/models": models(), "/metrics": ""}, script)
    lm = RemoteModel(VllmClient("http://vllm:8000"), tokenizer, "m")
    out, stats = server_generate("rewrite")(lm, [1, 2], 50, None)
    assert tokenizer.decode(out) == "x = 1\n```py\ny = 2\n" and stats.stop_reason == "eos"
    sent = http.bodies("/v1/completions")
    assert sent[1]["prompt"] == [1, 2] + ids("x = 1\n```") and sent[1]["max_tokens"] == 50 - len(ids("x = 1\n```"))


# --- real vLLM servers ---------------------------------------------------------------------------------------

BASE_ARGS = ["--dtype", "float32", "--max-model-len", "2048", "--block-size", "32", "--enforce-eager",
             "--structured-outputs-config", '{"backend":"guidance"}']
SPEC_ARGS = ["--speculative-config", '{"method":"ngram","num_speculative_tokens":4,"prompt_lookup_max":4}',
             "--per-request-spec-decode-metrics", "summary"]


@pytest.fixture(scope="module")
def vllm_python():
    """vLLM's interpreter: the tests skip where EDITLLM_VLLM is unset, and fail where it names a venv whose
    vLLM does not import (`make test` sets it: a broken install must not pass as a skip)."""
    from editllm.remote.vllmserver import ENV
    from editllm.remote.vllmserver import vllm_python as find

    if not os.environ.get(ENV):
        pytest.skip(f"{ENV} is not set (a venv with vLLM: `make test` builds one)")
    try:
        return find()
    except EditError as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="module")
def chain_dir(vllm_python, tokenizer_dir, tmp_path_factory) -> Path:
    return write_qwen2(tokenizer_dir, tmp_path_factory.mktemp("vllm-chain"), chain)


@pytest.fixture(scope="module")
def random_dir(vllm_python, tokenizer_dir, tmp_path_factory) -> Path:
    return write_qwen2(tokenizer_dir, tmp_path_factory.mktemp("vllm-random"), scale_head)


@pytest.fixture(scope="module")
def chain_server(chain_dir, vllm_python):
    from editllm.remote.vllmserver import VllmServer

    with VllmServer(chain_dir, BASE_ARGS, python=vllm_python) as server:
        yield server


@pytest.fixture(scope="module")
def lora_dir(random_dir, tmp_path_factory) -> Path:
    return write_lora(random_dir, tmp_path_factory.mktemp("vllm-lora"))


@pytest.fixture(scope="module")
def spec_server(random_dir, lora_dir, vllm_python):
    """The random model with n-gram speculation and the LoRA as a per-request adapter named `selector`."""
    from editllm.remote.vllmserver import VllmServer

    lora = ["--enable-lora", "--max-lora-rank", "8", "--lora-modules", f"selector={lora_dir}"]
    with VllmServer(random_dir, [*BASE_ARGS, *SPEC_ARGS, *lora], python=vllm_python) as server:
        yield server


@pytest.mark.vllm
def test_vllm_is_detected_and_rewrite_through_it_equals_the_local_engine(chain_server, chain_dir):
    """`--server URL` finds vLLM by itself; rewrite and spec (a plain server: spec runs as its greedy
    decoding) write the local torch engine's file on the same HF folder, a valid diff, and the tokens are
    vLLM's own greedy continuation of the prompt (one plain request, no stop words)."""
    from editllm.editor.edit import EditOptions, edit_file
    from editllm.remote.session import connect

    served = connect(chain_server.url, str(chain_dir))
    assert isinstance(served.client, VllmClient) and served.engine_name == "vllm"
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
    sent = []
    real = served.client.complete
    served.client.complete = lambda ids, n, **kw: sent.append(list(ids)) or real(ids, n, **kw)
    edit_remote(served, src, "Simplify.", EditOptions(mode="rewrite", allow_deletions=True))
    own = served.client.request("/v1/completions", {"model": served.info.model, "prompt": sent[0], "max_tokens": 3,
                                                     "temperature": 0, "return_token_ids": True})
    assert served.tokenizer.decode(own["choices"][0]["token_ids"]) == "pass)\n```"


@pytest.mark.vllm
def test_the_copy_loop_through_vllm_writes_local_copy_modes_program(chain_server, chain_dir):
    check_copy_loop_writes_local_copy_modes_program(chain_server.url, chain_dir)


@pytest.mark.vllm
def test_cli_fix_through_vllm(chain_server, chain_dir, tmp_path, monkeypatch):
    check_cli_fix(chain_server.url, chain_dir, "vllm", tmp_path, monkeypatch)


@pytest.mark.vllm
def test_bench_through_vllm_records_what_it_ran(chain_server, chain_dir, tmp_path):
    records = check_bench(chain_server.url, chain_dir, "vllm", tmp_path, "rewrite,spec")
    assert records["spec"]["exact_match"]


@pytest.mark.vllm
def test_a_vllm_server_with_another_tokenizer_is_refused(chain_server):
    check_another_tokenizer_is_refused(VllmClient(chain_server.url))


@pytest.mark.vllm
def test_spec_through_vllms_ngram_speculation_equals_local_greedy_and_says_so(spec_server, random_dir):
    """A random model's 96 greedy tokens through a server with n-gram speculation: the local torch engine's
    greedy tokens, token for token (speculation is lossless), and the stats say which speculation ran."""
    from editllm.remote.session import connect

    served, local = connect(spec_server.url, str(random_dir)), local_lm(random_dir)
    assert served.info.speculative == "vllm speculative decoding"
    ids = chat_ids(served.tokenizer, "Repeat:\ndef f(x):\n    return x + 1\n\n\ndef g(x):\n    return x + 1\n")
    out, stats = server_generate("spec")(served, ids, 96, None)
    ref = greedy(local.model, ids, 96)
    cut = next((k for k, t in enumerate(ref) if t in served.engine.eos), len(ref))
    assert out == ref[:cut] and stats.speculative == "vllm speculative decoding"
    assert stats.copy_attempts > 0  # drafted tokens, from the per-request speculation counts


@pytest.mark.vllm
@pytest.mark.parametrize("after", [0, 3, 9])
def test_what_vllm_writes_under_a_request_grammar_obeys_it(spec_server, random_dir, after):
    """The copy loop's GBNF as `structured_outputs.grammar` to the guidance backend, with speculation on."""
    check_request_grammar_obeyed(VllmClient(spec_server.url), random_dir, after)


@pytest.mark.vllm
def test_the_adapter_runs_only_on_requests_that_name_it(spec_server, random_dir, lora_dir):
    """`--enable-lora --lora-modules selector=DIR`: the adapter is the request's model (speculation on)."""
    check_adapter_only_where_named(spec_server.url, random_dir, lora_dir)
