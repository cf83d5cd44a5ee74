"""editllm's library API: edit files with a local LLM and get checked diffs back.

    from editllm.api import EditSession, write_edits

    session = EditSession("bundled:1.5b", mode="spec")
    edits = session.edit(["app.py", "util.py"], "add type hints")
    print("".join(e.diff for e in edits))       # one unified diff; e.changed, e.stats, e.merged ...
    write_edits(edits)                           # atomic writes, refused if a file changed on disk

Importing this package does not import torch: the model loads on the first `edit` (or `.lm`).
Errors a user can act on are `EditError` (one line, nothing written); a wrong argument type is a TypeError.
One session serves many threads: local edits take turns, a server's run concurrently.
"""

from editllm.api.batch import BatchReport, FileOutcome, Journal
from editllm.api.hook import HOOK_MARK, hook_path, install_hook, uninstall_hook
from editllm.api.session import (
    EditSession,
    FileEdit,
    check_adapter,
    check_options,
    display_path,
    load_model,
    quiet_libraries,
    read_only,
    read_sources,
    staged_files,
    write_edits,
)
from editllm.api.stats import stats_record
from editllm.editor.config import DEFAULT_MODEL, Config, load_config
from editllm.editor.decode import DecodeStats  # these three appear in the API's signatures; none imports torch
from editllm.editor.errors import EditError
from editllm.editor.models import LoadedModel
from editllm.editor.modelspec import check_model_spec
from editllm.editor.source import SourceFile, source_from_text
from editllm.remote.client import ServerError

__all__ = [
    "DEFAULT_MODEL", "HOOK_MARK", "BatchReport", "FileOutcome", "Journal",
    "Config", "DecodeStats", "EditError", "EditSession", "FileEdit", "LoadedModel", "ServerError", "SourceFile",
    "check_adapter", "check_model_spec", "check_options", "display_path",
    "hook_path", "install_hook", "load_config", "load_model", "quiet_libraries",
    "read_only", "read_sources", "source_from_text", "staged_files", "stats_record",
    "uninstall_hook", "write_edits",
]
