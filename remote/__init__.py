"""editllm as a client of a serving engine (llama.cpp's llama-server, OpenAI-compatible in its token-id form).

Why a package of its own: the model runs elsewhere, so nothing here drives a KV cache or reads logits.
Requests carry editllm's own token ids (the prompt builder's, the resolver's), never text, so nothing is
re-tokenized across a prompt/program/copy boundary. `client` speaks HTTP, `gbnf` states what a copy-program
request may write next, `modes` runs rewrite, spec and the client-driven copy loop on top of them.
"""

from editllm.remote.client import ServerClient, ServerError, ServerInfo
from editllm.remote.modes import RemoteModel, RemoteStats, edit_remote

__all__ = ["RemoteModel", "RemoteStats", "ServerClient", "ServerError", "ServerInfo", "edit_remote"]
