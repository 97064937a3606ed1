"""The sandbox's seccomp filter: `tasks/sandbox_seccomp.toml` compiled to the BPF program
bubblewrap installs (``--seccomp FD``) right before it runs the command.

The profile is data (one versioned TOML file); this module compiles it with libseccomp through
the `pyseccomp` binding, for the host's architecture, and caches the program beside the root
filesystems under a hash of the profile, so a command only opens a file.
"""

from __future__ import annotations

import errno
import hashlib
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from tasks.sandbox_rootfs import SandboxError, rootfs_cache_dir

__all__ = ["PROFILE_PATH", "SeccompProfile", "compiled_filter", "load_profile"]

PROFILE_PATH = Path(__file__).with_name("sandbox_seccomp.toml")


@dataclass(frozen=True)
class MaskedRule:
    """Deny `syscall` when argument `arg` has any bit of `mask` set."""

    syscall: str
    arg: int
    mask: int


@dataclass(frozen=True)
class SeccompProfile:
    version: int
    errno_name: str
    deny: tuple[str, ...]
    enosys: tuple[str, ...]
    deny_masked: tuple[MaskedRule, ...]
    digest: str

    @property
    def label(self) -> str:
        """How provenance names this profile: ``seccomp@<version>-<digest>``."""
        return f"seccomp@{self.version}-{self.digest}"


def load_profile(path: Path = PROFILE_PATH) -> SeccompProfile:
    raw = path.read_bytes()
    data = tomllib.loads(raw.decode())
    rules = tuple(MaskedRule(r["syscall"], int(r["arg"]), int(r["mask"]))
                  for r in data.get("deny_masked", ()))
    return SeccompProfile(int(data["version"]), str(data.get("errno", "EPERM")),
                          tuple(data.get("deny", ())), tuple(data.get("enosys", ())), rules,
                          hashlib.sha256(raw).hexdigest()[:12])


def _compile(profile: SeccompProfile, target: Path) -> None:
    try:
        import pyseccomp as seccomp
    except (ImportError, OSError) as exc:  # OSError: libseccomp.so.2 missing
        raise SandboxError(f"the sandbox's seccomp filter needs pyseccomp and libseccomp "
                           f"(pip install pyseccomp; Debian libseccomp2): {exc}") from exc
    deny = seccomp.ERRNO(getattr(errno, profile.errno_name))
    sfilter = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    for name in profile.deny:
        _add(seccomp, sfilter, deny, name)
    for name in profile.enosys:
        _add(seccomp, sfilter, seccomp.ERRNO(errno.ENOSYS), name)
    for rule in profile.deny_masked:
        for bit in range(64):  # one rule per bit: "any bit of mask" as OR-ed rules
            if rule.mask >> bit & 1:
                _add(seccomp, sfilter, deny, rule.syscall,
                     seccomp.Arg(rule.arg, seccomp.MASKED_EQ, 1 << bit, 1 << bit))
    staging = target.with_suffix(f".{os.getpid()}.tmp")
    with open(staging, "wb") as handle:
        sfilter.export_bpf(handle)
    os.replace(staging, target)


def _add(seccomp, sfilter, action, name: str, *args) -> None:
    try:
        sfilter.add_rule(action, name, *args)
    except (ValueError, RuntimeError, OSError):
        # A name this architecture does not have (vm86 on x86_64, ...): nothing to deny.
        if seccomp.resolve_syscall(seccomp.Arch.NATIVE, name) >= 0:
            raise


def compiled_filter(profile: SeccompProfile | None = None) -> Path:
    """The BPF program of `profile` (default: the repository's), compiled once and cached."""
    profile = profile or load_profile()
    target = rootfs_cache_dir() / f"seccomp-{profile.version}-{profile.digest}.bpf"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        _compile(profile, target)
    return target
