"""Loaded by Python at start-up when tests/ is on PYTHONPATH: with EDITLLM_FAKE_SCRIPT set, every
model load returns the scripted fake (for the hook test, whose editllm runs inside `git commit`)."""

import os

if os.environ.get("EDITLLM_FAKE_SCRIPT"):
    import editllm.editor.models as _models

    def _fake(*args, **kwargs):
        from fakes import scripted_model
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(os.environ["EDITLLM_FAKE_TOKENIZER"])
        with open(os.environ["EDITLLM_FAKE_SCRIPT"], encoding="utf-8") as f:
            return scripted_model(tokenizer, f.read())

    _models.load_model = _fake
