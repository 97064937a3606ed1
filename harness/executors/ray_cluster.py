"""Reaching Ray: importing it (loopback-only for a local instance), joining a cluster or
starting a local instance, and telling a node's death from a lost worker. Shared by the Ray
executor and its env workers."""

from __future__ import annotations

import os
import re
import sys
import threading
from typing import Any

from harness.core import HarnessError, MissingDependencyError
from harness.executors.spec import ExecutorSpec

__all__ = ["HEALTH_TIMEOUT_S", "LOOPBACK_ENV", "RayNodeDied", "check_cluster", "connect",
           "import_ray", "lost_node"]


LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""Ray's switch for single-machine mode: when "0", a node started here binds 127.0.0.1
instead of the host's routable address (read once, when ray is imported)."""


def import_ray(spec: ExecutorSpec):
    if spec.address is None and "ray" not in sys.modules:  # a local instance: loopback only
        os.environ.setdefault(LOOPBACK_ENV, "0")
    try:
        import ray
    except ImportError as exc:
        raise MissingDependencyError("ray", "ray", "--executor ray") from exc
    return ray


def connect(ray, spec: ExecutorSpec) -> bool:
    """Join the cluster (or start a local instance); True when this call started Ray."""
    if ray.is_initialized():
        return False
    options = {"include_dashboard": False, "log_to_driver": False,
               "configure_logging": False}
    if spec.address is None:  # a fresh local instance on loopback, never a cluster found
        ray.init(address="local", _node_ip_address="127.0.0.1", **options)
    else:
        ray.init(address=spec.address, **options)
    return True


HEALTH_TIMEOUT_S = 10.0
"""How long the cluster's control service (GCS) gets to list its nodes before it counts as
gone with its node (a dead GCS leaves ``ray.nodes()`` waiting for ever)."""
_NODE_IN_MESSAGE = re.compile(r"Node IP: ([\w.:]+), node ID: ([0-9a-f]+)")


class RayNodeDied(HarnessError):
    """Every node the run could play on died (or the cluster's control service with them)."""


def lost_node(exc: BaseException) -> str | None:
    """The node a Ray error says died (``node 1a2b3c4d5e6f at 127.0.0.1``), "the local
    node" when the driver's own raylet died, None for other errors (a lost worker)."""
    import ray

    if isinstance(exc, ray.exceptions.LocalRayletDiedError):
        return "the local node (its raylet)"
    if isinstance(exc, ray.exceptions.NodeDiedError):
        found = _NODE_IN_MESSAGE.search(str(exc))
        return f"node {found.group(2)[:12]} at {found.group(1)}" if found else "a node"
    return None


def check_cluster(ray, *, died: str | None = None,
                  timeout_s: float = HEALTH_TIMEOUT_S) -> None:
    """Raise `RayNodeDied` when no node of the cluster is alive or its control service does
    not answer within `timeout_s` (`died`: the node an error named, said first)."""
    answer: list[Any] = []

    def ask() -> None:
        try:
            answer.append([(n["NodeID"], n["NodeManagerAddress"], n["Alive"],
                            n.get("DeathReasonMessage") or "") for n in ray.nodes()])
        except Exception as exc:  # noqa: BLE001 - a cluster that cannot be asked is gone
            answer.append(exc)

    asking = threading.Thread(target=ask, name="ray-health", daemon=True)
    asking.start()
    asking.join(timeout_s)
    first = f"Ray {died} died" if died else "a Ray node died"
    if not answer or isinstance(answer[0], Exception):
        raise RayNodeDied(f"{first} and the cluster's control service (GCS) stopped answering")
    if any(alive for _, _, alive, _ in answer[0]):
        return
    dead = "; ".join(f"node {node[:12]} at {address}" + (f" ({reason})" if reason else "")
                     for node, address, _, reason in answer[0])
    raise RayNodeDied(f"{first}; no node of the cluster is alive ({dead})")
