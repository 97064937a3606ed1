"""Run a process with no network: the argv prefix that starts it in a new network namespace.

Third-party engines (AppWorld's, which also executes the model's code) run on the host; a
fresh network namespace holds only a loopback interface, so nothing they run can reach
another machine. Tried in order, the first that works here wins (probed once, cached):

1. ``bwrap --dev-bind / / --unshare-net --die-with-parent`` (bubblewrap; the whole host
   filesystem as it is, only the network namespace is new);
2. ``unshare --net`` as root, ``unshare --net --map-root-user`` otherwise (util-linux; the
   latter needs unprivileged user namespaces).

The probe runs ``python -c`` under each prefix and accepts it only when the process sees no
interface but ``lo`` (`socket.if_nameindex`, which reads the calling process's namespace;
``/sys/class/net`` would show the host's when ``/sys`` is bind-mounted).
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import sys

from harness.core import HarnessError

logger = logging.getLogger(__name__)

PROBE = "import socket; print(' '.join(sorted(n for _, n in socket.if_nameindex())))"


class NoNetworkNamespaceError(HarnessError):
    """Neither bubblewrap nor unshare can create a network namespace here."""


def interfaces() -> list[str]:
    """The network interfaces this process's network namespace holds (sorted names)."""
    import socket

    return sorted(name for _, name in socket.if_nameindex())


def _candidates() -> list[list[str]]:
    candidates = []
    if shutil.which("bwrap"):
        candidates.append(["bwrap", "--dev-bind", "/", "/", "--unshare-net",
                           "--die-with-parent", "--"])
    if shutil.which("unshare"):
        user = [] if os.geteuid() == 0 else ["--map-root-user"]
        candidates.append(["unshare", "--net", *user, "--"])
    return candidates


def _works(prefix: list[str]) -> str | None:
    """None when `prefix` runs a process that sees only ``lo``, else why not (one line)."""
    try:
        run = subprocess.run([*prefix, sys.executable, "-c", PROBE], capture_output=True,
                             text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{prefix[0]}: {exc}"
    if run.returncode != 0:
        return f"{prefix[0]}: {(run.stderr.strip().splitlines() or ['failed'])[-1]}"
    if run.stdout.split() != ["lo"]:
        return f"{prefix[0]}: the process still sees {run.stdout.strip()!r}"
    return None


@functools.cache
def no_network_prefix() -> tuple[str, ...]:
    """The argv prefix that runs a command in a new network namespace (only ``lo``).

    Raises `NoNetworkNamespaceError` when no way to make one works here.
    """
    problems = []
    for prefix in _candidates():
        problem = _works(prefix)
        if problem is None:
            logger.debug("no-network prefix: %s", " ".join(prefix))
            return tuple(prefix)
        problems.append(problem)
    raise NoNetworkNamespaceError(
        "cannot start a process without network (needed to run third-party engine code): "
        + ("; ".join(problems) or "neither bwrap (apt-get install bubblewrap) nor unshare "
           "(util-linux) is installed") + "; as a normal user this needs unprivileged user "
        "namespaces (sysctl kernel.unprivileged_userns_clone=1)")
