"""Version ranges: comma-separated clauses such as ``>=1.2.0, <2.0.0``, ``^1.4.0``, ``~1.4.2``."""

import re

from verkit.version import Version, parse

_CLAUSE = re.compile(r"^(?P<op>>=|<=|==|!=|>|<|\^|~)?\s*(?P<version>\S+)$")


def _caret_upper(version):
    # ^1.2.3 := >=1.2.3 <2.0.0; ^0.2.3 := <0.3.0; ^0.0.3 := <0.0.4
    if version.major > 0:
        return Version(version.major + 1, 0, 0)
    if version.minor > 0:
        return Version(0, version.minor + 1, 0)
    return Version(0, 0, version.patch + 1)


class Spec:
    """A conjunction of clauses; `contains` says whether a version satisfies all of them."""

    def __init__(self, text):
        self.text = text
        self.clauses = []
        for raw in text.split(","):
            raw = raw.strip()
            if not raw:
                continue
            match = _CLAUSE.match(raw)
            if match is None:
                raise ValueError(f"bad clause {raw!r}")
            op = match.group("op") or "=="
            self.clauses.append((op, parse(match.group("version"))))

    def _check(self, op, bound, version):
        if op == "==":
            return version == bound
        if op == "!=":
            return version != bound
        if op == ">=":
            return version >= bound
        if op == "<=":
            return version <= bound
        if op == ">":
            return version > bound
        if op == "<":
            return version < bound
        if op == "^":
            return bound <= version < _caret_upper(bound)
        if op == "~":
            return bound <= version < Version(bound.major, bound.minor + 1, 0)
        raise ValueError(op)

    def contains(self, version):
        if isinstance(version, str):
            version = parse(version)
        if version.is_prerelease and not any(b.is_prerelease for _, b in self.clauses):
            return False  # pre-releases only match ranges that mention one
        return all(self._check(op, bound, version) for op, bound in self.clauses)

    def select(self, versions):
        """The highest of `versions` (strings or `Version`) in the range, or None."""
        matching = [parse(v) if isinstance(v, str) else v for v in versions]
        matching = [v for v in matching if self.contains(v)]
        return max(matching) if matching else None


def satisfies(version, spec):
    """Whether `version` (text or `Version`) satisfies the range text `spec`."""
    return Spec(spec).contains(version)
