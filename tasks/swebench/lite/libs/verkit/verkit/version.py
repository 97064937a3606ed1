"""Parsing, comparing and bumping semantic versions."""

import re
from functools import total_ordering

_PATTERN = re.compile(
    r"^v?(?P<major>0|[1-9]\d*)\.(?P<minor>0|[1-9]\d*)\.(?P<patch>0|[1-9]\d*)"
    r"(?:-(?P<pre>[0-9A-Za-z.-]+))?(?:\+(?P<build>[0-9A-Za-z.-]+))?$")


def _identifier_key(part):
    # numeric identifiers sort numerically and below alphanumeric ones (semver 11.4)
    return (0, int(part), "") if part.isdigit() else (1, 0, part)


@total_ordering
class Version:
    """A semantic version. Build metadata is kept but ignored when comparing."""

    def __init__(self, major, minor=0, patch=0, prerelease=(), build=()):
        self.major, self.minor, self.patch = int(major), int(minor), int(patch)
        self.prerelease = tuple(prerelease)
        self.build = tuple(build)

    def __str__(self):
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text

    def __repr__(self):
        return f"Version({str(self)!r})"

    def _key(self):
        pre = tuple(_identifier_key(p) for p in self.prerelease)
        # a version without pre-release sorts after every pre-release of it
        return (self.major, self.minor, self.patch, not self.prerelease, pre)

    def __eq__(self, other):
        if not isinstance(other, Version):
            return NotImplemented
        return self._key() == other._key()

    def __lt__(self, other):
        if not isinstance(other, Version):
            return NotImplemented
        return self._key() < other._key()

    def __hash__(self):
        return hash(self._key())

    def bump(self, part):
        """The next `part` ("major", "minor" or "patch") release; lower parts reset to 0."""
        if part == "major":
            return Version(self.major + 1, 0, 0)
        if part == "minor":
            return Version(self.major, self.minor + 1, 0)
        if part == "patch":
            if self.prerelease:
                return Version(self.major, self.minor, self.patch)
            return Version(self.major, self.minor, self.patch + 1)
        raise ValueError(f"unknown part {part!r}")

    @property
    def is_prerelease(self):
        return bool(self.prerelease)


def parse(text):
    """A `Version` from text such as ``1.2.3``, ``v1.2.3-rc.1`` or ``1.2.3+build.5``."""
    match = _PATTERN.match(text.strip())
    if match is None:
        raise ValueError(f"not a semantic version: {text!r}")
    pre = match.group("pre")
    build = match.group("build")
    return Version(match.group("major"), match.group("minor"), match.group("patch"),
                   pre.split(".") if pre else (), build.split(".") if build else ())
