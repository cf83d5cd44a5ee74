"""The machine-level cache ($EDITLLM_CACHE) under processes started together, damage, odd places and other
users: built once, never deleted under a reader, a damaged entry rebuilt, modes as the umask says, and a
cache that cannot be written one clear line. Each case was found by an audit (session 20)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from editllm.api.batch import Journal
from editllm.editor import cachefs, models
from editllm.editor.errors import EditError
from editllm.editor.modelspec import BUNDLED, cache_dir
from editllm.editor.tokenizer import META, RUNTIME, LightTokenizer


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    where = tmp_path / "cache"
    monkeypatch.setenv("EDITLLM_CACHE", str(where))
    return where


def test_processes_building_one_entry_together_build_it_once_and_all_get_it(tmp_path):
    """Three builders start on an empty place: one builds (slowly), the others wait and use its entry."""
    dest = tmp_path / "entry"
    builds, errors, seen = [], [], []

    def valid(p: Path) -> bool:
        return (p / "done").is_file()

    def builder(name: str) -> None:
        try:
            with cachefs.building(dest, valid, folder=True) as tmp:
                if tmp is not None:
                    builds.append(name)
                    time.sleep(0.3)
                    (tmp / "done").write_text(name)
            seen.append((dest / "done").read_text())
        except Exception as exc:  # noqa: BLE001 - recorded for the assertion
            errors.append(repr(exc))

    threads = [threading.Thread(target=builder, args=(str(i),)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(builds) == 1 and seen == builds * 3


def test_a_valid_entry_is_never_replaced_under_its_readers(tmp_path):
    dest = tmp_path / "entry"
    dest.mkdir()
    (dest / "done").write_text("first")
    inode = dest.stat().st_ino
    with cachefs.building(dest, lambda p: (p / "done").is_file(), folder=True) as tmp:
        assert tmp is None
    assert dest.stat().st_ino == inode and (dest / "done").read_text() == "first"


def test_a_damaged_entry_is_rebuilt_and_a_killed_builds_leftovers_go(tmp_path):
    dest = tmp_path / "entry"
    dest.mkdir()
    (dest / "half").write_text("x")  # no `done`: damaged
    left = tmp_path / ".entry.build-abc123"
    left.mkdir()
    with cachefs.building(dest, lambda p: (p / "done").is_file(), folder=True) as tmp:
        (tmp / "done").write_text("new")
    assert (dest / "done").read_text() == "new" and not (dest / "half").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".entry.build")] == []


def test_a_failed_build_leaves_nothing(tmp_path):
    dest = tmp_path / "entry"
    with pytest.raises(RuntimeError), cachefs.building(dest, lambda p: p.exists(), folder=True) as tmp:
        (tmp / "x").write_text("x")
        raise RuntimeError("conversion failed")
    assert not dest.exists() and not [p for p in tmp_path.iterdir() if ".build-" in p.name]


def test_entries_get_the_umasks_modes_not_the_owners_alone(tmp_path):
    """mkstemp and mkdtemp make 0600 and 0700: a cache prepared as root in an image was unreadable to the
    user running it."""
    old = os.umask(0o022)
    try:
        with cachefs.building(tmp_path / "folder", lambda p: False, folder=True) as tmp:
            (tmp / "f").write_text("x")
        with cachefs.building(tmp_path / "file", lambda p: False) as tmp:
            tmp.write_text("x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "folder").stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "folder" / "f").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "file").stat().st_mode) == 0o644


@pytest.fixture
def small_bundled(tmp_path, monkeypatch):
    """A bundled model of three small parts (the real one is 1.1 GB)."""
    parts = []
    for i in range(3):
        part = tmp_path / "parts" / f"part{i:02d}.bin"
        part.parent.mkdir(exist_ok=True)
        part.write_bytes(bytes([i]) * 1000)
        parts.append(part)
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in parts)).hexdigest()
    bundled = replace(BUNDLED["1.5b"], parts=3, sha256=digest, gguf_name="small.gguf")
    monkeypatch.setattr(type(bundled), "part_paths", lambda self: parts)
    return bundled


@pytest.mark.parametrize("damage", ["empty", "cut short"])
def test_a_damaged_bundled_gguf_is_assembled_again(cache, small_bundled, damage):
    gguf = models.bundled_gguf(small_bundled)
    whole = gguf.read_bytes()
    gguf.write_bytes(b"" if damage == "empty" else whole[:1500])
    assert models.bundled_gguf(small_bundled).read_bytes() == whole


def test_whole_conversion_checks_each_safetensors_file_against_its_header(tmp_path):
    import torch
    from safetensors.torch import save_file

    folder = tmp_path / "conv"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    save_file({"w": torch.ones(64, 64)}, str(folder / "model.safetensors"))
    assert models.whole_conversion(folder)
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[:-100])
    assert not models.whole_conversion(folder)
    (folder / "model.safetensors").unlink()
    assert not models.whole_conversion(folder)


def ids(tok, text: str = "def f(x):\n    return x\n") -> list[int]:
    return tok(text, add_special_tokens=False)["input_ids"]


@pytest.fixture(scope="module")
def built_tokenizer(tmp_path_factory, tiny_gguf) -> tuple[Path, list[int]]:
    """A cache holding the tiny GGUF's tokenizer, built once (transformers takes ~12 s), and its ids."""
    where = tmp_path_factory.mktemp("built-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EDITLLM_CACHE", str(where))
        return where, ids(models.gguf_tokenizer(tiny_gguf))


@pytest.fixture
def cache_with_tokenizer(cache, built_tokenizer) -> list[int]:
    shutil.copytree(built_tokenizer[0], cache)
    return built_tokenizer[1]


@pytest.mark.parametrize("damage", ["runtime cut short", "meta of an old format", "tokenizer.json cut short"])
def test_a_damaged_tokenizer_cache_is_rebuilt(cache_with_tokenizer, tiny_gguf, damage):
    want = cache_with_tokenizer
    where = models.tokenizer_dir(tiny_gguf)
    if damage == "runtime cut short":
        (where / RUNTIME).write_text((where / RUNTIME).read_text()[:1000])
    elif damage == "meta of an old format":
        meta = json.loads((where / META).read_text())
        (where / META).write_text(json.dumps(meta | {"format": 0}))
    else:
        for name in (META, RUNTIME):  # the light copy gone too, so transformers' files are read
            (where / name).unlink()
        (where / "tokenizer.json").write_text((where / "tokenizer.json").read_text()[:1000])
    assert ids(models.gguf_tokenizer(tiny_gguf)) == want
    assert LightTokenizer.load(where) is not None  # and the light copy is whole again: no 3 s per run


def test_the_tokenizer_cache_tells_two_models_of_one_name_and_size_apart(cache_with_tokenizer, tiny_gguf, tmp_path):
    """Two fine-tunes of one model are often the same size, and may differ only in their chat template."""
    other = tmp_path / "other" / tiny_gguf.name
    other.parent.mkdir()
    data = tiny_gguf.read_bytes()
    assert b"a helpful assistant" in data
    other.write_bytes(data.replace(b"a helpful assistant", b"a harmful assistant"))
    chat = [{"role": "user", "content": "hi"}]
    assert "helpful" in models.gguf_tokenizer(tiny_gguf).apply_chat_template(chat, tokenize=False)
    assert "harmful" in models.gguf_tokenizer(other).apply_chat_template(chat, tokenize=False)


def test_a_relative_xdg_cache_home_is_ignored(monkeypatch, tmp_path):
    """The XDG spec says so; taken, it put the cache (a GB of model) into the repository being edited."""
    monkeypatch.delenv("EDITLLM_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "xdgcache")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache_dir() == tmp_path / ".cache" / "editllm"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cache_dir() == tmp_path / "x" / "editllm"


def test_no_home_is_one_clear_error(monkeypatch):
    monkeypatch.delenv("EDITLLM_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)

    def no_home():
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    with pytest.raises(EditError, match="set EDITLLM_CACHE"):
        cache_dir()


def test_a_cache_that_cannot_be_made_still_edits(tmp_path, monkeypatch, tiny_gguf):
    """EDITLLM_CACHE names a file: the tokenizer is read from the GGUF each time and the saved prompt state
    and costs are skipped; the run goes on (the tiny random model never finishes a file: that line is the
    run's own), never an internal error."""
    from editllm.cli.main import app
    from typer.testing import CliRunner

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("EDITLLM_CACHE", str(blocker))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text("x = 1\n")
    res = CliRunner().invoke(app, ["fix", "m.py", "fix it", "--model", str(tiny_gguf), "--max-new-tokens", "4"])
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "internal error" not in lines[0] and "did not finish" in lines[0], res.stderr


def test_a_full_cache_is_said_with_its_way_out(tmp_path, monkeypatch, cache):
    """An OSError is the machine's: its reason and file in one line, and for the cache what to do."""
    from editllm.cli.main import app
    from typer.testing import CliRunner

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device", str(cache / "model.gguf"))

    monkeypatch.setattr("editllm.editor.models.load_model", full)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text("x = 1\n")
    res = CliRunner().invoke(app, ["fix", "m.py", "fix it"])
    assert res.exit_code == 2 and res.stderr.strip() == (
        f"editllm: error: No space left on device: {cache / 'model.gguf'}; free some space there or set "
        "EDITLLM_CACHE to another folder"), res.stderr
    monkeypatch.setattr("editllm.editor.models.load_model",  # not a full disk: no advice to free space
                        lambda *a, **k: (_ for _ in ()).throw(FileExistsError(17, "File exists", str(cache))))
    res = CliRunner().invoke(app, ["fix", "m.py", "fix it"])
    assert res.exit_code == 2 and "free some space" not in res.stderr and "EDITLLM_CACHE" in res.stderr


def test_the_cost_table_tells_cpus_of_one_name_apart(monkeypatch):
    """A hypervisor's `AMD EPYC` names several generations: family, model, stepping and flags go in the key."""
    from editllm.editor import costs

    kind = costs.cpu_kind()
    if Path("/proc/cpuinfo").exists():
        assert kind.count("/") == 3 and len(kind.rsplit("/", 1)[1]) == 12


def test_a_record_after_a_cut_off_journal_line_is_kept(tmp_path):
    """A killed run left half a line; the next record used to be glued to it and lost, so a `pending` write
    went unseen and a third run applied the edit twice."""
    journal = Journal(tmp_path / "j")
    journal.path.write_text('{"key": "k", "status": "do')
    journal.append({"key": "f", "status": "pending", "sha": "s"})
    again = Journal(tmp_path / "j")
    assert [r["status"] for r in again.records["f"]] == ["pending"]


def test_the_bundled_models_tokenizer_keeps_its_name_wherever_the_cache_is(cache):
    """The bundled GGUF is checked by sha256 when it is assembled; its tokenizer folder is named by name and
    size only, so a cache moved, restored or mounted elsewhere still finds it (read-only, it must)."""
    bundled = BUNDLED["1.5b"]
    cache.mkdir()
    gguf = cache / bundled.gguf_name
    gguf.write_bytes(b"x" * 10)
    assert models.tokenizer_dir(gguf) == cache / f"tokenizer-{gguf.stem}-10"


def test_leftovers_are_matched_by_the_entrys_own_name_not_as_a_pattern(tmp_path):
    """`m[1]`'s sweep used to take `.m1.build-*`, another entry's build, perhaps under way."""
    mine, theirs = tmp_path / ".m[1].build-dead", tmp_path / ".m1.build-live"
    mine.mkdir()
    theirs.mkdir()
    with cachefs.building(tmp_path / "m[1]", lambda p: False, folder=True):
        pass
    assert not mine.exists() and theirs.exists()


def test_a_builder_waiting_for_another_says_so(tmp_path):
    said: list[str] = []

    def wait() -> None:
        with cachefs.locked(tmp_path / "entry", said.append):
            pass

    with cachefs.locked(tmp_path / "entry"):
        waiter = threading.Thread(target=wait)
        waiter.start()
        time.sleep(0.3)
    waiter.join(5)
    assert said == ["waiting for another editllm to finish building entry"]
