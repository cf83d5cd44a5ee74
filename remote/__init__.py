"""editllm as a client of a serving engine (llama.cpp's llama-server; vLLM's OpenAI-compatible server; SGLang),
in their token-id forms.

Why a package of its own: the model runs elsewhere, so nothing here drives a KV cache or reads logits.
Requests carry editllm's own token ids (the prompt builder's, the resolver's), never text, so nothing is
re-tokenized across a prompt/program/copy boundary. `client` speaks llama-server's HTTP, `vllm` vLLM's and
`sglang` SGLang's, all answering in one shape; `session` finds which engine a URL runs; `gbnf` states what a
copy-program request may write next; `modes` runs rewrite, spec and the client-driven copy loop on top of any;
`vllmserver` and `sglangserver` start those servers for the tests.
"""

from editllm.remote.client import ServerClient, ServerError, ServerInfo
from editllm.remote.modes import RemoteModel, RemoteStats, edit_remote
from editllm.remote.sglang import SglangClient
from editllm.remote.vllm import VllmClient

__all__ = ["RemoteModel", "RemoteStats", "ServerClient", "ServerError", "ServerInfo", "SglangClient", "VllmClient",
           "edit_remote"]
