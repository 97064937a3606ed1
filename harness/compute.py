"""Provenance of compute: the machine figures came from.

Training and evaluation on a CPU are not bit-identical across instruction sets (AVX2 vs
AVX-512/AMX kernels reorder floating-point sums), so every run (evaluation or training, with
the run's other provenance: `harness.orchestrator.provenance`) and every study job records
the CPU model, its vector-instruction flags, core and thread counts, the torch and BLAS
versions and the determinism settings; `harness report` and `harness study report` print
them. Read without
importing torch (package metadata and ``/proc/cpuinfo``).
"""

from __future__ import annotations

import functools
import os
import platform
import re
from importlib import metadata
from typing import Any

__all__ = ["compute_provenance", "describe_compute"]

_FLAGS = re.compile(r"^(avx\w*|amx\w*|fma|f16c|sse4_2|neon|asimd\w*|sve\w*)$")
_THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                     "TORCH_NUM_THREADS", "CUBLAS_WORKSPACE_CONFIG", "PYTHONHASHSEED",
                     "CUDA_VISIBLE_DEVICES")


def _cpuinfo() -> tuple[str, list[str]]:
    model, flags = platform.processor() or platform.machine(), []
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("model name", "Model") and model in ("", platform.machine(),
                                                                platform.processor()):
                    model = value.strip()
                elif key in ("flags", "Features") and not flags:
                    flags = sorted(f for f in value.split() if _FLAGS.match(f))
    except OSError:
        pass
    return model, flags


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _blas() -> str:
    try:
        import numpy as np

        config = np.show_config(mode="dicts")  # numpy >= 1.25
        blas = config.get("Build Dependencies", {}).get("blas", {})
        return f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except Exception:  # noqa: BLE001 - provenance must never fail a run
        return "unknown"


@functools.cache
def _static() -> dict[str, Any]:
    model, flags = _cpuinfo()
    return {"cpu": model, "cpu_flags": flags, "cpu_count": os.cpu_count(),
            "machine": platform.machine(), "system": platform.platform(),
            "python": platform.python_version(), "torch": _version("torch"),
            "transformers": _version("transformers"), "numpy": _version("numpy"),
            "numpy_blas": _blas()}


def compute_provenance(threads: int | None = None) -> dict[str, Any]:
    """CPU model and flags, counts, library versions, thread and determinism settings;
    ``threads``: the torch CPU threads a job asked for (0/None: torch's default)."""
    return {**_static(), "torch_threads": threads or None,
            "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
            else None,
            "environment": {k: os.environ[k] for k in _THREAD_VARIABLES if k in os.environ}}


def describe_compute(info: dict[str, Any]) -> str:
    """One line for a report: ``CPU (flags), N cores, torch X, BLAS, threads``."""
    flags = ", ".join(info.get("cpu_flags") or []) or "no vector flags read"
    threads = info.get("torch_threads") or "default"
    return (f"{info.get('cpu', '?')} ({flags}); {info.get('affinity') or info.get('cpu_count')}"
            f" usable cores; torch {info.get('torch')}, numpy BLAS {info.get('numpy_blas')}; "
            f"torch threads {threads}")
