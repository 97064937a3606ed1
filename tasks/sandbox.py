"""A sandbox for untrusted shell commands: bubblewrap over a read-only Debian root filesystem.

One `Sandbox` is one episode. Its writable state is an overlayfs upper directory on a file
system of bounded size and inode count (the disk quota; a tmpfs, or an ext4 image for layers of
many files: `tasks.sandbox_layer`), created fresh per episode and mounted inside a
private mount namespace held by one small process per episode (``unshare --mount``), which
then enters a new user namespace whose ids 0-65535 map to unprivileged host ids
(`tasks.sandbox_idmap`). Each command joins both (``nsenter --mount --user``), so no mount is
visible on the host, and every sandboxed process, root inside included, is an unprivileged
user to the host kernel: its capabilities hold only in the sandbox's own namespaces.

Each command runs under ``bwrap`` with new pid, network (loopback only), IPC, UTS and cgroup
namespaces, a new session, ``--die-with-parent``, the kernel surfaces container runtimes
protect read-only or masked (`_READ_ONLY_PROC`, `_MASKED`, an empty read-only /sys), the
seccomp filter of `tasks.sandbox_seccomp` (Docker's default denials: file handles, mounts,
namespaces, modules, keyrings, bpf, perf, ...) and rlimits (bash ``ulimit`` before the
command: CPU, data (private writable memory), file size, open files, processes). Agent
commands run as the
``agent`` user (uid `AGENT_UID`, every capability dropped, no new privileges);
``user="root"`` (setup, build and verifier steps, and tasks that expect root) runs as uid 0
of the namespace with `ROOT_CAPABILITIES`. A wall-clock limit kills the whole process tree
(the pid namespace dies with its init). Output is stdout and stderr interleaved, head and
tail kept.

Threat model: the agent, the task author (its build steps and verifier) and the patch (code a
grader runs) are all untrusted, so none of these protections depends on who runs a command.

`snapshot()`/`restore()` copy the upper directory (whiteouts and opaque-directory xattrs
included), so a tree rollout can branch from a mid-episode state. Extra read-only layers
(``layers=``, e.g. a task's environment built once) sit between the episode layer and the
rootfs. Root filesystems come from `tasks.sandbox_rootfs` (re-exported here).

Requires root (overlay mounts and the id maps), ``bwrap`` (Debian ``bubblewrap``),
``unshare``/``nsenter``/``mount`` (util-linux), overlayfs and libseccomp (PyPI ``pyseccomp``);
`sandbox_available` says why not.
"""

from __future__ import annotations

import itertools
import logging
import os
import shutil
import subprocess
import tempfile
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tasks.sandbox_egress import EGRESS_DIR, EGRESS_SOCKET, EgressProxy, check_network_policy
from tasks.sandbox_egress import egress_env, egress_prologue
from tasks.sandbox_gc import make_sandbox_root, register_process
from tasks.sandbox_idmap import IdMap, sandbox_id_map, write_maps
from tasks.sandbox_files import read_confined_file
from tasks.sandbox_layer import PINNED_INODES, layer_kind, mount_layer
from tasks.sandbox_memory import MemoryBound, memory_mechanism
from tasks.sandbox_process import (Output, await_namespace_end, feed, kill_group, kill_tree,
                                   pump, read_info)
from tasks.sandbox_process import init_pid as init_pid_of
from tasks.sandbox_rootfs import (
    AGENT_HOME,
    AGENT_UID,
    BASE_RECIPE,
    RootfsRecipe,
    SandboxError,
    build_rootfs,
    rootfs_cache_dir,
)
from tasks.sandbox_seccomp import compiled_filter, load_profile

__all__ = [
    "AGENT_UID", "IdMap", "containment", "sandbox_id_map", "BASE_RECIPE", "DEFAULT_PATH", "Bind",
    "CommandResult", "Limits", "RootfsRecipe", "Sandbox",
    "SandboxError", "SandboxSnapshot", "build_rootfs", "rootfs_cache_dir", "sandbox_available",
]

logger = logging.getLogger(__name__)

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SESSION_GRACE_S = 0.2
"""How long a session command's output is still read after the command exits (what it wrote
last; a background process that keeps the output open is not waited for)."""
_BWRAP = shutil.which("bwrap") or "/usr/bin/bwrap"
_NSENTER = shutil.which("nsenter") or "/usr/bin/nsenter"
"""The host's launchers, by absolute path: every command starts in the holder's mount
namespace, where they and their libraries are the host's, never the sandbox's."""
_NAMESPACES = ("--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
               "--unshare-cgroup")
_HOLD = (  # $1 the sandbox root, $2 the number n of lower layers, then the n lower layers,
    # then (host, mount point, ro|rw) per bind; then a user namespace, mapped by us. The
    # overlay is mounted with paths relative to the sandbox root (lowers bound there first), so
    # the mount table the sandbox can read names no host path
    'cd "$1" && n="$2" && shift 2 && lowers= && i=0 && while [ "$i" -lt "$n" ]; do '
    'mkdir -p "lower-$i" && mount --bind "$1" "lower-$i" && lowers="$lowers${lowers:+:}lower-$i"'
    ' && i=$((i + 1)) && shift || exit 1; done && mount -t overlay overlay -o '
    '"lowerdir=$lowers,upperdir=layer/upper,workdir=layer/work" layer/merged && '
    'while [ $# -gt 0 ]; do { if [ -d "$1" ]; then mkdir -p "$2"; else touch "$2"; fi; } && '
    'mount --bind "$1" "$2" && mount -o "remount,bind,$3" "$2" && shift 3 || exit 1; done && '
    "exec unshare --user -- /bin/sh -c 'echo ready && exec cat >/dev/null'")
_MOUNT_HOLD = (  # the probe: the same mounts, then bwrap in the user namespace
    'mount -t overlay overlay -o "lowerdir=$1,upperdir=$2,workdir=$3" "$4" && exec unshare '
    '--user --map-root-user -- "$5" --ro-bind / / "$6" true')
ROOT_CAPABILITIES = ("CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD",
                     "CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP",
                     "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE")
"""What ``user="root"`` keeps: Docker's default capability set. They are capabilities of the
sandbox's own user namespace, effective only over its namespaces and files owned by its ids."""
_READ_ONLY_PROC = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")
_MASKED = ("/proc/kcore", "/proc/keys", "/proc/key-users", "/proc/timer_list",
           "/proc/timer_stats", "/proc/sched_debug", "/proc/latency_stats", "/proc/acpi",
           "/proc/asound", "/proc/scsi", "/proc/interrupts", "/proc/kallsyms", "/proc/kmsg",
           "/proc/sysvipc")
"""Docker/moby's default masked and read-only paths; /sys is an empty read-only tmpfs."""


@dataclass(frozen=True)
class Limits:
    """Per-command limits. Memory is the data limit (RLIMIT_DATA) of each process: the private
    writable memory it may hold (heap, anonymous and private file mappings), not the address
    space it reserves. Docker's limit counts resident memory, so runtimes that reserve far more
    than they use (OCaml 5's minor heaps, over 16 GiB; JVM and Go heaps) start here as there,
    while an allocation past the limit fails."""

    wall_s: float = 60.0
    """Wall-clock seconds per command; then every process of the command is killed."""
    cpu_s: int = 120
    memory_bytes: int = 4 << 30
    file_size_bytes: int = 512 << 20
    open_files: int = 1024
    processes: int = 512
    """RLIMIT_NPROC of the agent uid (counts every process of that uid on the host)."""
    output_bytes: int = 64 << 10
    """Output kept per command: the first and last half of this; the cut is stated."""
    disk_bytes: int = 2 << 30
    """Size of the episode's writable layer (writes beyond it fail with ENOSPC)."""
    inodes: int = PINNED_INODES
    """Files and directories the writable layer may hold. Up to `PINNED_INODES` the layer is a
    tmpfs (``nr_inodes``), whose files each pin about 2 KiB of host kernel memory through the
    overlay (measured: 16,384 empty files, +34 MiB of slab), so a flood pins at most about 17
    MiB; above it an ext4 image (`tasks.sandbox_layer`), whose inodes the kernel only caches
    (reclaimable), for sandboxes that hold repositories or dependency trees."""

    def enforcement(self) -> dict[str, str]:
        """How each limit is enforced here (rlimits: no delegated cgroup v2 subtree is used)."""
        return {"wall_s": "pid namespace killed at the deadline", "cpu_s": "RLIMIT_CPU",
                "memory_bytes": f"RLIMIT_DATA per process; {memory_mechanism()} for every "
                "process of the sandbox together, shared memory and /dev/shm included",
                "processes": "RLIMIT_NPROC per uid "
                "of the sandbox's user namespace", "file_size_bytes": "RLIMIT_FSIZE",
                "open_files": "RLIMIT_NOFILE", "disk_bytes": f"{layer_kind(self.inodes)} size",
                "inodes": f"{layer_kind(self.inodes)} inode count"}


@dataclass(frozen=True)
class CommandResult:
    """What `Sandbox.run` returns. `exit_code` is None when the command was killed."""

    exit_code: int | None
    output: str
    timed_out: bool
    truncated: bool
    wall_s: float
    killed_by: str | None = None
    """Which sandbox bound stopped a process of the command (the memory bound), if one did."""

    @property
    def status(self) -> str:
        """``ok``, ``failed`` (non-zero exit) or ``timeout``."""
        if self.timed_out:
            return "timeout"
        return "ok" if self.exit_code == 0 else "failed"


@dataclass(frozen=True)
class Bind:
    """A host path made visible at `target` inside the sandbox (read-only unless writable)."""

    host: Path
    target: str
    writable: bool = False


@dataclass(frozen=True)
class SandboxSnapshot:
    """A copy of an episode's writable layer (a directory owned by the sandbox that made it)."""

    path: Path
    sandbox_id: int


def containment() -> dict[str, str]:
    """What contains every sandboxed process here, for a suite's provenance."""
    ids = sandbox_id_map()
    return {"user_namespace": f"ids 0-{ids.count - 1} -> host {ids.host_base}-"
                              f"{ids.host_base + ids.count - 1}",
            "seccomp": load_profile().label,
            "limits": f"rlimits; {memory_mechanism()} memory bound per sandbox; layer size and "
                      f"inode count (a tmpfs up to {PINNED_INODES} inodes, else "
                      f"{layer_kind(PINNED_INODES + 1)}), /dev/shm on the layer"}


def sandbox_available() -> str | None:
    """None when sandboxes can run here, else the reason in one line."""
    if os.name != "posix" or not Path("/proc/filesystems").exists():
        return "the sandbox needs Linux"
    for tool, package in (("bwrap", "bubblewrap"), ("unshare", "util-linux"),
                          ("nsenter", "util-linux"), ("mount", "mount")):
        if shutil.which(tool) is None:
            return (f"{tool} is not installed (Debian package {package}; "
                    "see .ci/system-packages)")
    if os.geteuid() != 0:
        return "the sandbox needs root (overlay mounts and the switch to an unprivileged uid)"
    if "overlay" not in Path("/proc/filesystems").read_text():
        return "the kernel has no overlayfs (modprobe overlay)"
    return _probe_once()


_PROBE: list[str | None] = []


def _probe_once() -> str | None:
    """Mount an overlay in a private mount namespace and run bwrap over it, once per process."""
    if _PROBE:
        return _PROBE[0]
    with tempfile.TemporaryDirectory(prefix="harness-probe-") as tmp:
        for name in ("lower", "upper", "work", "merged"):
            Path(tmp, name).mkdir()
        command = ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
                   _MOUNT_HOLD,
                   "sh", f"{tmp}/lower", f"{tmp}/upper", f"{tmp}/work", f"{tmp}/merged",
                   "bwrap", "--unshare-net"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=30)
        reason = None
        if done.returncode != 0:
            detail = (done.stderr.strip().splitlines() or ["no message"])[-1]
            reason = f"overlay mount or bwrap failed here: {detail}"
    _PROBE.append(reason)
    return reason


def _require_available() -> None:
    reason = sandbox_available()
    if reason is not None:
        raise SandboxError(reason)


_IDS = itertools.count(1)


def _copy_tree(source: Path, target: Path, what: str) -> None:
    """``cp -a`` of `source` to `target`; a failure (a full disk) is a SandboxError naming
    what ``cp`` said."""
    done = subprocess.run(["cp", "-a", "--reflink=auto", str(source), str(target)],
                          capture_output=True, text=True, errors="replace")
    if done.returncode != 0:
        raise SandboxError(f"{what}: copying the layer failed: {done.stderr.strip()[-300:]}")


class Sandbox:
    """One episode: a fresh writable layer over a read-only rootfs (see the module docstring).

    `layers`: read-only directories stacked over `rootfs` (topmost first), e.g. a task's
    environment layer. `workdir` is created owned by the agent. `binds` are host paths made
    visible inside (read-only unless `Bind.writable`). `env` is added to every command's
    environment. `network`: ``none`` (loopback only) or ``registries`` (the allow-listed hosts
    of `egress`, a started `EgressProxy`, through its bound socket; `tasks.sandbox_egress`).
    `session`: the episode's commands share one pid, network, IPC and UTS namespace, as the
    commands of a container's shell do (a server a command starts in the background keeps
    running and serving the later commands); a command's output is read until it exits (and
    `SESSION_GRACE_S` more), not until every process holding its output closes it; at its
    wall-clock limit its process group is killed. Every other protection is the same.
    Use as a context manager, or call `close()`.
    """

    def __init__(self, rootfs: Path, *, limits: Limits = Limits(), workdir: str = "/work",
                 binds: Sequence[Bind] = (), env: Mapping[str, str] | None = None,
                 layers: Sequence[Path] = (), network: str = "none",
                 egress: EgressProxy | None = None, session: bool = False):
        self.network, self.egress = check_network_policy(network, egress), egress
        self.session = session
        self._session_init: int | None = None
        _require_available()
        self.rootfs = Path(rootfs)
        if not (self.rootfs / "bin" / "sh").exists() and not (self.rootfs / "usr/bin/sh").exists():
            raise SandboxError(f"{self.rootfs} is not a root filesystem (no /bin/sh)")
        self.limits, self.workdir = limits, workdir
        self.binds, self.env = tuple(binds), dict(env or {})
        if self.network == "registries" and egress is not None:  # the proxy's socket folder
            self.binds += (Bind(egress.socket_dir, EGRESS_DIR),)
        self.layers = tuple(Path(p) for p in layers)
        self.id = next(_IDS)
        self.ids = sandbox_id_map()
        self._root = make_sandbox_root(self.id)  # owner recorded: tasks.sandbox_gc
        self._root.chmod(0o711)  # the sandbox's ids bind the merged tree from inside it
        self._layer = self._root / "layer"
        self._layer.mkdir()
        self.layer_kind = mount_layer(self._root, self._layer, disk_bytes=limits.disk_bytes,
                                      inodes=limits.inodes)
        self._shm = self._layer / "shm"  # /dev/shm of every command: on the layer, in quota
        self._shm.mkdir()
        os.chown(self._shm, self.ids.host(0), self.ids.host(0))
        os.chmod(self._shm, 0o1777)
        self._memory = MemoryBound(limits.memory_bytes)
        self._holder: list[subprocess.Popen] = []
        self._session_pids: list[int] = []  # the session's pid 1, awaited when it ends
        self._finalizer = weakref.finalize(self, _cleanup, self._root, self._layer,
                                           self._holder, self._session_pids, self._memory)
        self._snapshots = 0
        self._fresh_layer()
        self._hold()

    # ---- layer bookkeeping ------------------------------------------------------------------
    @property
    def upper(self) -> Path:
        return self._layer / "upper"

    def _fresh_layer(self) -> None:
        for name in ("upper", "work", "merged"):
            path = self._layer / name
            if path.exists():
                shutil.rmtree(path)
            path.mkdir(mode=0o755)
        os.chown(self.upper, self.ids.host(0), self.ids.host(0))
        self._make_dir(self.workdir, AGENT_UID)

    def _hold(self) -> None:
        """Start the process that holds the episode's mount namespace with the overlay mounted
        (it exits when its stdin closes: at `close`, `restore` or when this process dies)."""
        lowers = [str(p) for p in (*self.layers, self.rootfs)]
        assert self._layer == self._root / "layer"  # _HOLD names its parts relative to the root
        holder = subprocess.Popen(
            # slave: the host's unmounts (another sandbox's closed layer) reach this namespace,
            # so it pins no memory of theirs; its own mounts never reach the host
            ["unshare", "--mount", "--propagation", "slave", "--", "/bin/sh", "-c", _HOLD,
             "sh", str(self._root), str(len(lowers)), *lowers, *itertools.chain.from_iterable(
                 (str(bind.host), str(self._bind_point(i)), "rw" if bind.writable else "ro")
                 for i, bind in enumerate(self.binds))],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert holder.stdout is not None and holder.stderr is not None
        if holder.stdout.readline().strip() != b"ready":
            message = holder.stderr.read().decode(errors="replace").strip()
            holder.wait()
            raise SandboxError(f"cannot mount the episode layer: {message}")
        self._holder.append(holder)
        register_process(self._root, holder.pid)
        write_maps(holder.pid, self.ids)
        if self.session:
            self._start_session()

    def _start_session(self) -> None:
        """Start the episode's shared namespaces: bwrap's reaper as their pid 1 and a process
        that waits on its stdin (closed at `close` and `restore`, which ends them all), with
        the egress forwarder where the sandbox reaches the registries."""
        info_read, info_write = os.pipe()
        seccomp_fd = os.open(seccomp_program(), os.O_RDONLY | os.O_CLOEXEC)
        try:
            argv = self._launch("echo ready && exec cat >/dev/null", "/", {}, "root",
                                info_write, seccomp_fd)
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, start_new_session=True,
                                    pass_fds=(info_write, seccomp_fd))
        finally:
            os.close(info_write)
            os.close(seccomp_fd)
        with os.fdopen(info_read, "rb") as info:
            init = init_pid_of(read_info(info))
        self._holder.append(proc)
        assert proc.stdout is not None
        started = proc.stdout.readline().strip()  # its root and mounts are in place
        if init is None or started != b"ready":
            raise SandboxError(f"cannot start the episode's session: {started[-300:]!r}")
        self._session_init = init
        self._session_pids.append(init)

    def _bind_point(self, index: int) -> Path:
        """Where bind `index` is mounted in the holder's namespace: host root binds it there,
        so the sandbox's ids need no access to the host path's parents (e.g. 0700 folders)."""
        return self._root / f"bind-{index}"

    def _release(self) -> None:
        self._session_init = None
        _stop_all(self._holder, self._session_pids)

    def _make_dir(self, inside: str, uid: int) -> None:
        """Create `inside` (and missing parents) in the upper layer, owned by `uid`."""
        parts = Path(inside.lstrip("/")).parts
        for i in range(1, len(parts) + 1):
            rel = Path(*parts[:i])
            if (self.upper / rel).exists():
                continue
            lower = next((base / rel for base in (*self.layers, self.rootfs)
                          if (base / rel).is_dir()), None)
            mode = (lower.stat().st_mode & 0o7777) if lower is not None else 0o755
            owner = ((lower.stat().st_uid, lower.stat().st_gid) if lower is not None
                     else (self.ids.host(0), self.ids.host(0)))
            (self.upper / rel).mkdir(mode=mode)
            os.chmod(self.upper / rel, mode)
            os.chown(self.upper / rel, *owner)
            if lower is not None:  # same times as below: observations do not show the clock
                os.utime(self.upper / rel, ns=(lower.stat().st_atime_ns, lower.stat().st_mtime_ns))
        os.chown(self.upper / Path(*parts), self.ids.host(uid), self.ids.host(uid))

    # ---- commands ---------------------------------------------------------------------------
    def _bwrap(self, command: str, cwd: str, env: Mapping[str, str], user: str,
               info_fd: int | None, seccomp_fd: int, pidns_fd: int | None) -> list[str]:
        joined = self._session_init is not None  # the session's namespaces, entered already
        namespaces = () if joined else (*_NAMESPACES, "--hostname", "sandbox")
        info = ["--info-fd", str(info_fd)] if info_fd is not None else []
        # every command, a session's too, gets its own mount namespace over the episode's
        # tree; /proc is the (session's or its own) pid namespace's; /dev/shm is a folder of
        # the episode layer, so shared memory files count in its disk quota (and a session's
        # commands share them)
        mounts = ("--bind", str(self._layer / "merged"), "/", "--dev", "/dev", "--proc", "/proc",
                  *kernel_surfaces(), "--bind", str(self._shm), "/dev/shm")
        pidns = ["--pidns", str(pidns_fd)] if pidns_fd is not None else []
        args = [_BWRAP, *info, *pidns, "--seccomp", str(seccomp_fd), *mounts, *namespaces,
                "--new-session", "--die-with-parent", "--clearenv", "--chdir", cwd]
        for i, bind in enumerate(self.binds):
            args += ["--bind" if bind.writable else "--ro-bind", str(self._bind_point(i)),
                     bind.target]
        if self.network == "registries" and self.egress is not None:  # variables, forwarder
            env = {**egress_env(self.egress.forward_port), **env}
            if not joined:  # a session's forwarder was started with it
                command = egress_prologue(self.egress.forward_port, EGRESS_SOCKET) + command
        home = "/root" if user == "root" else AGENT_HOME
        merged_env = {"PATH": DEFAULT_PATH, "HOME": home, "USER": user, "LOGNAME": user,
                      "LANG": "C.UTF-8", "TERM": "dumb", "SHELL": "/bin/bash",
                      **self.env, **env}
        for key, value in merged_env.items():
            args += ["--setenv", key, value]
        lim = self.limits
        script = (f"ulimit -HS -t {lim.cpu_s} -d {lim.memory_bytes >> 10} "
                  f"-f {lim.file_size_bytes >> 10} -n {lim.open_files} -u {lim.processes}\n"
                  + command)
        if user == "root":
            kept = ",".join("+" + cap[4:].lower() for cap in ROOT_CAPABILITIES)
            args += ["--cap-drop", "ALL", *itertools.chain.from_iterable(
                ("--cap-add", cap) for cap in (*ROOT_CAPABILITIES, "CAP_SETPCAP")), "--",
                "setpriv", f"--inh-caps=-all,{kept}", f"--ambient-caps=-all,{kept}",
                f"--bounding-set=-all,{kept}", "--", "/bin/bash", "-c", script]
        elif user == "agent":
            args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--",
                     "setpriv", f"--reuid={AGENT_UID}", f"--regid={AGENT_UID}",
                     "--clear-groups", "--inh-caps=-all", "--bounding-set=-all",
                     "--", "/bin/bash", "-c", script]
        else:
            raise SandboxError(f"unknown sandbox user {user!r}; expected 'agent' or 'root'")
        return args

    def _launch(self, command: str, cwd: str, env: Mapping[str, str], user: str,
                info_fd: int | None, seccomp_fd: int, pidns_fd: int | None = None) -> list[str]:
        """The host argv of one command: into the memory cgroup, then the holder's user and
        mount namespaces (where the host's tree is, so ``bwrap`` and its libraries are the
        host's: nothing the sandbox can write launches a command), and a session's pid,
        network, IPC, UTS and cgroup namespaces."""
        if not self._holder or self._holder[0].poll() is not None:
            raise SandboxError("the episode layer is not mounted (its holder process exited)")
        holder, init = self._holder[0].pid, self._session_init
        # a session's pid namespace is joined by bwrap (``--pidns``), so that it mounts that
        # namespace's own /proc (joined through nsenter, bwrap binds the host's /proc)
        shared = [f"--{ns}=/proc/{init}/ns/{ns}" for ns in ("net", "ipc", "uts",
                                                            "cgroup")] if init else []
        return [*self._memory.launcher(), _NSENTER, f"--user=/proc/{holder}/ns/user",
                f"--mount=/proc/{holder}/ns/mnt", *shared,
                "--", *self._bwrap(command, cwd, env, user, info_fd, seccomp_fd, pidns_fd)]

    def run(self, command: str, *, timeout_s: float | None = None, cwd: str | None = None,
            env: Mapping[str, str] | None = None, stdin: str | bytes | None = None,
            user: str = "agent") -> CommandResult:
        """Run `command` with ``bash -c`` inside the sandbox and wait for it (see `Limits`)."""
        return self._run_raw(command, timeout_s=timeout_s, cwd=cwd, env=env, stdin=stdin,
                             user=user, keep=self.limits.output_bytes)[1]

    def _run_raw(self, command: str, *, timeout_s: float | None, cwd: str | None,
                 env: Mapping[str, str] | None, stdin: str | bytes | None, user: str,
                 keep: int) -> tuple[Output, CommandResult]:
        self._check_open()
        wall = self.limits.wall_s if timeout_s is None else timeout_s
        data = stdin.encode() if isinstance(stdin, str) else stdin
        joined = self._session_init is not None  # no namespace of its own to wait for
        info_read, info_write = os.pipe() if not joined else (None, None)
        seccomp_fd = os.open(seccomp_program(), os.O_RDONLY | os.O_CLOEXEC)
        pidns_fd = (os.open(f"/proc/{self._session_init}/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
                    if joined else None)
        started = time.perf_counter()
        try:
            argv = self._launch(command, cwd or self.workdir, env or {}, user, info_write,
                                seccomp_fd, pidns_fd)
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE if data is not None else
                                    subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, start_new_session=True,
                                    pass_fds=tuple(fd for fd in (info_write, seccomp_fd,
                                                                 pidns_fd) if fd is not None))
        finally:
            for fd in (info_write, seccomp_fd, pidns_fd):
                if fd is not None:
                    os.close(fd)
        init_pid = None
        if info_read is not None:
            with os.fdopen(info_read, "rb") as info:
                init_pid = init_pid_of(read_info(info))
        if data is not None:
            feed(proc, data)
        output = Output(keep)
        kill = (lambda: kill_tree(proc)) if joined else (lambda: kill_group(proc))
        stop_watch = self._memory.watch(proc.pid, kill)
        try:
            timed_out = pump(proc, output, started + wall, kill=kill,
                             exit_grace_s=SESSION_GRACE_S if joined else None)
        except BaseException:  # interrupted (a signal, a cancelled thread): end the command now
            kill()
            raise
        finally:
            stop_watch()
        if not joined:
            await_namespace_end(init_pid)
        code = None if timed_out else proc.returncode
        text, truncated = output.text()
        killed_by = f"memory bound ({self._memory.describe()})" if self._memory.killed() else None
        return output, CommandResult(code, text, timed_out, truncated,
                                     time.perf_counter() - started, killed_by)

    # ---- files ------------------------------------------------------------------------------
    def write_file(self, path: str, data: bytes | str, *, mode: int = 0o644,
                   owner: str = "root") -> None:
        """Write `data` to `path` inside the sandbox (parents created), owned by `owner`."""
        payload = data.encode() if isinstance(data, str) else data
        quoted = _quote(path)
        chown = f" && chown {AGENT_UID}:{AGENT_UID} {quoted}" if owner == "agent" else ""
        script = (f'mkdir -p "$(dirname {quoted})" && cat > {quoted} && '
                  f"chmod {mode:o} {quoted}{chown}")
        self._checked(script, stdin=payload, what=f"write {path}")

    def read_file(self, path: str) -> bytes:
        """The bytes of `path` inside the sandbox, read by the host through its own file
        descriptors (`tasks.sandbox_files`: nothing of the sandbox's runs, a symbolic link on
        the way is refused); at most the file size limit."""
        self._check_open()
        if not self._holder or self._holder[0].poll() is not None:
            raise SandboxError("the episode layer is not mounted (its holder process exited)")
        seen = f"/proc/{self._holder[0].pid}/root"  # the holder's mounts: the tree and binds
        for i, bind in sorted(enumerate(self.binds), key=lambda item: -len(item[1].target)):
            target = bind.target.rstrip("/")
            if path == target or path.startswith(target + "/"):
                return read_confined_file(Path(seen + str(self._bind_point(i))),
                                          "/" + path[len(target):].lstrip("/"),
                                          limit=self.limits.file_size_bytes)
        return read_confined_file(Path(seen + str(self._layer / "merged")), path,
                                  limit=self.limits.file_size_bytes)

    def copy_in(self, host_path: Path, path: str, *, owner: str = "root") -> None:
        """Copy a host file or directory tree to `path` inside the sandbox."""
        host_path = Path(host_path)
        if not host_path.exists():
            raise SandboxError(f"copy_in: {host_path} does not exist")
        if host_path.is_file():
            self.write_file(path, host_path.read_bytes(), mode=host_path.stat().st_mode & 0o777,
                            owner=owner)
            return
        archive = subprocess.run(["tar", "-C", str(host_path), "--numeric-owner", "-cf", "-",
                                  "."], capture_output=True, check=True).stdout
        chown = (f" && chown -R {AGENT_UID}:{AGENT_UID} {_quote(path)}" if owner == "agent"
                 else f" && chown -R 0:0 {_quote(path)}")
        self._checked(f"mkdir -p {_quote(path)} && tar -C {_quote(path)} -xf - --no-same-owner"
                      f"{chown}", stdin=archive, what=f"copy {host_path} to {path}")

    def _checked(self, script: str, *, stdin: bytes, what: str) -> None:
        result = self.run(script, timeout_s=120, cwd="/", stdin=stdin, user="root")
        if result.exit_code != 0:
            raise SandboxError(f"cannot {what} in the sandbox: {result.output.strip()[-500:]}")

    # ---- state ------------------------------------------------------------------------------
    def snapshot(self) -> SandboxSnapshot:
        """A copy of the writable layer; `restore` brings it back exactly."""
        self._check_open()
        self._snapshots += 1
        target = self._root / f"snapshot-{self._snapshots}"
        subprocess.run(["cp", "-a", "--reflink=auto", str(self.upper), str(target)],
                       check=True, capture_output=True)
        return SandboxSnapshot(target, self.id)

    def restore(self, snapshot: SandboxSnapshot) -> None:
        """Replace the writable layer by `snapshot` (taken from this sandbox)."""
        self._check_open()
        if snapshot.sandbox_id != self.id or not snapshot.path.is_dir():
            raise SandboxError("restore: the snapshot is not from this open sandbox")
        self._release()
        for name in ("upper", "work"):
            shutil.rmtree(self._layer / name)
        for entry in self._shm.iterdir():  # the session's shared memory ended with it
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
        _copy_tree(snapshot.path, self.upper, "restore")
        (self._layer / "work").mkdir()
        self._hold()

    def export_layer(self, target: Path) -> None:
        """Copy the writable layer to `target` (a new directory), e.g. to use it as a
        read-only `layers` entry of later sandboxes."""
        _copy_tree(self.upper, target, "export_layer")

    def layer_bytes(self) -> int:
        """Bytes used on the episode's layer."""
        usage = shutil.disk_usage(self._layer)
        return usage.used

    def _check_open(self) -> None:
        if not self._finalizer.alive:
            raise SandboxError("the sandbox is closed")

    def close(self) -> None:
        """Unmount and remove the writable layer and every snapshot."""
        self._finalizer()

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_SURFACES: list[str] = []


def kernel_surfaces() -> list[str]:
    """bwrap arguments that make `_READ_ONLY_PROC` read-only and mask `_MASKED` (the paths
    this kernel has; a bind needs its target to exist), and mount /sys as an empty,
    read-only tmpfs."""
    if not _SURFACES:
        args = []
        for path in _READ_ONLY_PROC:
            if os.path.exists(path):
                args += ["--ro-bind", path, path]
        for path in _MASKED:
            if os.path.isdir(path):
                args += ["--tmpfs", path, "--remount-ro", path]
            elif os.path.exists(path):
                args += ["--ro-bind", "/dev/null", path]
        _SURFACES.extend(args + ["--tmpfs", "/sys", "--remount-ro", "/sys"])
    return _SURFACES


_PROGRAM: list[Path] = []


def seccomp_program() -> Path:
    """The compiled seccomp program of `tasks.sandbox_seccomp` (compiled once per process)."""
    if not _PROGRAM:
        _PROGRAM.append(compiled_filter())
    return _PROGRAM[0]


def _stop(holder: subprocess.Popen) -> None:
    for stream in (holder.stdin, holder.stdout, holder.stderr):
        if stream is not None:
            stream.close()
    try:
        holder.wait(timeout=10)
    except subprocess.TimeoutExpired:
        holder.kill()
        holder.wait()


def _stop_all(holders: list[subprocess.Popen], session_pids: list[int]) -> None:
    """Stop the holders, the session first (its namespaces end with it), and wait until the
    session's pid 1 is gone: then no process it held is left."""
    while holders:
        _stop(holders.pop())
    while session_pids:
        await_namespace_end(session_pids.pop())


def _cleanup(root: Path, layer: Path, holders: list[subprocess.Popen],
             session_pids: list[int], memory: MemoryBound) -> None:
    _stop_all(holders, session_pids)
    memory.close()
    subprocess.run(["umount", "-l", str(layer)], capture_output=True)
    shutil.rmtree(root, ignore_errors=True)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"
