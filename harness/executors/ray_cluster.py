"""Reaching Ray: importing it (loopback-only for a local instance) and joining a cluster or
starting a local instance. Shared by the Ray executor and its env workers."""

from __future__ import annotations

import os
import sys

from harness.core import MissingDependencyError
from harness.executors.spec import ExecutorSpec

__all__ = ["LOOPBACK_ENV", "connect", "import_ray"]


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
