"""The llama-server helper: built once, started on a free port, healthy, same greedy text, stopped."""

from __future__ import annotations

import os
import socket

import pytest
from editllm.editor.decode import Decoder
from editllm.editor.errors import EditError
from editllm.editor.llamacpp import LlamaCppEngine
from editllm.editor.llamaserver import LlamaServer, free_port, server_binary

IDS = [151644, 8948, 198, 2610, 525, 264, 23560, 2038, 6440, 13, 151645, 198, 151644, 872, 198] + list(
    range(1000, 1060)
)


def test_free_port_can_be_bound():
    port = free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", port))


def test_override_must_be_an_executable(monkeypatch, tmp_path):
    monkeypatch.setenv("EDITLLM_LLAMA_SERVER", str(tmp_path / "nothing"))
    with pytest.raises(EditError, match="EDITLLM_LLAMA_SERVER"):
        server_binary()


def test_server_greedy_equals_the_engine_greedy(llama_server, tiny_gguf):
    """Given editllm's token ids, the server's greedy continuation is the in-process engine's."""
    answer = llama_server.post("/completion", {"prompt": IDS, "n_predict": 24, "temperature": 0, "top_k": 1,
                                               "cache_prompt": False, "return_tokens": True})
    engine = LlamaCppEngine(tiny_gguf, n_ctx=1024, n_batch=64, threads=1)
    try:
        ours, _ = Decoder(engine).run(IDS, max_new_tokens=24)
    finally:
        engine.close()
    got = answer["tokens"]
    assert len(got) == len(ours) or answer.get("stop_type") == "eos"
    assert got == ours[: len(got)]


def test_a_bad_model_fails_with_the_log(tmp_path, capsys):
    bad = tmp_path / "not-a-model.gguf"
    bad.write_bytes(b"GGUF not really")
    with pytest.raises(EditError, match="did not become healthy"):
        LlamaServer(bad, ["-c", "512"], threads=1, startup_timeout=60).start()
    assert "llama-server" in capsys.readouterr().err  # the log's tail (its command line at least) is shown


def test_stop_ends_the_process_group(tiny_gguf):
    server = LlamaServer(tiny_gguf, ["-c", "512", "--no-warmup"], threads=1).start()
    pid = server.proc.pid
    assert server.post("/tokenize", {"content": "hello"})["tokens"]
    server.stop()
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)
