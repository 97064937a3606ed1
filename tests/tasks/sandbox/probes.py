"""The escape battery: one Python program, run inside a sandbox from any place untrusted code
runs (an agent command, code the verifier runs, a build step, a patch under grading), that
tries every known way out and prints one ``PROBE <name> <contained|ESCAPED> <detail>`` line
each; and the host-side checks that decide, from outside, that nothing changed.

A probe's own verdict is only half the evidence: `HostState` reads the host values each probe
would change (sysctls, a leaked process) before and after, and `assert_contained` requires
both the probe lines and an unchanged host.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PROBES", "PROBE_SCRIPT", "probe_script", "SLEEPER_SECONDS", "HostState", "SecretProcess",
           "assert_contained", "parse_report"]

SLEEPER_SECONDS = "987.654"
"""The detached sleeper's argument: a host process with this command line is a leak."""
SYSCTLS = ("kernel/printk_ratelimit", "kernel/core_pattern", "kernel/domainname",
           "vm/overcommit_ratio")
PROBES = ("sysctl:kernel/printk_ratelimit", "sysctl:kernel/core_pattern",
          "sysctl:kernel/domainname", "sysctl:vm/overcommit_ratio", "sysrq-trigger",
          "open_by_handle_at", "read:/proc/kcore", "read:/proc/keys", "read:/proc/timer_list",
          "host-environ", "keyctl", "mount", "unshare-U-mount", "ptrace-outside", "bpf",
          "perf_event_open", "inode-flood", "fork-bomb", "memory-bomb", "shared-memory",
          "dev-shm-fill", "disk-fill", "detached-sleeper")
SHARED_BYTES = 5 << 30
"""What the shared-memory probe maps and touches: past every memory bound the battery runs
under (1 GiB in the battery's own sandboxes, the 4 GiB default in the suites' sandboxes)."""

PROBE_SCRIPT = r'''
import ctypes, errno, os, signal, subprocess, sys, time
libc = ctypes.CDLL(None, use_errno=True)
syscall = libc.syscall
host_pid = HOST_PID
bind = BIND

def report(name, contained, detail=""):
    verdict = "contained" if contained else "ESCAPED"
    print(f"PROBE {name} {verdict} {detail}".rstrip(), flush=True)

def attempt(name, action):
    try:
        contained, detail = action()
    except Exception as exc:  # a refusal the probe did not foresee still counts as contained
        contained, detail = True, f"{type(exc).__name__}: {exc}"
    report(name, contained, detail)

def errno_call(result):
    return result == -1, errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))

def write_sysctl(key, value):
    def action():
        with open(f"/proc/sys/{key}", "w") as handle:
            handle.write(value)
        return False, "written"
    return action

for key, value in (("kernel/printk_ratelimit", "7"), ("kernel/core_pattern", "|/tmp/pwn %p"),
                   ("kernel/domainname", "escaped"), ("vm/overcommit_ratio", "77")):
    attempt(f"sysctl:{key}", write_sysctl(key, value))

def sysrq():
    with open("/proc/sysrq-trigger", "w") as handle:
        handle.write("h")
    return False, "written"
attempt("sysrq-trigger", sysrq)

def by_handle():
    handle = ctypes.create_string_buffer(8 + 128)
    ctypes.c_uint.from_buffer(handle, 0).value = 128
    mount_id = ctypes.c_int()
    named = libc.name_to_handle_at(-100, bind.encode(), handle, ctypes.byref(mount_id), 0)
    named_refused, named_errno = errno_call(named)
    # "Shocker": a handle for inode 2 (an ext4 root) through the bound folder
    crafted = ctypes.create_string_buffer(8 + 8)
    ctypes.c_uint.from_buffer(crafted, 0).value = 8
    ctypes.c_int.from_buffer(crafted, 4).value = 1  # FILEID_INO32_GEN
    ctypes.c_uint.from_buffer(crafted, 8).value = 2
    directory = os.open(bind, os.O_RDONLY)
    opened = libc.open_by_handle_at(directory, crafted, os.O_RDONLY)
    opened_refused, opened_errno = errno_call(opened)
    return named_refused and opened_refused, f"name_to_handle_at {named_errno} open_by_handle_at {opened_errno}"
attempt("open_by_handle_at", by_handle)

def read_file(path):
    def action():
        with open(path, "rb") as handle:
            data = handle.read(4096)
        return not data, f"read {len(data)} bytes"
    return action
for path in ("/proc/kcore", "/proc/keys", "/proc/timer_list"):
    attempt(f"read:{path}", read_file(path))

def host_environ():
    seen = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as handle:
                    if b"HARNESS_PROBE_SECRET=" in handle.read():
                        return False, f"secret in pid {entry}"
                seen += 1
            except OSError:
                pass
    return True, f"{seen} environ files readable, none the host's"
attempt("host-environ", host_environ)

attempt("keyctl", lambda: errno_call(syscall(250, 1, 0)))  # KEYCTL_JOIN_SESSION_KEYRING
attempt("mount", lambda: errno_call(libc.mount(b"none", b"/mnt", b"tmpfs", 0, None)))

def unshare_mount():
    done = subprocess.run(["unshare", "-Urm", "mount", "-t", "tmpfs", "none", "/mnt"],
                          capture_output=True, text=True)
    return done.returncode != 0, (done.stderr.strip().splitlines() or [""])[-1]
attempt("unshare-U-mount", unshare_mount)
attempt("ptrace-outside", lambda: errno_call(libc.ptrace(16, host_pid, None, None)))
attempt("bpf", lambda: errno_call(syscall(321, 0, ctypes.create_string_buffer(128), 128)))
attempt("perf_event_open", lambda: errno_call(
    syscall(298, ctypes.create_string_buffer(128), 0, -1, -1, 0)))

def inode_flood():
    os.makedirs("/tmp/inodes", exist_ok=True)
    made = 0
    try:
        for made in range(300_000):
            os.close(os.open(f"/tmp/inodes/{made}", os.O_CREAT | os.O_WRONLY, 0o644))
        made = 300_000
    except OSError as exc:
        detail = f"{made} files, then {errno.errorcode.get(exc.errno)}"
    else:
        detail = "300000 files"
    subprocess.run(["rm", "-rf", "/tmp/inodes"])
    return made < 300_000, detail
attempt("inode-flood", inode_flood)

def fork_bomb():
    leader = os.fork()
    if leader == 0:
        os.setpgid(0, 0)
        count = 0
        while count < 100_000:
            try:
                pid = os.fork()
            except OSError:
                os._exit(min(count, 254))
            if pid == 0:
                time.sleep(30)
                os._exit(0)
            count += 1
        os._exit(255)
    _, status = os.waitpid(leader, 0)
    try:
        os.killpg(leader, signal.SIGKILL)
    except ProcessLookupError:
        pass
    code = os.waitstatus_to_exitcode(status)
    shown = f"{code}+" if code == 254 else str(code)
    return code != 255, f"forks refused after {shown} children"
attempt("fork-bomb", fork_bomb)

def memory_bomb():
    hoard, total = [], 0
    try:
        while total < 64 << 30:
            hoard.append(bytearray(256 << 20))
            total += 256 << 20
    except MemoryError:
        return True, f"refused after {total >> 20} MiB"
    return False, f"{total >> 20} MiB allocated"
attempt("memory-bomb", memory_bomb)

def shared_memory():
    # MAP_SHARED pages are not private writable memory: RLIMIT_DATA never counts them
    child = os.fork()
    if child == 0:
        try:
            import mmap
            region = mmap.mmap(-1, SHARED_BYTES, flags=mmap.MAP_SHARED)
            for offset in range(0, SHARED_BYTES, 4096):
                region[offset] = 1
        except BaseException:
            os._exit(3)  # refused (the address-space limit of a host build)
        os._exit(0)
    _, status = os.waitpid(child, 0)
    if os.WIFSIGNALED(status):
        return True, f"stopped by signal {os.WTERMSIG(status)}"
    code = os.waitstatus_to_exitcode(status)
    if code == 3:
        return True, "refused"
    return False, f"{SHARED_BYTES >> 20} MiB mapped and touched, exit {code}"
attempt("shared-memory", shared_memory)

def dev_shm_fill():
    # contained when /dev/shm is the writable layer's own file system: what it holds counts
    # in the episode's disk quota (bwrap's own /dev/shm is a tmpfs of half the host's RAM)
    before = os.statvfs("/tmp")
    try:
        with open("/dev/shm/fill", "wb") as handle:
            handle.write(bytes(64 << 20))
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        return exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG), errno.errorcode.get(exc.errno)
    finally:
        after = os.statvfs("/tmp")
        if os.path.exists("/dev/shm/fill"):
            os.remove("/dev/shm/fill")
    taken = (before.f_bfree - after.f_bfree) * after.f_frsize
    return taken >= 48 << 20, f"64 MiB in /dev/shm took {taken >> 20} MiB of the layer's quota"
attempt("dev-shm-fill", dev_shm_fill)

def disk_fill():
    os.makedirs("/tmp/fill", exist_ok=True)
    written, chunk = 0, bytes(1 << 20)
    try:
        for index in range(1 << 16):
            with open(f"/tmp/fill/{index}", "wb") as handle:
                for _ in range(256):
                    handle.write(chunk)
                    written += 1
    except OSError as exc:
        detail = f"{written} MiB, then {errno.errorcode.get(exc.errno)}"
        subprocess.run(["rm", "-rf", "/tmp/fill"])
        return exc.errno in (errno.ENOSPC, errno.EDQUOT), detail
    return False, f"{written} MiB written"
attempt("disk-fill", disk_fill)

subprocess.Popen(["setsid", "nohup", "sleep", "SLEEPER"], stdout=subprocess.DEVNULL,
                 stderr=subprocess.DEVNULL, start_new_session=True)
report("detached-sleeper", True, "started; the host checks that it is gone")
print("PROBES DONE", flush=True)
'''


def probe_script(host_pid: int, bind: str = "/") -> str:
    """The battery aimed at host process `host_pid` (ptrace) through folder `bind`."""
    return (PROBE_SCRIPT.replace("SLEEPER", SLEEPER_SECONDS).replace("HOST_PID", str(host_pid))
            .replace("BIND", repr(bind)).replace("SHARED_BYTES", str(SHARED_BYTES)))

_LINE = re.compile(r"^PROBE (\S+) (contained|ESCAPED)(?: (.*))?$", re.MULTILINE)


def parse_report(text: str) -> dict[str, tuple[str, str]]:
    """``{probe: (verdict, detail)}`` from the battery's output."""
    return {m.group(1): (m.group(2), m.group(3) or "") for m in _LINE.finditer(text)}


@dataclass(frozen=True)
class HostState:
    """The host values a probe could change, read from the host."""

    sysctls: tuple[tuple[str, str], ...]
    sleepers: tuple[int, ...]

    @classmethod
    def read(cls) -> "HostState":
        values = tuple((key, Path("/proc/sys", key).read_text()) for key in SYSCTLS)
        return cls(values, tuple(_sleepers()))


def _sleepers() -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if SLEEPER_SECONDS.encode() in argv and b"sleep" in argv[0]:
                found.append(int(entry.name))
    return found


def _restore(state: HostState) -> None:
    for key, value in state.sysctls:
        Path("/proc/sys", key).write_text(value)


def assert_contained(output: str, before: HostState, *, expect_all: bool = True) -> None:
    """Every probe reported contained, the battery finished, and the host is as `before`
    (an escaped sysctl is put back before the assertion fails)."""
    after = HostState.read()
    if after.sysctls != before.sysctls:
        _restore(before)
    for pid in after.sleepers:
        if pid not in before.sleepers:
            os.kill(pid, 9)
    report = parse_report(output)
    escaped = {name: detail for name, (verdict, detail) in report.items()
               if verdict != "contained"}
    assert escaped == {}, f"escaped: {escaped}"
    assert after.sysctls == before.sysctls, "a host sysctl changed"
    assert set(after.sleepers) <= set(before.sleepers), "a detached process outlived its sandbox"
    if expect_all:
        assert "PROBES DONE" in output, f"the battery did not finish: {output[-2000:]}"
        assert set(report) == set(PROBES), f"probes missing: {set(PROBES) - set(report)}"


class SecretProcess:
    """A host process whose environment holds ``HARNESS_PROBE_SECRET`` (the target of the
    environ and ptrace probes); a context manager."""

    def __enter__(self) -> "SecretProcess":
        self.process = subprocess.Popen(["sleep", "600"], env={
            **os.environ, "HARNESS_PROBE_SECRET": "host-secret-value"})
        return self

    @property
    def pid(self) -> int:
        return self.process.pid

    def __exit__(self, *exc: object) -> None:
        self.process.kill()
        self.process.wait()
