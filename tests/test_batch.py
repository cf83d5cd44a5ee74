"""The many-files runner (api.batch) on a stand-in session: order, isolation of failures, retries with
backoff, atomic writes, the journal and resuming from it. No model: the rules are the runner's own."""

from __future__ import annotations

import json
import threading

import pytest
from editllm.api.batch import JOURNAL_NAME, Journal, content_sha, edit_many
from editllm.api.session import FileEdit, read_sources
from editllm.editor.diff import checked_diff
from editllm.editor.errors import EditError
from editllm.remote.client import ServerError


class FakeResult:
    stats = None
    merged = False
    complete_output = True
    fallback = None
    focused = ()


class FakeSession:
    """Upper-cases a file; `fail` maps a path to the error its edits raise (a list: one per attempt)."""

    server = "http://fake"

    def __init__(self, fail: dict | None = None) -> None:
        self.fail = {k: list(v) for k, v in (fail or {}).items()}
        self.calls: list[str] = []
        self.lock = threading.Lock()

    def prepare(self) -> None:
        pass

    def settings_key(self) -> dict:
        return {"mode": "fake"}

    def edit_source(self, src, instruction):
        with self.lock:
            self.calls.append(src.path)
            errors = self.fail.get(src.path)
            exc = errors.pop(0) if errors else None
        if exc is not None:
            raise exc
        new = src.raw.upper()
        return FileEdit(src, new, checked_diff([(src, new)]), FakeResult())


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    paths = []
    for k in range(8):
        p = tmp_path / f"f{k}.py"
        p.write_text(f"x{k} = {k}\n")
        paths.append(p.name)
    return paths


def run(session, paths, tmp_path, **kw):
    return edit_many(session, read_sources(paths, "shout"), "shout", journal=Journal(tmp_path / "j"), backoff=0.01,
                     **kw)


def test_diffs_come_in_input_order_and_a_failure_blocks_nothing(files, tmp_path):
    session = FakeSession({"f3.py": [EditError("f3.py: the model did not finish the file")]})
    report = run(session, files, tmp_path, jobs=4)
    assert [o.path for o in report.outcomes] == files
    assert [o.path for o in report.failed] == ["f3.py"] and "did not finish" in report.failed[0].error
    assert all(f"--- a/{o.path}\n" in o.diff for o in report.outcomes if o.path != "f3.py")
    assert report.exit_code() == 2 and report.exit_code(check=True) == 2  # a failure outranks check's 1


def test_transient_errors_are_retried_and_permanent_ones_are_not(files, tmp_path):
    down = ServerError("server: connection refused", transient=True)
    refused = ServerError("server: HTTP 400: bad grammar", transient=False)
    session = FakeSession({"f1.py": [down, down], "f2.py": [refused], "f5.py": [down, down, down]})
    report = run(session, files, tmp_path, jobs=2, retries=2)
    by = {o.path: o for o in report.outcomes}
    assert by["f1.py"].error is None and by["f1.py"].attempts == 3
    assert by["f2.py"].error and by["f2.py"].attempts == 1
    assert by["f5.py"].error and by["f5.py"].attempts == 3  # out of retries
    assert report.exit_code() == 2


def test_no_backoff_is_slept_past_the_files_timeout(files, tmp_path, monkeypatch):
    """A retry whose backoff would end past `timeout` is not waited for: the file fails now, with its error."""
    slept, clock = [], [0.0]

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock[0] += seconds

    monkeypatch.setattr("editllm.api.batch.time.sleep", sleep)
    monkeypatch.setattr("editllm.api.batch.time.monotonic", lambda: clock[0])
    down = ServerError("server: connection refused", transient=True)
    session = FakeSession({"f1.py": [down, down, down]})
    report = edit_many(session, read_sources(["f1.py"], "shout"), "shout", retries=5, backoff=4.0, timeout=10.0)
    assert report.failed[0].error == str(down) and report.failed[0].attempts == 2 and slept == [4.0]


def test_an_unexpected_exception_fails_only_its_file(files, tmp_path):
    session = FakeSession({"f0.py": [ZeroDivisionError("boom")]})
    report = run(session, files, tmp_path, jobs=3)
    assert [o.path for o in report.failed] == ["f0.py"]
    assert report.failed[0].error.startswith("internal error: ZeroDivisionError")


def test_apply_writes_each_success_and_the_rerun_resumes_only_the_missing(files, tmp_path):
    down = ServerError("server: connection refused", transient=True)
    session = FakeSession({"f2.py": [down], "f6.py": [down]})
    first = run(session, files, tmp_path, jobs=4, retries=0, apply=True)
    assert sorted(o.path for o in first.failed) == ["f2.py", "f6.py"]
    for k, name in enumerate(files):
        text = (tmp_path / name).read_text()
        assert text == (f"x{k} = {k}\n" if name in ("f2.py", "f6.py") else f"X{k} = {k}\n")
    again = FakeSession()
    second = run(again, files, tmp_path, jobs=4, retries=0, apply=True)
    assert sorted(again.calls) == ["f2.py", "f6.py"]  # the written files are recognised by their new content
    assert second.exit_code() == 0 and sum(o.resumed for o in second.outcomes) == 6
    assert all((tmp_path / n).read_text() == (tmp_path / n).read_text().upper() for n in files)


def test_a_resumed_run_without_apply_prints_the_journal_diffs(files, tmp_path):
    first = run(FakeSession(), files, tmp_path, jobs=2)
    again = FakeSession()
    second = run(again, files, tmp_path, jobs=2)
    assert again.calls == [] and all(o.resumed for o in second.outcomes)
    assert [o.diff for o in second.outcomes] == [o.diff for o in first.outcomes]


def test_another_instruction_or_content_is_not_resumed(files, tmp_path):
    run(FakeSession(), files, tmp_path)
    (tmp_path / "f4.py").write_text("changed = 1\n")
    again = FakeSession()
    run(again, files, tmp_path)
    assert again.calls == ["f4.py"]
    other = FakeSession()
    edit_many(other, read_sources(files, "whisper"), "whisper", journal=Journal(tmp_path / "j"))
    assert len(other.calls) == len(files)


def test_a_write_that_landed_before_its_done_record_is_not_applied_twice(files, tmp_path):
    """Killed between the atomic write and the `done` record: the `pending` record names the new content."""
    journal = Journal(tmp_path / "j")
    src = read_sources(["f0.py"], "shout")[0]
    key = Journal.key("f0.py", "shout", FakeSession().settings_key())
    journal.append({"key": key, "path": "f0.py", "sha": content_sha(src.raw), "status": "pending",
                    "applied": True, "new_sha": content_sha(src.raw.upper()), "changed": True, "diff": ""})
    (tmp_path / "f0.py").write_text(src.raw.upper())
    with open(journal.path, "a") as f:
        f.write('{"key": "torn')  # a record cut short by the kill
    again = FakeSession()
    run(again, files, tmp_path, apply=True)
    assert "f0.py" not in again.calls


def test_the_journal_holds_one_json_record_per_line(files, tmp_path):
    run(FakeSession(), files[:3], tmp_path, apply=True)
    lines = (tmp_path / "j" / ".editllm-journal.jsonl").read_text().splitlines()
    recs = [json.loads(line) for line in lines]
    assert {r["status"] for r in recs} == {"pending", "done"} and len(recs) == 6


class AppendSession(FakeSession):
    """Adds a line to a file: an edit applied twice shows (the upper-casing above is the same twice)."""

    def __init__(self, mode: str = "fake") -> None:
        super().__init__()
        self.mode = mode

    def settings_key(self) -> dict:
        return {"mode": self.mode}

    def edit_source(self, src, instruction):
        with self.lock:
            self.calls.append(src.path)
        new = src.raw + "# edited\n"
        return FileEdit(src, new, checked_diff([(src, new)]), FakeResult())


def test_a_rerun_with_other_settings_does_not_apply_an_edit_again(files, tmp_path):
    """Told "raise --max-new-tokens" for one file, the user reruns with it raised: the files written by the first
    run were edited again (their journal key holds every setting)."""
    run(AppendSession("first"), files, tmp_path, apply=True)
    again = AppendSession("second")
    report = run(again, files, tmp_path, apply=True)
    assert again.calls == [] and all(o.resumed for o in report.outcomes)
    assert all((tmp_path / n).read_text().count("# edited") == 1 for n in files)


def test_check_staged_apply_is_resumed_by_what_it_wrote_to_the_working_tree(tmp_path, monkeypatch):
    """`check --staged --apply` writes the working tree (the edit over unstaged lines); a rerun compared the staged
    blob with the edit's text, never matched, and applied the edit again."""
    import subprocess

    from editllm.api.session import staged_files

    monkeypatch.chdir(tmp_path)
    subprocess.run(["git", "init", "-q"], check=True)
    for k in range(3):
        (tmp_path / f"s{k}.py").write_text(f"x{k} = {k}\n")
    subprocess.run(["git", "add", "."], check=True)
    (tmp_path / "s1.py").write_text("import os\nx1 = 1\n")  # an unstaged line above the staged text
    for attempt in range(2):
        session = AppendSession()
        report = edit_many(session, staged_files()[0], "x", journal=Journal(tmp_path / "j"), apply=True,
                           worktree=True)
        assert report.exit_code() == 0, [o.error for o in report.failed]
        assert session.calls == ([] if attempt else ["s0.py", "s1.py", "s2.py"])
    assert (tmp_path / "s1.py").read_text() == "import os\nx1 = 1\n# edited\n"
    assert all((tmp_path / f"s{k}.py").read_text().count("# edited") == 1 for k in range(3))


@pytest.mark.parametrize("bad", [{"jobs": "2"}, {"jobs": 0}, {"retries": -1}, {"timeout": -1}, {"timeout": 0},
                                 {"timeout": float("inf")}, {"timeout": "5"}])
def test_batch_settings_that_cannot_work_are_refused_up_front(files, tmp_path, bad):
    session = FakeSession()
    with pytest.raises(EditError, match=next(iter(bad))):
        edit_many(session, read_sources(files, "shout"), "shout", **bad)
    assert session.calls == []


def test_a_journal_that_cannot_be_written_is_refused_before_any_file(files, tmp_path):
    folder = tmp_path / "j"
    folder.mkdir()
    (folder / ".editllm-journal.jsonl").mkdir()  # not a file
    with pytest.raises(EditError, match="--journal"):
        Journal(folder)


def test_a_run_timeout_does_not_stay_on_the_session(files, tmp_path):
    class Client:
        timeout = 600.0

    session = FakeSession()
    session.lm = type("LM", (), {"client": Client()})()
    edit_many(session, read_sources(files, "shout"), "shout", timeout=2.0)
    assert session.lm.client.timeout == 600.0
    session.connect_timeout = 600.0  # an EditSession's: `connect` gives it the run's timeout for the connection
    edit_many(session, read_sources(files, "shout"), "shout", timeout=2.0)
    assert session.connect_timeout == 600.0 and session.lm.client.timeout == 600.0


def test_a_server_still_loading_is_retried_while_connecting(files, tmp_path):
    """llama-server answers 503 while it loads its model: a run started then failed at once, whatever --retries."""
    class Loading(FakeSession):
        def __init__(self, refusals: int) -> None:
            super().__init__()
            self.refusals = refusals

        def prepare(self) -> None:
            if self.refusals:
                self.refusals -= 1
                raise ServerError("server: 503 loading model", transient=True)

    report = run(Loading(2), files, tmp_path, retries=2)
    assert report.exit_code() == 0 and len(report.changed) == len(files)
    with pytest.raises(ServerError, match="503"):
        run(Loading(3), files, tmp_path, retries=2)


def test_the_shared_journal_keeps_its_newest_records_within_its_limit(tmp_path):
    """The cache's journal (every run without --journal appends a diff per file) is cut to its newest half past
    its limit; a journal opened before the cut appends to the new file, not to the one renamed away."""
    early = Journal(tmp_path)
    for k in range(200):
        early.append({"key": f"k{k}", "diff": "x" * 80})
    size = (tmp_path / JOURNAL_NAME).stat().st_size
    later = Journal(tmp_path, limit=size // 2)
    assert (tmp_path / JOURNAL_NAME).stat().st_size <= size // 4 + 120  # and the line the cut falls in
    assert "k199" in later.records and "k0" not in later.records
    early.append({"key": "after", "diff": ""})
    assert "after" in Journal(tmp_path).records and "k199" in Journal(tmp_path).records
    assert Journal(tmp_path, limit=size).records.keys() == Journal(tmp_path).records.keys()  # under it: untouched


def test_compaction_keeps_a_huge_newest_record_the_modes_and_a_link(tmp_path):
    """The review's cases: a newest record bigger than half the limit is kept whole (it emptied the journal); the
    journal keeps its private modes (it holds diffs of the user's code); a journal that is a link is left as it is
    (compacting replaced the link with a file the target no longer saw)."""
    import os

    j = Journal(tmp_path)
    j.append({"key": "old", "diff": "x" * 100})
    j.append({"key": "big", "diff": "y" * 3000})
    os.chmod(tmp_path / JOURNAL_NAME, 0o600)
    kept = Journal(tmp_path, limit=2000)
    assert "big" in kept.records and "old" not in kept.records
    assert (tmp_path / JOURNAL_NAME).stat().st_mode & 0o777 == 0o600
    (tmp_path / "link").mkdir()
    (tmp_path / "link" / JOURNAL_NAME).symlink_to(tmp_path / JOURNAL_NAME)
    Journal(tmp_path / "link", limit=10)
    assert (tmp_path / "link" / JOURNAL_NAME).is_symlink()
