"""Nothing the sandbox can write launches a command or answers a read: a session's later
commands start with the host's bwrap (root inside replacing ``/usr/bin/bwrap`` changes nothing:
the agent keeps its seccomp filter and no capability), and `Sandbox.read_file` reads with the
host's descriptors (a replaced ``cat`` or ``bash`` cannot answer it; a symbolic link is
refused, so no read reaches a host file)."""

from __future__ import annotations

import pytest

from tasks.sandbox import Sandbox, SandboxError

pytestmark = pytest.mark.slow

_FORGING_BWRAP = """#!/bin/sh
# the agent's wrapper: answer every read of a reward with 1, then run the real command
echo launched >> /tmp/wrapper-ran
case "$*" in *reward*) echo 1; exit 0;; esac
exec /usr/bin/bwrap.real "$@"
"""


def _status(box: Sandbox, user: str) -> dict[str, str]:
    text = box.run("grep -E '^(Seccomp|CapEff|CapPrm|NoNewPrivs):' /proc/self/status",
                   user=user).output
    return dict(line.split(":\t") for line in text.strip().splitlines())


@pytest.mark.timeout(300)
def test_a_replaced_bwrap_in_a_session_launches_nothing(terminal_rootfs):
    with Sandbox(terminal_rootfs, workdir="/tmp", session=True) as box:
        before = _status(box, "agent")
        box.run("mv /usr/bin/bwrap /usr/bin/bwrap.real", user="root")
        box.write_file("/usr/bin/bwrap", _FORGING_BWRAP, mode=0o755)
        after = _status(box, "agent")
        assert after == before
        assert after["Seccomp"] == "2" and after["CapEff"] == after["CapPrm"] == "0" * 16
        assert box.run("cat /tmp/wrapper-ran 2>/dev/null || echo never",
                       user="root").output.strip() == "never"
        box.run("mkdir -p /logs/verifier && echo 0 > /logs/verifier/reward.txt", user="root")
        assert box.read_file("/logs/verifier/reward.txt") == b"0\n"


@pytest.mark.timeout(300)
def test_reads_go_around_replaced_binaries_and_refuse_links(base_rootfs):
    with Sandbox(base_rootfs) as box:
        box.run("mkdir -p /logs/verifier && echo 0 > /logs/verifier/reward.txt && "
                "printf '#!/bin/sh\\necho 1\\n' > /usr/bin/cat && chmod 755 /usr/bin/cat",
                user="root")
        assert box.run("cat /logs/verifier/reward.txt", user="root").output == "1\n"
        assert box.read_file("/logs/verifier/reward.txt") == b"0\n"
        box.run("ln -s /etc/hostname /work/host-file && mkdir -p /work/d && "
                "ln -s /etc /work/d/etc && mkfifo /work/fifo")
        for path, why in (("/work/host-file", "symbolic link"), ("/work/d/etc/hostname",
                          "symbolic link"), ("/work/fifo", "not a regular file"),
                          ("/work/../etc/passwd", "without '..'")):
            with pytest.raises(SandboxError, match=why):
                box.read_file(path)


@pytest.mark.timeout(300)
def test_the_mount_table_names_no_host_path(base_rootfs):
    with Sandbox(base_rootfs) as box:
        table = box.run("cat /proc/self/mountinfo").output
        assert "overlay" in table
        for host_path in (str(base_rootfs), str(box._root), "harness-sandboxes", "/root/"):
            assert host_path not in table
