"""OpenMP's wait policy (editor.waitpolicy): passive for torch where the user chose none, never for llama.cpp's
own loading or its programs, and a policy the user set kept everywhere."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from editllm.editor import waitpolicy
from editllm.editor.waitpolicy import MARK, VAR, llama_defaults, prefer_passive, user_environment


@pytest.fixture
def env(monkeypatch):
    monkeypatch.delenv(VAR, raising=False)
    monkeypatch.delenv(MARK, raising=False)
    monkeypatch.setattr(waitpolicy, "libgomp_loaded", lambda: False)
    return monkeypatch


def test_passive_is_ours_only_where_the_user_chose_none(env):
    prefer_passive()
    assert os.environ[VAR] == "PASSIVE" and waitpolicy.ours()
    assert VAR not in user_environment() and MARK not in user_environment()
    env.setenv(VAR, "ACTIVE")  # the user's own choice, even after ours
    assert not waitpolicy.ours() and user_environment()[VAR] == "ACTIVE"


def test_a_users_policy_is_never_replaced(env):
    env.setenv(VAR, "PASSIVE")
    prefer_passive()
    assert not waitpolicy.ours() and user_environment()[VAR] == "PASSIVE"
    with llama_defaults():
        assert os.environ[VAR] == "PASSIVE"


def test_llama_cpp_loads_without_our_default_and_torch_gets_it_back(env):
    prefer_passive()
    with llama_defaults():
        assert VAR not in os.environ
    assert os.environ[VAR] == "PASSIVE"


def test_once_libgomp_is_loaded_the_environment_is_left_alone(env):
    prefer_passive()
    env.setattr(waitpolicy, "libgomp_loaded", lambda: True)
    with llama_defaults():
        assert os.environ[VAR] == "PASSIVE"


def test_llama_server_runs_without_our_default(env):
    from editllm.editor.llamaserver import LlamaServer

    prefer_passive()
    assert VAR not in LlamaServer("model.gguf").environment()


def test_the_cli_loads_llama_cpp_with_libgomps_default():
    """A fresh CLI process: no policy from the user, so passive is set for torch, yet llama.cpp (the first to
    load libgomp) is imported without it; the variable is back afterwards."""
    code = ("import os, editllm.cli\n"
            "from editllm.editor import waitpolicy\n"
            "seen = []\n"
            "real = waitpolicy.llama_defaults\n"
            "def spy():\n"
            "    ctx = real()\n"
            "    class C:\n"
            "        def __enter__(s):\n"
            "            ctx.__enter__(); seen.append(os.environ.get('OMP_WAIT_POLICY'))\n"
            "        def __exit__(s, *a):\n"
            "            return ctx.__exit__(*a)\n"
            "    return C()\n"
            "waitpolicy.llama_defaults = spy\n"
            "from editllm.editor.llamacpp import load_llama_cpp\n"
            "load_llama_cpp()\n"
            "print(seen, os.environ.get('OMP_WAIT_POLICY'), waitpolicy.libgomp_loaded())\n")
    env = {k: v for k, v in os.environ.items() if k not in (VAR, MARK)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert out.split() == ["[None]", "PASSIVE", "True"]


def test_llama_cpp_costs_are_kept_per_wait_policy(env):
    """A cost table timed under passive waiting would size drafts for steps 1.6× dearer than they are."""
    from editllm.editor import costs

    env.setattr(waitpolicy, "_LOADED", {})
    prefer_passive()
    with llama_defaults():
        pass
    assert waitpolicy.llama_policy() == "default"
    seen = []
    env.setattr(costs, "_load", lambda path, key: seen.append(key) or costs.Costs(0.03, 0.01, ((1, 0.03),)))

    class Engine:
        identity = {"engine": "llamacpp", "model": "m"}

    costs.engine_costs(Engine())
    assert seen[0]["omp_wait_policy"] == "default"
