"""The no-network prefix: a process started through it sees only ``lo`` and cannot connect
out, while this (host) process has other interfaces."""

import subprocess
import sys

from tasks.appworld.netns import _works, interfaces, no_network_prefix

CONNECT = ("import socket\n"
           "try:\n"
           "    socket.create_connection(('1.1.1.1', 53), timeout=2)\n"
           "except OSError as exc:\n"
           "    print('refused', exc.errno)\n"
           "else:\n"
           "    print('connected')\n"
           "print(' '.join(sorted(n for _, n in socket.if_nameindex())))\n")


def test_prefix_starts_a_process_with_only_loopback():
    assert interfaces() != ["lo"], "the host itself has no network: nothing to show here"
    prefix = no_network_prefix()
    assert prefix[0] in ("bwrap", "unshare")
    run = subprocess.run([*prefix, sys.executable, "-c", CONNECT], capture_output=True,
                         text=True, timeout=30)
    assert run.returncode == 0, run.stderr
    refused, names = run.stdout.strip().splitlines()
    assert refused.startswith("refused")
    assert names == "lo"


def test_prefix_is_probed_once():
    assert no_network_prefix() is no_network_prefix()


def test_probe_rejects_a_prefix_that_keeps_the_network():
    assert _works(["unshare", "--net", "--"]) is None
    assert "still sees" in _works(["env", "--"])
