"""The sandbox's user namespace: which host ids its ids map to, and files owned accordingly.

Every sandboxed process runs in a user namespace whose ids ``0..65535`` map to a range of
unprivileged host ids (`IdMap`): root inside is host uid ``IdMap.host_base``, the ``agent``
user is ``host_base + AGENT_UID``. Root inside therefore holds capabilities only over its own
namespaces and over files owned by mapped ids; to the host kernel it is an ordinary user
(``/proc/sys`` writes, ``open_by_handle_at``, module loading and the like are refused).

The range is root's subordinate range from ``/etc/subuid`` and ``/etc/subgid`` (the
``newuidmap`` convention) when both give at least 65,536 ids, else `DEFAULT_HOST_BASE`.
Root filesystems and layers are stored with their ownership shifted into the range
(`shift_tree`), so root inside owns ``/usr`` as it does in a container image.
"""

from __future__ import annotations

import functools
import os
import stat
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DEFAULT_HOST_BASE", "ID_COUNT", "IdMap", "host_id_map", "sandbox_id_map", "shift_tree",
           "write_maps"]

ID_COUNT = 65536
"""Ids mapped into every sandbox: 0 (root) to 65535 (nobody, Debian's ``nogroup``)."""
DEFAULT_HOST_BASE = 1_000_000_000
"""The first host id of the range when root has no subordinate range of its own: far above
any account or subordinate range tools allocate (Debian's start at 100,000)."""


@dataclass(frozen=True)
class IdMap:
    """Ids ``0..count-1`` inside map to host ids ``host_base..host_base+count-1``."""

    host_base: int
    count: int = ID_COUNT

    def host(self, inside: int) -> int:
        """The host id of id `inside` of the sandbox."""
        if not 0 <= inside < self.count:
            raise ValueError(f"id {inside} is outside the sandbox's {self.count} mapped ids")
        return self.host_base + inside

    def line(self) -> str:
        """The ``uid_map``/``gid_map`` line of this map."""
        return f"0 {self.host_base} {self.count}\n"


def _subordinate_base(path: Path, names: tuple[str, ...]) -> int | None:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.strip().split(":")
        if len(fields) == 3 and fields[0] in names and fields[1].isdigit() \
                and fields[2].isdigit() and int(fields[2]) >= ID_COUNT and int(fields[1]) > 0:
            return int(fields[1])
    return None


def host_id_map(etc: Path = Path("/etc")) -> IdMap:
    """Root's subordinate range when ``subuid`` and ``subgid`` agree on one, else the default."""
    names = ("root", "0")
    uid_base = _subordinate_base(etc / "subuid", names)
    gid_base = _subordinate_base(etc / "subgid", names)
    if uid_base is not None and uid_base == gid_base:
        return IdMap(uid_base)
    return IdMap(DEFAULT_HOST_BASE)


@functools.cache
def sandbox_id_map() -> IdMap:
    """This machine's map (`host_id_map`), read once per process."""
    return host_id_map()


def shift_tree(root: Path, idmap: IdMap) -> None:
    """Give every entry under `root` (itself included, symlinks not followed) the host ids its
    current ids map to, once per inode (hard links share one). Set-id bits, which ``chown``
    clears, are put back."""
    done: set[tuple[int, int]] = set()

    def shift(path: str) -> None:
        info = os.lstat(path)
        if (info.st_dev, info.st_ino) in done:
            return
        done.add((info.st_dev, info.st_ino))
        os.lchown(path, idmap.host(info.st_uid), idmap.host(info.st_gid))
        if not stat.S_ISLNK(info.st_mode) and info.st_mode & (stat.S_ISUID | stat.S_ISGID):
            os.chmod(path, stat.S_IMODE(info.st_mode))

    shift(str(root))
    for folder, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            shift(os.path.join(folder, name))


def write_maps(pid: int, idmap: IdMap) -> None:
    """Map the user namespace of process `pid` (which has just unshared it): needs root here."""
    for name in ("uid_map", "gid_map"):
        Path(f"/proc/{pid}/{name}").write_text(idmap.line())
