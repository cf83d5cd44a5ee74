"""A server that misbehaves is a one-line `ServerError`, never an internal error, and says whether a retry may
help (`transient`, which the many-files runner retries): an answer cut mid-body, a garbled status line or a
body that is not JSON (a proxy's page, a restarting server) are transient; JSON of another shape than the
engine's API (another kind of server) is not. Connecting is bounded by the caller's timeout.

Without a model: `FakeHttp` (the `fake` fixture) answers the client's requests, and a tiny `http.server` in a
thread sends what a table cannot (a connection closed mid-answer, a server that never answers)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from editllm.editor.errors import EditError
from editllm.remote.client import ServerClient, ServerError
from editllm.remote.session import connect, open_client
from editllm.remote.vllm import VllmClient

URL = "http://fake:8080"


def probe_ids(text: str, add_special_tokens: bool = False) -> dict:
    """A tokenizer stand-in: `check_tokenizer` must fail on the server's answer before comparing ids."""
    return {"input_ids": [1, 2, 3]}


class Every(dict):
    """FakeHttp's pages where every path answers the same JSON."""

    def __init__(self, answer: object) -> None:
        super().__init__()
        self.answer = answer

    def get(self, path, default=None):
        return self.answer


def failure(call) -> ServerError:
    """The `ServerError` a call raises, checked to be one line (what the user reads)."""
    with pytest.raises(ServerError) as caught:
        call()
    message = str(caught.value)
    assert isinstance(caught.value, EditError) and "\n" not in message and "internal" not in message
    return caught.value


class Misbehaving(BaseHTTPRequestHandler):
    """`/cut`: Content-Length 1000, 16 bytes, then the connection closes; `/garbled`: no HTTP status line;
    `/garbage`: 200 with a body that is not JSON; `/hang`: never answers (until the test ends)."""

    protocol_version = "HTTP/1.1"
    release = threading.Event()

    def log_message(self, *args) -> None:
        pass

    def answer(self) -> None:
        if self.command == "POST":
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path.startswith("/hang"):
            self.release.wait(30)
            return
        if self.path == "/garbled":
            self.wfile.write(b"HELLO THERE\r\n\r\n")
        elif self.path == "/cut":
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b'{"tokens": [1, 2')
            self.wfile.flush()
        else:
            self.send_response(200)
            self.send_header("Content-Length", "9")
            self.end_headers()
            self.wfile.write(b"{not json")
            return
        self.wfile.flush()
        self.connection.shutdown(socket.SHUT_RDWR)
        self.close_connection = True

    do_GET = do_POST = answer


@pytest.fixture
def misbehaving() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Misbehaving)
    server.daemon_threads, server.block_on_close = True, False
    Misbehaving.release.clear()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    Misbehaving.release.set()
    server.shutdown()
    server.server_close()


# 1. a connection that breaks mid-answer ---------------------------------------------------------------------

def test_an_answer_cut_mid_body_is_transient(misbehaving):
    client = ServerClient(misbehaving, timeout=10)
    cut = failure(lambda: client.request("/cut", {"prompt": [1]}))
    assert cut.transient and "IncompleteRead" in str(cut)
    garbled = failure(lambda: client.request("/garbled"))
    assert garbled.transient and "BadStatusLine" in str(garbled)


# 2. JSON of another shape than the engine's API --------------------------------------------------------------

def test_a_server_answering_a_list_everywhere_is_refused_in_one_line(fake):
    fake(Every([]))
    detected = failure(lambda: open_client(URL))
    assert not detected.transient and "neither a llama-server" in str(detected)
    assert "/props answered a list" in str(detected) and "/v1/models answered a list" in str(detected)
    for client in (ServerClient(URL), VllmClient(URL)):
        assert not failure(client.info).transient
        assert "answered a list" in str(failure(partial(client.check_tokenizer, probe_ids)))
    assert "/completion answered a list" in str(failure(lambda: ServerClient(URL).complete([1], 4)))


def test_a_page_at_props_does_not_stop_the_engine_probe(fake):
    """A proxy or another server answering `/props` with a page (HTML, 200) is not a llama-server: `/v1/models`
    is still asked; only where no probe answers JSON does the error stay transient (a proxy's error page)."""
    page = "<!doctype html><title>Gateway</title>"
    fake({"/props": page, "/v1/models": {"data": [{"id": "m", "owned_by": "vllm"}]}})
    assert type(open_client(URL)) is VllmClient
    fake({"/props": page, "/v1/models": page})
    assert failure(lambda: open_client(URL)).transient
    fake({"/props": 404, "/v1/models": page})
    assert "not a JSON answer" in str(failure(lambda: open_client(URL)))


def test_a_context_length_of_another_shape_is_refused_in_one_line(fake):
    from editllm.remote.sglang import SglangClient

    fake({"/v1/models": {"data": [{"id": "m", "owned_by": "sglang"}]}, "/server_info": {"context_length": "lots"}})
    assert "/server_info context_length is a string, not a number" in str(failure(SglangClient(URL).info))
    fake({"/v1/models": {"data": [{"id": "m", "owned_by": "vllm", "max_model_len": [4096]}]}})
    assert "max_model_len is a list, not a number" in str(failure(VllmClient(URL).info))
    fake({"/v1/models": {"data": [{"id": "m", "owned_by": "sglang"}]}, "/server_info": {"context_length": "4096"}})
    assert SglangClient(URL).info().n_ctx == 4096


def test_a_vllm_card_without_an_id_and_no_tokens_are_refused(fake):
    fake(Every({"data": [{"owned_by": "vllm"}]}))
    client = open_client(URL)
    assert type(client) is VllmClient  # detection needs only the owner
    tokens = failure(lambda: client.check_tokenizer(probe_ids))
    assert not tokens.transient and "/tokenize answered an object with data, not token ids" in str(tokens)
    assert "/v1/models: data is a list" in str(failure(client.info))


def test_a_llama_server_answering_no_tokens_is_refused(fake):
    fake(Every({"default_generation_settings": {}}))
    client = open_client(URL)
    assert type(client) is ServerClient
    assert "/tokenize answered an object with default_generation_settings" in str(
        failure(lambda: client.check_tokenizer(probe_ids)))
    assert "/completion answered" in str(failure(lambda: client.complete([1], 4)))
    assert client.info().n_ctx == 0  # empty settings are a llama-server's defaults, not a fault
    fake(Every({"default_generation_settings": {"n_ctx": "lots"}}))
    assert "n_ctx is not a number" in str(failure(ServerClient(URL).info))
    fake(Every({"default_generation_settings": []}))
    assert "default_generation_settings is a list" in str(failure(ServerClient(URL).info))


def test_slots_are_still_read_as_a_list(fake):
    fake({"/props": {"default_generation_settings": {"n_ctx": 512, "params": {}}, "total_slots": 2},
          "/slots": [{"speculative": True, "params": {"speculative.types": "ngram-simple"}}]})
    info = ServerClient(URL).info()
    assert (info.slots, info.n_ctx, info.speculative) == (2, 512, "ngram-simple")
    fake({"/props": {"default_generation_settings": {"n_ctx": 512}}, "/slots": ["odd"]})
    assert ServerClient(URL).info().speculative is None


# 3. connecting is bounded by the caller's timeout ----------------------------------------------------------

def test_connect_is_bounded_by_its_timeout(misbehaving):
    hang = misbehaving + "/hang"  # every path under it never answers
    for attempt in (lambda: open_client(hang, timeout=0.5), lambda: connect(hang, "no-model-needed", timeout=0.5)):
        start = time.monotonic()
        assert failure(attempt).transient
        assert time.monotonic() - start < 5
    assert open_client(hang, kind="llama-server", timeout=0.5).timeout == 0.5


# 4. a body that is not JSON is transient, as a 5xx is ------------------------------------------------------

@pytest.mark.parametrize("body", ["{not json", '{"tokens": [1, 2', "<html>502 Bad Gateway</html>", ""])
def test_a_completion_that_is_not_json_is_transient(fake, body):
    fake({"/completion": body})
    garbage = failure(lambda: ServerClient(URL).complete([1], 4))
    assert garbage.transient and "not a JSON answer" in str(garbage)


def test_a_real_garbage_body_is_transient(misbehaving):
    assert failure(lambda: ServerClient(misbehaving, timeout=10).request("/garbage", {})).transient
