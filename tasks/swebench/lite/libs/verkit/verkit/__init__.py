"""verkit: semantic versions (semver.org 2.0.0) and simple version ranges."""

from verkit.version import Version, parse
from verkit.spec import Spec, satisfies

__all__ = ["Version", "parse", "Spec", "satisfies"]
