"""Definitions an edit changes that nothing ties to what the instruction names (`editor.drift`): a note."""

from __future__ import annotations

from editllm.editor.drift import drifted, drifted_note, named

INDEX = """const lsStreamConcurrency = 5

function lsStream (cache) {
  return bucketEntries(cache, { concurrency: lsStreamConcurrency })
}

async function find (cache, key) {
  const entries = await bucketEntries(cache)
  return entries.reduce((latest, next) => next.key === key ? next : latest, null)
}

function bucketEntries (cache, opts) {
  return read(cache, opts)
}
"""


def test_a_definition_rewritten_beside_a_constant_change_is_noted():
    """Session 34's big-file probe: asked to change lsStreamConcurrency from 5 to 10, the model also rewrote `find()`
    (a change of behaviour), exit 0 and no word."""
    asked = "Change lsStreamConcurrency from 5 to 10."
    right = INDEX.replace("= 5", "= 10")
    drift = right.replace("const entries = await bucketEntries(cache)", "const entries = await lsStream(cache)")
    assert drifted("entry-index.js", INDEX, right, asked) == []
    assert drifted("entry-index.js", INDEX, drift, asked) == ["find"]
    assert drifted_note("entry-index.js", ["find"]) == ("entry-index.js: note: the edit also changes find, which the "
                                                      "instruction does not speak of; check it should change")
    # what a named thing uses is tied to it: a change there may be the fix (a bug told by its symptom)
    helper = right.replace("return read(cache, opts)", "return read(cache, { ...opts, fresh: true })")
    assert drifted("entry-index.js", INDEX, helper, asked) == []
    # naming the definition, or naming nothing of the file, is no drift
    assert drifted("entry-index.js", INDEX, drift, asked + " And use lsStream in find.") == []
    assert drifted("entry-index.js", INDEX, drift, "Modernise this file.") == []


def test_what_counts_as_named():
    text = "def day_of_year(d):\n    return 1\n\n\nclass Writer:\n    def pool(self):\n        A = []\n"
    assert named("day_of_year is off by one", text) == {"day_of_year"}
    assert named("In Writer.pool, add a docstring", text) == {"Writer", "pool"}
    assert named("add a docstring to the pool method", text) == {"pool"}
    assert named("Use a list comprehension for `A`.", text) == {"A"}
    assert named("the pool is slow", text) == {"pool"}  # a definition of the file, however plain its name
    assert named("the writer's output is a mess", text) == set()  # everyday words, "writer" no name here
    assert named("fix the class", text) == set() and named("a bug", text) == set()


def test_prose_and_data_files_are_not_judged():
    old, new = "# Title\n\nSome text.\n", "# Title\n\nOther text.\n"
    assert drifted("README.md", old, new, "Fix `Title`") == []
    assert drifted("config.yaml", "a_b: 1\nc: 2\n", "a_b: 2\nc: 3\n", "set a_b to 2") == []
