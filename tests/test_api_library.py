"""The library API as a program (not the CLI) uses it: options and argument types checked at the boundary,
threads, an interrupted forward, writes refused whole, and what a notebook or a script passes in."""

from __future__ import annotations

import io
import os
import threading
import time

import pytest
from editllm.api import EditError, EditSession, write_edits
from editllm.editor.wholefile import ensure_whole

BUGGY = "def average(xs):\n    return sum(xs) / (len(xs) - 1)\n"
FIXED = "def average(xs):\n    return sum(xs) / len(xs)\n"
TWO_AREAS = ("class Shape:\n    def area(self):\n        return self.w + self.h\n\n    def perimeter(self):\n"
             "        return 2 * (self.w + self.h)\n\n\nclass Box(Shape):\n    def area(self):\n        return 0\n")
AREA = "    def area(self):\n        return self.w * self.h\n"  # which class's? the instruction does not say


@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(BUGGY)
    return tmp_path


def test_a_forward_cut_short_leaves_the_session_usable(tiny_lm, repo):
    outputs = []
    session = EditSession(tiny_lm, mode="rewrite", max_new_tokens=12, focus=False,
                          on_ids=lambda prompt, out: outputs.append(out))

    def run() -> None:
        with pytest.raises(EditError, match="did not finish"):  # a random model never closes the file
            session.edit(["a.py"], "rename xs to values")

    run()
    calls = [0]

    def out_of_memory(module, args) -> None:  # the second layer fails in the prompt's forward
        calls[0] += 1
        if calls[0] == 1:
            raise RuntimeError("CUDA out of memory")

    hook = tiny_lm.model.model.layers[1].register_forward_pre_hook(out_of_memory)
    try:
        with pytest.raises(RuntimeError, match="out of memory"):
            session.edit(["a.py"], "rename xs to values")
    finally:
        hook.remove()
    run()  # used to fail: "The size of tensor a (..) must match the size of tensor b (..)"
    assert outputs[-1] == outputs[0]


def test_the_torch_engine_empties_its_cache_when_a_forward_fails(tiny_lm):
    engine = tiny_lm.engine
    engine.start([1, 2, 3, 4])
    hook = tiny_lm.model.model.layers[1].register_forward_pre_hook(lambda m, a: 1 / 0)
    try:
        with pytest.raises(ZeroDivisionError):
            engine.forward([5, 6], keep=1)
    finally:
        hook.remove()
    assert engine.length == 0 and engine.held == ()
    assert engine.start([1, 2, 3, 4]) == (4, "read")
    assert engine.forward([5, 6], keep=1).shape[0] == 1


def test_threads_on_one_local_session_take_turns(repo, scripted_lm):
    lm = scripted_lm(FIXED + "```\n")
    active, most = [0], [0]
    forward = lm.model.forward

    def counted(*args, **kwargs):  # the scripted model keeps per-sequence state: overlapping runs corrupt it
        active[0] += 1
        most[0] = max(most[0], active[0])
        time.sleep(0.002)
        try:
            return forward(*args, **kwargs)
        finally:
            active[0] -= 1

    lm.model.forward = counted
    for k in range(4):
        (repo / f"f{k}.py").write_text(BUGGY)
    session = EditSession(lm)
    results: dict[int, object] = {}

    def work(k: int) -> None:
        try:
            results[k] = session.edit([f"f{k}.py"], "fix average")[0].new_text
        except Exception as exc:
            results[k] = exc

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1 and results == {k: FIXED for k in range(4)}


def test_a_loaded_model_is_read_without_the_lock(scripted_lm):
    """Rows' threads (`_edit_together`) read `lm` while `edit` holds the session's lock."""
    session = EditSession(scripted_lm(FIXED))
    with session._lock:
        reader = threading.Thread(target=lambda: session.lm)
        reader.start()
        reader.join(5)
        assert not reader.is_alive()


def test_a_merge_error_names_its_file(repo, scripted_lm):
    (repo / "shapes.py").write_text(TWO_AREAS)
    with pytest.raises(EditError, match=r"^shapes\.py: the output leaves out .*cannot be placed.*Shape and Box"):
        ensure_whole(TWO_AREAS, AREA, "fix area", path="shapes.py")
    session = EditSession(scripted_lm(AREA + "```\n"), focus=False)
    with pytest.raises(EditError, match=r"^shapes\.py: the output leaves out"):
        session.edit(["shapes.py", "a.py"], "fix area")


@pytest.mark.parametrize(("options", "name"), [
    ({"max_new_token": 5}, "max_new_token"),
    ({"draft": "nope"}, "draft"),
    ({"temperature": float("nan")}, "temperature"),
    ({"temperature": -1.0}, "temperature"),
    ({"gamma": 0}, "gamma"),
    ({"max_new_tokens": 0}, "max_new_tokens"),
    ({"max_new_tokens": -5}, "max_new_tokens"),
    ({"copy_requests": "bogus"}, "copy_requests"),
    ({"copy_kv": "bogus"}, "copy_kv"),
    ({"mode": "fast"}, "mode"),
    ({"device": "gpu"}, "device"),
    ({"layout": "sideways"}, "layout"),
    ({"focus": "yes"}, "focus"),
])
def test_options_are_checked_before_any_model_loads(options, name):
    with pytest.raises(EditError, match=name):
        EditSession("nowhere/model/x", **options)


def test_good_options_pass(scripted_lm):
    session = EditSession(scripted_lm(FIXED), mode="copy", device="cuda:0", max_new_tokens=10, temperature=0.5,
                          gamma=2, draft="fixed:4", copy_kv="reuse", copy_requests="one", seed=3)
    assert session.edit_options().gamma == 2


def test_read_only_files_are_not_written_by_edit_many(repo, scripted_lm):
    (repo / "ro.py").write_text(BUGGY)
    os.chmod(repo / "ro.py", 0o444)
    session = EditSession(scripted_lm(FIXED + "```\n"))
    report = session.edit_many(["a.py", "ro.py"], "fix average", apply=True)
    a, ro = report.outcomes
    assert a.written and (repo / "a.py").read_text() == FIXED
    assert not ro.written and "ro.py: read-only" in ro.error and (repo / "ro.py").read_text() == BUGGY


def test_two_edits_of_one_file_are_refused_before_any_write(repo, scripted_lm):
    (repo / "b.py").write_text(BUGGY)
    session = EditSession(scripted_lm(FIXED + "```\n"))
    first, second = session.edit(["b.py", "a.py"], "fix"), session.edit(["a.py"], "fix")
    with pytest.raises(EditError, match="a.py: two edits"):
        write_edits(first + second)
    assert (repo / "a.py").read_text() == BUGGY and (repo / "b.py").read_text() == BUGGY


def test_one_path_alone_is_one_file(repo, scripted_lm):
    session = EditSession(scripted_lm(FIXED + "```\n"))
    [edit] = session.edit("a.py", "fix average")
    assert edit.path == "a.py" and edit.new_text == FIXED
    [edit] = session.edit(repo / "a.py", "fix average")
    assert edit.new_text == FIXED


def test_wrong_argument_types_fail_at_the_boundary(repo):
    session = EditSession("nowhere/model/x")
    for paths, instruction, message in ((["a.py"], None, "instruction"), (["a.py"], b"fix", "instruction"),
                                        (b"a.py", "fix", "paths"), ([3], "fix", "paths"), (None, "fix", "paths")):
        with pytest.raises(TypeError, match=message):
            session.edit(paths, instruction)
    with pytest.raises(TypeError, match="model"):
        EditSession(123)
    with pytest.raises(TypeError, match="adapter"):
        EditSession("nowhere/model/x", adapter=5)
    assert session._lm is None


def test_relative_model_and_adapter_paths_are_resolved_when_the_session_is_made(tiny_model_dir, tmp_path,
                                                                               monkeypatch):
    monkeypatch.chdir(tiny_model_dir.parent)
    (tmp_path / "adapter").mkdir()
    session = EditSession(tiny_model_dir.name, device="cpu", dtype="float32")
    monkeypatch.chdir(tmp_path)
    with_adapter = EditSession("bundled:1.5b", adapter="adapter")
    monkeypatch.chdir("/")
    assert session.model_spec == str(tiny_model_dir) and with_adapter.adapter == str(tmp_path / "adapter")
    assert session.lm.engine_name == "torch"  # loaded from elsewhere: the folder is found


def test_stdin_without_a_byte_buffer_is_read_as_text(repo, scripted_lm, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO(BUGGY))  # a notebook's stdin has no .buffer
    [edit] = EditSession(scripted_lm(FIXED + "```\n")).edit(["-"], "fix average")
    assert edit.old_text == BUGGY and edit.new_text == FIXED


def test_edit_many_takes_a_journal_folder(repo, scripted_lm):
    session = EditSession(scripted_lm(FIXED + "```\n"))
    report = session.edit_many(["a.py"], "fix average", journal=str(repo / "j"))
    assert not report.failed and (repo / "j" / ".editllm-journal.jsonl").is_file()
    again = session.edit_many(["a.py"], "fix average", journal=repo / "j")
    assert again.outcomes[0].resumed


def test_close_drops_the_model(repo, scripted_lm):
    with EditSession(scripted_lm(FIXED + "```\n")) as session:
        assert session.edit(["a.py"], "fix average")[0].changed
    assert session._lm is None
    with pytest.raises(EditError, match="closed"):
        session.edit(["a.py"], "fix average")


def test_types_in_public_signatures_are_exported():
    from editllm.api import DecodeStats, LoadedModel, ServerError

    assert issubclass(ServerError, EditError) and DecodeStats and LoadedModel


def test_a_file_of_a_rename_that_never_mentions_the_old_name_is_left_as_it_is(repo, scripted_lm):
    """A probe (session 42) renamed fnmatch's `filter` "and its caller in glob.py": a file of such an edit that never
    mentions the old name cannot change, and the model, shown it whole, rewrote it for nothing. It is left as it is,
    with a note; the file that has the name is edited."""
    (repo / "stats.py").write_text(BUGGY)
    (repo / "other.py").write_text("def median(xs):\n    return sorted(xs)[len(xs) // 2]\n")
    renamed = BUGGY.replace("def average(", "def mean(")
    notes: list[str] = []
    session = EditSession(scripted_lm(renamed + "```\n"), log=notes.append)
    stats, other = session.edit(["stats.py", "other.py"], "Rename average to mean and update its callers.")
    assert stats.new_text == renamed and not other.changed and other.diff == ""
    assert "other.py: note: the file does not mention average; left as it is" in notes
    with pytest.raises(EditError, match="none of stats.py, other.py mentions"):
        session.edit(["stats.py", "other.py"], "Rename total to sum_of.")


def test_a_rename_view_is_asked_for_the_rename_alone(repo, scripted_lm, monkeypatch):
    """A probe (session 42): shown fnmatch.py's rename view with "... and update __all__ and its caller in glob.py",
    the model wrote `import glob` and `glob.filter = filter_names` into fnmatch.py. The view is asked for the rename
    alone; the words about the other files are for their own views."""
    from editllm.editor.decode import DecodeStats

    asked: list[str] = []

    def regenerate(lm, src, part, instruction, opts, on_progress=None, words=None):
        asked.append(instruction)
        return part.replace("average", "mean"), DecodeStats(opts.mode, output_tokens=1), "", False

    monkeypatch.setattr("editllm.editor.edit.regenerate", regenerate)
    (repo / "stats.py").write_text(BUGGY + "\n\ndef spread(xs):\n    return max(xs) - average(xs)\n\n\n"
                                   "def first(xs):\n    return xs[0]\n\n\ndef last(xs):\n    return xs[-1]\n")
    session = EditSession(scripted_lm(""))
    edit, = session.edit(["stats.py"], "Rename average to mean in stats.py, and update its caller in report.py.")
    assert asked == ["Rename average to mean and update every use of average."]
    assert "def mean(" in edit.new_text and "- mean(xs)" in edit.new_text and "average" not in edit.new_text
