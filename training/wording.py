"""Instruction wording for the synthetic edits: several templates per edit kind, drawn by a seeded rng.

The bench says "Fix the bug in `f`: its tests fail." for every bug. A selector trained on that one
sentence learns the sentence, not the request; users name a function, describe a symptom, or say
neither. So each kind has several phrasings (the bench's among them, one choice in many), and a bug
can be described by what goes wrong for its mutation kind (`training/mutate.py`'s kinds) instead of
by name.
"""

from __future__ import annotations

import random

from editllm.training.mutate import instruction_bugfix

# One function; {f} is its name in backticks.
BUGFIX_ONE = [
    "Fix the bug in {f}.",
    "{f} is broken; please fix it.",
    "There's a bug in {f} - can you fix it?",
    "{f} gives wrong results. Find and fix the problem.",
    "Please debug {f}: its output is not what it should be.",
    "Something is off in {f}. Correct it without changing anything else.",
    "The tests for {f} are failing; fix the function.",
]
# Two functions; {f} and {g}.
BUGFIX_TWO = [
    "Fix the bugs in {f} and {g}.",
    "{f} and {g} both have a bug. Fix them.",
    "Both {f} and {g} return wrong results; please correct them.",
    "There are two bugs, one in {f} and one in {g}. Fix both.",
]
# No function named: the user only knows something is wrong.
BUGFIX_ANON = [
    "There's a bug in this file. Find it and fix it.",
    "One of these functions returns the wrong result. Fix it.",
    "Some tests fail with this module. Find the mistake and fix it.",
]
# By symptom, per mutation kind: what a user would notice; {f} is the function.
SYMPTOMS = {
    "compare_op": ["{f} gets the boundary case wrong (equal values).", "A comparison in {f} is wrong; fix it."],
    "compare_constant": ["{f} is off by one in one of its checks.", "{f} misjudges a limit by one. Fix that."],
    "membership": ["{f} treats items that are present as missing (or the reverse). Fix it.",
                   "A membership test in {f} is inverted."],
    "arith_op": ["{f} adds where it should subtract, or the other way round. Fix the arithmetic.",
                 "The arithmetic in {f} is wrong: the numbers it computes are off."],
    "bool_op": ["A condition in {f} uses the wrong logical operator.",
                "{f} accepts or rejects the wrong cases: one of its conditions is combined wrongly."],
    "range_bound": ["{f} misses or adds an iteration: fix the loop bounds.", "Off-by-one error in a loop of {f}."],
    "index_offset": ["{f} reads the wrong element: an index is off by one.", "Off-by-one indexing bug in {f}."],
    "slice_bound": ["{f} takes one element too many or too few in a slice.", "A slice in {f} is off by one."],
    "return_var": ["{f} returns the wrong variable.", "{f} returns something other than its result. Fix it."],
}
RENAME = [
    "Rename the function {old} to {new} and update every call site.",
    "Rename {old} to {new}.",
    "Please call {old} {new} instead, and fix all the places that use it.",
    "Change the name of {old} to {new} everywhere in this file.",
    "{old} should be named {new}; update its definition and callers.",
]
TYPO = [
    "Fix the typos in the comments and docstrings.",
    "Correct the spelling mistakes in the comments.",
    "There's a typo in a comment or docstring; fix it.",
    "Proofread the comments and docstrings and fix misspelled words.",
]


def _q(name: str) -> str:
    return f"`{name}`"


def bugfix(funcs: list[str], kinds: list[str], rng: random.Random) -> str:
    """A bug-fix request for `funcs` (one or two), broken by mutations of `kinds`: the bench's words,
    another template, the symptom of the first bug, or (one function) no name at all."""
    if len(funcs) == 2:
        pool = [instruction_bugfix(funcs)] + [t.format(f=_q(funcs[0]), g=_q(funcs[1])) for t in BUGFIX_TWO]
        return rng.choice(pool)
    f = _q(funcs[0])
    style = rng.choices(["bench", "template", "symptom", "anon"], [1, 3, 3, 1])[0]
    if style == "bench":
        return instruction_bugfix(funcs)
    if style == "symptom" and kinds and kinds[0] in SYMPTOMS:
        return rng.choice(SYMPTOMS[kinds[0]]).format(f=f)
    if style == "anon":
        return rng.choice(BUGFIX_ANON)
    return rng.choice(BUGFIX_ONE).format(f=f)


def rename(old: str, new: str, rng: random.Random) -> str:
    return rng.choice(RENAME).format(old=_q(old), new=_q(new))


def typo(rng: random.Random) -> str:
    return rng.choice(TYPO)
