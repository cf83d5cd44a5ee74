"""Version numbers for the plugin registry: parse, order, bump, and match against ranges.

Versions look like `1.4.2` or `2.0.0-rc.1`. A pre-release sorts before its release, and pre-release
parts compare as numbers when both are numeric. Ranges: `^1.2.3` (same major; for 0.x the same minor),
`~1.2.3` (same minor), `>=1.2.0`, `<2.0.0`, `=1.2.3`, or several of those separated by spaces.
"""

import functools
import re
from dataclasses import dataclass

PATTERN = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?$")


class VersionError(ValueError):
    pass


@functools.total_ordering
@dataclass(frozen=True)
class Version:
    major: int
    minor: int
    patch: int
    pre: tuple = ()

    def __str__(self):
        text = f"{self.major}.{self.minor}.{self.patch}"
        return text + ("-" + ".".join(str(p) for p in self.pre) if self.pre else "")

    def key(self):
        # a release (no pre-release part) sorts after all its pre-releases
        pre = tuple((0, p, "") if isinstance(p, int) else (1, 0, p) for p in self.pre)
        return (self.major, self.minor, self.patch, not self.pre, pre)

    def __lt__(self, other):
        return self.key() < other.key()


def parse(text):
    """Version from text such as `1.2.3`, `v1.2.3` or `1.2.3-beta.2`."""
    m = PATTERN.match(text.strip())
    if not m:
        raise VersionError(f"not a version: {text!r}")
    major, minor, patch = (int(g) for g in m.group(1, 2, 3))
    pre = tuple(int(p) if p.isdigit() else p for p in m.group(4).split(".")) if m.group(4) else ()
    return Version(major, minor, patch, pre)


def bump(version, part):
    """The next version: `major`, `minor` or `patch`; a pre-release bumps to its own release."""
    if part == "major":
        return Version(version.major + 1, 0, 0)
    if part == "minor":
        return Version(version.major, version.minor + 1, 0)
    if part == "patch":
        if version.pre:
            return Version(version.major, version.minor, version.patch)
        return Version(version.major, version.minor, version.patch + 1)
    raise VersionError(f"unknown part {part!r}")


def bounds(spec):
    """The (lowest allowed, first not allowed) pair for a caret or tilde range."""
    low = parse(spec[1:])
    if spec[0] == "~":
        return low, Version(low.major, low.minor + 1, 0)
    if low.major > 0:
        return low, Version(low.major + 1, 0, 0)
    return low, Version(0, low.minor + 1, 0)


def satisfies(version, spec):
    """Whether `version` (text or Version) is in the range `spec`; every space-separated part must hold."""
    v = parse(version) if isinstance(version, str) else version
    for part in spec.split():
        if part[0] in "^~":
            low, high = bounds(part)
            ok = low <= v < high
        elif part.startswith(">="):
            ok = v >= parse(part[2:])
        elif part.startswith("<"):
            ok = v < parse(part[1:])
        elif part.startswith("="):
            ok = v == parse(part[1:])
        else:
            ok = v == parse(part)
        if not ok:
            return False
    return True


def best_match(available, spec, allow_pre=False):
    """The highest version of `available` that satisfies `spec`, or None; pre-releases only on request."""
    candidates = [parse(a) for a in available]
    ok = [v for v in candidates if satisfies(v, spec) and (allow_pre or not v.pre)]
    return str(max(ok)) if ok else None


def changelog_order(versions):
    """Version strings newest first, as the changelog lists them."""
    return [str(v) for v in sorted((parse(t) for t in versions), reverse=True)]
