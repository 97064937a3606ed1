"""How DB-Bench's MariaDB processes are contained: bubblewrap, an unprivileged uid, no network.

The agent's SQL reaches the server, so the server is treated as the agent's code: whatever a
statement makes it do (write a log file, create a data directory, load a plugin, open a
connection) must stay inside its own folder. `contained_argv` wraps ``mariadbd`` and
``mariadb-install-db`` in ``bwrap`` with

- a mount namespace holding only ``/usr`` (binaries, libraries, ``/usr/share/mysql``) and the
  dynamic loader's cache and the time zone file of ``/etc``, all read-only; the server's own
  folder at `INSIDE` (its data, socket and temporary folders), the one writable place; an
  empty read-only `PLUGIN_DIR` (no ``/proc``, no ``/sys``, no host ``/tmp``); the root
  remounted read-only;
- new network (loopback only: no interface reaches the host or another machine), pid, IPC,
  UTS and cgroup namespaces, a new session, ``--die-with-parent``;
- the sandbox's seccomp filter (`tasks.sandbox_seccomp`: Docker's default denials, io_uring
  included; InnoDB then falls back to Linux native AIO);
- when the harness runs as root, the uid and gid of the system account `SERVER_ACCOUNT`
  (Debian's ``mariadb-server`` creates ``mysql``; ``nobody`` where it is missing), set by
  ``setpriv`` with every capability dropped and no new privileges, so no process that runs the
  agent's SQL is host root; otherwise the caller's own uid in bwrap's user namespace.

Paths the server reports (``@@datadir``, error texts) are `INSIDE` paths: they name nothing on
the host. The two ``bwrap`` processes around the server (its monitor, and the init of its pid
namespace) stay host root but run no SQL; the server's uid can neither signal nor trace them.

Without ``bwrap`` (Debian ``bubblewrap``, and ``setpriv`` from util-linux when root) the server
does not start: `require_containment` raises one line naming the package.
"""

from __future__ import annotations

import os
import pwd
import shutil
from collections.abc import Sequence
from pathlib import Path

from harness.core import HarnessError

__all__ = ["INSIDE", "PLUGIN_DIR", "SERVER_ACCOUNT", "ContainmentError", "contained_argv",
           "require_containment", "server_ids", "descendant_named"]

INSIDE = "/db"
"""Where the server's folder is mounted in its namespace (the only writable path)."""
PLUGIN_DIR = "/plugins"
"""The server's ``plugin_dir``: an empty read-only folder, so ``INSTALL SONAME`` finds nothing."""
SERVER_ACCOUNT = "mysql"
FALLBACK_ACCOUNT = "nobody"
HOSTNAME = "dbbench"
_ETC = ("/etc/ld.so.cache", "/etc/localtime")
"""The only files of the host's /etc the server sees: the loader's cache (Debian's libraries
are in a multiarch folder the loader finds only through it) and the time zone."""
_TOP_LEVEL = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")


class ContainmentError(HarnessError):
    """The server cannot be contained here (a tool is missing)."""


def server_ids() -> tuple[int, int] | None:
    """(uid, gid) the server runs as when this process is root: `SERVER_ACCOUNT`'s, else
    `FALLBACK_ACCOUNT`'s; None when not root (the server keeps the caller's uid)."""
    if os.geteuid() != 0:
        return None
    for name in (SERVER_ACCOUNT, FALLBACK_ACCOUNT):
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        if entry.pw_uid != 0:
            return entry.pw_uid, entry.pw_gid
    raise ContainmentError(f"no unprivileged account to run MariaDB as (neither "
                           f"{SERVER_ACCOUNT!r} nor {FALLBACK_ACCOUNT!r} exists): install the "
                           f"Debian package mariadb-server, which creates {SERVER_ACCOUNT!r}")


def require_containment() -> None:
    """One `ContainmentError` line when ``bwrap`` (or ``setpriv`` as root) is missing."""
    tools = [("bwrap", "bubblewrap")] + ([("setpriv", "util-linux")] if os.geteuid() == 0
                                         else [])
    missing = [(tool, package) for tool, package in tools if shutil.which(tool) is None]
    if missing:
        names = " and ".join(tool for tool, _ in missing)
        packages = " ".join(package for _, package in missing)
        raise ContainmentError(f"DB-Bench's MariaDB server runs contained and needs {names}: "
                               f"install the Debian package(s) {packages} "
                               f"(apt-get install {packages})")


def _root_links() -> list[str]:
    """The host's top-level links into /usr (merged /usr: /bin -> usr/bin ...), recreated;
    a real top-level folder is bound read-only."""
    args: list[str] = []
    for name in _TOP_LEVEL:
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    return args


def contained_argv(folder: Path, command: Sequence[str], *, seccomp_fd: int | None,
                   ids: tuple[int, int] | None) -> list[str]:
    """The argv running `command` (paths as the server sees them, under `INSIDE`) contained
    as the module docstring says, with `folder` mounted writable at `INSIDE`; `seccomp_fd`:
    an open descriptor of the compiled filter (passed to the child); `ids`: `server_ids`."""
    argv = ["bwrap", "--ro-bind", "/usr", "/usr", *_root_links(), "--dev", "/dev",
            "--perms", "0755", "--dir", "/etc"]
    for path in _ETC:
        if os.path.exists(path):
            argv += ["--ro-bind", path, path]
    argv += ["--perms", "0755", "--dir", PLUGIN_DIR, "--bind", str(folder), INSIDE,
             "--remount-ro", "/", "--unshare-net", "--unshare-pid", "--unshare-ipc",
             "--unshare-uts", "--hostname", HOSTNAME, "--unshare-cgroup",
             "--die-with-parent", "--new-session", "--clearenv", "--chdir", "/",
             "--setenv", "PATH", "/usr/sbin:/usr/bin", "--setenv", "TMPDIR", f"{INSIDE}/tmp",
             "--setenv", "LANG", "C.UTF-8"]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    if ids is None:  # not root: bwrap's user namespace, the caller's uid, no capability
        return [*argv, "--unshare-user", "--", *command]
    uid, gid = ids
    # setpriv needs CAP_SETPCAP to empty the bounding set, CAP_SETUID/SETGID to switch ids
    return [*argv, "--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID",
            "--cap-add", "CAP_SETPCAP", "--", "setpriv", f"--reuid={uid}", f"--regid={gid}",
            "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--",
            *command]


def descendant_named(pid: int, name: str) -> int | None:
    """The host pid of the first descendant of `pid` whose command name is `name` (the server
    inside bwrap's pid namespace), or None."""
    pending = [pid]
    while pending:
        current = pending.pop(0)
        try:
            if current != pid and Path(f"/proc/{current}/comm").read_text().strip() == name:
                return current
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:
            continue
        pending.extend(int(child) for child in children)
    return None
