"""Provenance of compute: what this machine is, read from /proc/cpuinfo and package
metadata, one line for a report, and stored with every run."""

from __future__ import annotations

from pathlib import Path

from harness.compute import compute_provenance, describe_compute


def test_this_machine_is_described():
    info = compute_provenance(threads=2)
    assert info["torch_threads"] == 2 and info["cpu_count"] >= 1
    cpuinfo = Path("/proc/cpuinfo").read_text()
    assert info["cpu"] in cpuinfo  # the model name line as the kernel gives it
    flags = next(line for line in cpuinfo.splitlines() if line.startswith("flags")).split()
    assert set(info["cpu_flags"]) <= set(flags)
    assert ("avx2" in flags) == ("avx2" in info["cpu_flags"])


def test_one_line_by_hand():
    line = describe_compute({"cpu": "Some CPU", "cpu_flags": ["avx2", "fma"], "affinity": 2,
                             "torch": "2.13.0", "numpy_blas": "openblas 0.3", "torch_threads": 1})
    assert line == ("Some CPU (avx2, fma); 2 usable cores; torch 2.13.0, numpy BLAS "
                    "openblas 0.3; torch threads 1")
    assert "no vector flags read" in describe_compute({"cpu": "x"})


def test_every_run_stores_its_compute(tmp_path):
    import asyncio

    from harness.config import RunConfig
    from harness.runner import run_async
    from harness.store import Store

    config = RunConfig(policies=("random",), suites=("sokoban",), n_tasks=1, eval_seeds=(0,),
                       db=str(tmp_path / "h.db"))
    with Store(tmp_path / "h.db") as store:
        asyncio.run(run_async(config, store=store))
        packages = store.runs()["packages"].iloc[0]
    assert describe_compute(compute_provenance()) in packages
