"""The episode's writable file system: a tmpfs for small layers, an ext4 image for large ones.

A tmpfs keeps every file's inode and dentry in kernel memory the host cannot reclaim (about
2 KiB per file through the overlay), so its inode count is also the most kernel memory an
inode flood can pin: `PINNED_INODES` files, about 17 MiB. A layer that must hold more files
(a repository with its dependency tree, an image build, a Terminal-Bench episode that installs
packages) gets an ext4 file system instead, in a sparse image file of ``disk_bytes`` with
``inodes`` inodes on a loop device (``mount -o loop``, detached when unmounted): its inodes
live in the image, and the kernel only caches them, reclaimably, so a flood fills the image
(bounded) instead of pinning host memory.

Where loop devices or ``mkfs.ext4`` (Debian ``e2fsprogs``) are missing, large layers fall back
to a tmpfs with a warning, and `layer_kind` says so in the sandbox's provenance.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
from pathlib import Path

from tasks.sandbox_rootfs import SandboxError

logger = logging.getLogger(__name__)

__all__ = ["PINNED_INODES", "IMAGE_NAME", "layer_kind", "mount_layer", "ext4_unavailable"]

PINNED_INODES = 8192
"""The most inodes a tmpfs layer may have: above it the layer is an ext4 image."""
IMAGE_NAME = "layer.img"
"""The image file's name in the sandbox root (removed with the root)."""
_MKFS = ("-q", "-F", "-m", "0", "-O", "^has_journal,^resize_inode", "-E",
         "lazy_itable_init=1,nodiscard")
_OPTIONS = "loop,nosuid,nodev,noinit_itable"


@functools.cache
def _mkfs() -> str | None:
    """``mkfs.ext4`` on PATH or in the sbin folders (a user's PATH may lack them)."""
    return shutil.which("mkfs.ext4", path=os.pathsep.join(
        [os.environ.get("PATH", ""), "/usr/sbin", "/sbin"]))


@functools.cache
def ext4_unavailable() -> str | None:
    """None when large layers can be ext4 images here, else why not (one line)."""
    if _mkfs() is None:
        return "mkfs.ext4 is missing (Debian e2fsprogs)"
    if not Path("/dev/loop-control").exists():
        return "no loop devices (/dev/loop-control is missing)"
    return None


def layer_kind(inodes: int) -> str:
    """``tmpfs`` or ``ext4 image``: what a layer of `inodes` inodes is made of here."""
    if inodes <= PINNED_INODES or ext4_unavailable() is not None:
        return "tmpfs"
    return "ext4 image"


def mount_layer(root: Path, layer: Path, *, disk_bytes: int, inodes: int) -> str:
    """Mount a fresh writable file system of `disk_bytes` and `inodes` at `layer` (a folder
    in the sandbox root `root`); returns `layer_kind`."""
    kind = layer_kind(inodes)
    if kind == "tmpfs":
        if inodes > PINNED_INODES:
            logger.warning("the episode layer is a tmpfs of %d inodes (an inode flood can pin "
                           "about %d MiB of host memory): %s", inodes, inodes >> 9,
                           ext4_unavailable())
        _run(["mount", "-t", "tmpfs", "-o", f"size={disk_bytes},nr_inodes={inodes},mode=0755",
              "tmpfs", str(layer)], "mount the episode tmpfs")
        return kind
    image = root / IMAGE_NAME
    with open(image, "wb") as handle:
        handle.truncate(disk_bytes)  # sparse: the disk holds only what is written
    _run([str(_mkfs()), *_MKFS, "-N", str(inodes), str(image)],
         "make the episode's ext4 image")
    _run(["mount", "-o", _OPTIONS, str(image), str(layer)], "mount the episode's ext4 image")
    os.chmod(layer, 0o755)
    shutil.rmtree(layer / "lost+found", ignore_errors=True)
    return kind


def _run(argv: list[str], what: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise SandboxError(f"cannot {what}: {(done.stderr or done.stdout).strip()}")
