"""The bench's peers: llama.cpp's own decoders, fed editllm's exact prompt token ids.

Why: issue 21 asks whether editllm beats what a llama.cpp user already has, one flag away: llama-server's
greedy decoding, its n-gram speculation, a whole-file rewrite through it, and llama-cpp-python's
high-level greedy loop. Each peer is a decoding loop plugged into `EditOptions.generate`, so the prompt,
focus, stop point and merge are exactly ours and only the decoding differs: a peer's output ids are cut
where our own `stop` callable would have stopped plain decoding.

No prompt cache is carried between requests (`cache_prompt: false`), or a repeated case would read no
prompt. One server process per flavour, started on first use and stopped by `Peers.close()`.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from editllm.editor.decode import DecodeStats
from editllm.editor.errors import EditError

Stop = Callable[[list[int]], bool]
# Every fence our prompts close a file with is a line of 3+ backticks or tildes: the server stops at the first
# line that starts like one (necessary for our stop, not sufficient), and `cut` finds our exact stop point.
STOP_STRINGS = ["\n```", "\n~~~"]
BASE_FLAGS = ("-c", "8192", "-np", "1")  # one slot with a context as large as the engine's
# The n-gram flavour's default: the fastest of issue 21's three candidates in its own table (65.6 s, same text
# 4/4). Not yet re-tuned on generated bug fixes here (`--ngram-flags` tries the others).
NGRAM_FLAGS = ("--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "4", "--spec-ngram-simple-size-m", "32")
PLD_TOKENS = 10  # hf-pld's prompt lookup length: transformers' documented example, the CPU runs' setting
SERVER_MODES = ("server", "server-ngram", "server-ngram-whole")
PEER_MODES = (*SERVER_MODES, "llamacpp-greedy")


def complete(url_post: Callable[[str, dict], dict], ids: list[int], n_predict: int,
             cache_prompt: bool = False) -> dict:
    """One greedy `/completion` request given token ids; `url_post(path, body) -> json` sends it
    (`LlamaServer.post`). Returns the server's answer: `tokens` (every sampled id, up to and including
    the one that completed a stop string), `stop_type` and `timings`."""
    body = {"prompt": ids, "n_predict": n_predict, "temperature": 0.0, "top_k": 1, "cache_prompt": cache_prompt,
            "return_tokens": True, "stop": STOP_STRINGS}
    return url_post("/completion", body)


def cut(tokens: Sequence[int], stop: Stop, eos: frozenset[int] | set[int], max_new: int) -> tuple[list[int], str]:
    """The ids our decoder would have output, given a peer's sampled `tokens`: up to EOS (left out), the
    first prefix `stop` accepts, or `max_new` tokens. Reason "" when none of these is reached."""
    out: list[int] = []
    for t in tokens:
        if t in eos:
            return out, "eos"
        out.append(t)
        if stop(out):
            return out, "stop"
        if len(out) >= max_new:
            return out, "max_new_tokens"
    return out, ""


def server_generate(server, mode: str, eos: frozenset[int] | set[int]):
    """A `generate` hook decoding through `server` (a started `LlamaServer`): one request; when the
    server stopped at a fence-like line that is not our stop point (a longer fence, a fence inside a
    Markdown file) the same request goes on from where it stopped, its own cache kept."""

    def generate(lm, ids: list[int], max_new: int, stop: Stop) -> tuple[list[int], DecodeStats]:
        stats = DecodeStats(mode, prompt_tokens=len(ids))
        sampled: list[int] = []
        start = time.perf_counter()
        while True:
            answer = complete(server.post, ids + sampled, max_new - len(sampled), cache_prompt=bool(sampled))
            sampled += answer.get("tokens") or []
            timings = answer.get("timings") or {}
            accepted = int(timings.get("draft_n_accepted") or 0)
            stats.forwards += max(1, int(timings.get("predicted_n") or 0) - accepted)
            stats.copied_tokens += accepted
            stats.prefill_seconds += float(timings.get("prompt_ms") or 0.0) / 1000
            out, reason = cut(sampled, stop, eos, max_new)
            if reason or answer.get("stop_type") != "word" or not answer.get("tokens"):
                break
        stats.decode_seconds = time.perf_counter() - start - stats.prefill_seconds
        stats.output_tokens = len(out)
        stats.stop_reason = reason or ("max_new_tokens" if len(out) >= max_new else "eos")
        return out, stats

    return generate


class InProcessGreedy:
    """llama-cpp-python's high-level `Llama` on the same GGUF, greedy, as a user of the bindings writes it
    (`Llama(..., logits_all=False)` + `generate`). Its cache is emptied before every request, so no
    prompt prefix is reused from the previous case."""

    def __init__(self, gguf: Path, threads: int, n_ctx: int = 8192) -> None:
        from llama_cpp import Llama

        self.llm = Llama(str(gguf), n_ctx=n_ctx, n_batch=512, n_ubatch=512, n_threads=threads,
                         n_threads_batch=threads, logits_all=False, verbose=False)

    def generate(self, lm, ids: list[int], max_new: int, stop: Stop) -> tuple[list[int], DecodeStats]:
        stats = DecodeStats("llamacpp-greedy", prompt_tokens=len(ids))
        eos = lm.engine.eos
        out: list[int] = []
        reason = "max_new_tokens"
        self.llm.reset()  # no prefix match with the previous request: its prompt is read again
        start = time.perf_counter()
        for t in self.llm.generate(ids, top_k=1, temp=0.0, repeat_penalty=1.0, reset=True):
            if not out and stats.prefill_seconds == 0.0:
                stats.prefill_seconds = time.perf_counter() - start
            stats.forwards += 1
            if t in eos:
                reason = "eos"
                break
            out.append(t)
            if stop(out):
                reason = "stop"
                break
            if len(out) >= max_new:
                break
        stats.decode_seconds = time.perf_counter() - start - stats.prefill_seconds
        stats.output_tokens = len(out)
        stats.stop_reason = reason
        return out, stats

    def close(self) -> None:
        self.llm.close()


def llama_cpp_version(binary: Path) -> str | None:
    """llama.cpp's version as `llama-server --version` prints it ("0.5.0-dev (build 0, commit unknown)" for
    the tree vendored in the bindings' sdist, which carries no git history: the bindings' version pins it)."""
    try:
        done = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"version:\s*(.+)", done.stdout + done.stderr, re.IGNORECASE)
    return m.group(1).strip() if m else None


class Peers:
    """The peers of one bench run: servers started on first use (one per flavour), the in-process
    `Llama` loaded on first use; `close()` stops and frees what it started. `servers` may hand in a
    running server for a flavour ("server", "server-ngram"): the caller's to stop (a test fixture's).
    `pld_tokens` is transformers' prompt lookup length for `hf-pld` (its draft, checked in one forward: on a
    GPU a longer one costs little more, so a user there would tune it)."""

    def __init__(self, gguf: Path | None, ngram_flags: Sequence[str] = NGRAM_FLAGS, threads: int | None = None,
                 servers: dict[str, object] | None = None, pld_tokens: int = PLD_TOKENS) -> None:
        self.gguf = gguf
        self.pld_tokens = pld_tokens
        self.threads = threads or os.cpu_count() or 1
        self.flags = {"server": [*BASE_FLAGS], "server-ngram": [*BASE_FLAGS, *ngram_flags]}
        self.given = dict(servers or {})
        self.servers: dict[str, object] = dict(self.given)
        self.in_process: InProcessGreedy | None = None

    def _gguf(self) -> Path:
        if self.gguf is None:
            raise EditError("the llama.cpp peers need a GGUF model (bundled:NAME or a .gguf file)")
        return self.gguf

    def flavour(self, mode: str) -> str:
        return "server" if mode == "server" else "server-ngram"

    def server(self, mode: str):
        from editllm.editor.llamaserver import LlamaServer

        name = self.flavour(mode)
        if name not in self.servers:
            self.servers[name] = LlamaServer(self._gguf(), self.flags[name], threads=self.threads).start()
        return self.servers[name]

    def hook(self, mode: str, eos: frozenset[int] | set[int]):
        """The `generate` hook that runs `mode` (one of PEER_MODES)."""
        if mode in SERVER_MODES:
            return server_generate(self.server(mode), mode, eos)
        if mode == "llamacpp-greedy":
            if self.in_process is None:
                self.in_process = InProcessGreedy(self._gguf(), self.threads)
            return self.in_process.generate
        raise EditError(f"{mode} is not a peer")

    def settings(self, modes: Sequence[str]) -> dict:
        """What results.json records about the peers of `modes`: server flags and llama.cpp's version."""
        used = [m for m in modes if m in PEER_MODES]
        pld = self.hf_settings(modes)
        if not used:
            return pld
        from editllm.editor.llamacpp import load_llama_cpp
        from editllm.editor.llamaserver import server_binary

        llama_cpp = load_llama_cpp()

        out: dict = {"llama-cpp-python": llama_cpp.__version__, "threads": self.threads}
        if any(m in SERVER_MODES for m in used):
            binary = server_binary(build=False)
            out["llama.cpp"] = llama_cpp_version(binary)
            out["server_flags"] = {self.flavour(m): getattr(self.servers.get(self.flavour(m)), "args", None)
                                   or self.flags[self.flavour(m)] for m in used if m in SERVER_MODES}
            out["request"] = {"temperature": 0.0, "top_k": 1, "cache_prompt": False, "stop": STOP_STRINGS}
        return out | pld

    def hf_settings(self, modes: Sequence[str]) -> dict:
        """The transformers peers' part of `settings`, which needs no llama.cpp (a partial report's)."""
        return {"hf_pld_tokens": self.pld_tokens} if "hf-pld" in modes else {}

    def close(self) -> None:
        for name, server in self.servers.items():
            if name not in self.given:
                server.__exit__(None, None, None)  # stops the process group, removes its log
        self.servers = dict(self.given)
        if self.in_process is not None:
            self.in_process.close()
            self.in_process = None
