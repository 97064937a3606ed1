"""The no-network prefix: a process started through it sees only ``lo`` and cannot reach a
server listening on this (host) process's loopback, while this process has other interfaces.
Nothing here targets an address other than 127.0.0.1."""

import socket
import subprocess
import sys

from tasks.appworld.netns import _works, interfaces, no_network_prefix

CONNECT = ("import socket, sys\n"
           "try:\n"
           "    socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=2)\n"
           "except OSError as exc:\n"
           "    print('refused', exc.errno)\n"
           "else:\n"
           "    print('connected')\n"
           "print(' '.join(sorted(n for _, n in socket.if_nameindex())))\n")


def test_prefix_starts_a_process_with_only_loopback():
    assert interfaces() != ["lo"], "the host itself has no network: nothing to show here"
    prefix = no_network_prefix()
    assert prefix[0] in ("bwrap", "unshare")
    with socket.create_server(("127.0.0.1", 0)) as server:  # reachable from the host only
        port = str(server.getsockname()[1])
        host = subprocess.run([sys.executable, "-c", CONNECT, port], capture_output=True,
                              text=True, timeout=30)
        run = subprocess.run([*prefix, sys.executable, "-c", CONNECT, port],
                             capture_output=True, text=True, timeout=30)
    assert host.stdout.startswith("connected")
    assert run.returncode == 0, run.stderr
    refused, names = run.stdout.strip().splitlines()
    assert refused.startswith("refused")
    assert names == "lo"


def test_prefix_is_probed_once():
    assert no_network_prefix() is no_network_prefix()


def test_probe_rejects_a_prefix_that_keeps_the_network():
    assert _works(["unshare", "--net", "--"]) is None
    assert "still sees" in _works(["env", "--"])
