"""A/B harness: `editllm bench` with copy mode's early stop at an idle span switched off (every ask whole)."""
import sys

import editllm.editor.copymode as copymode

whole_init = copymode.CopyRun.__init__


def init(self, *args, **kwargs):
    kwargs["stop_idle"] = False
    whole_init(self, *args, **kwargs)


copymode.CopyRun.__init__ = init
from editllm.cli.main import app  # noqa: E402

sys.argv = ["editllm", *sys.argv[1:]]
app()
