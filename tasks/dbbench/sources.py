"""Where the DB-Bench suite's data comes from (`tasks.datasets`; ``harness data pull dbbench``).

``standard.jsonl``, ``dev.jsonl`` and ``LICENSE`` are files of ``THUDM/AgentBench`` at commit
``578c5e9`` (``data/dbbench/``), byte for byte.
"""

from __future__ import annotations

from tasks.datasets import DataFile, DataSet

__all__ = ["DATASET"]

_RAW = "https://raw.githubusercontent.com/THUDM/AgentBench/578c5e9f706fc2dd96188ca6c8cf9095ca0c6528/"

DATASET = DataSet(
    name="dbbench", env="DBBENCH_DATA",
    source="AgentBench DB-Bench tasks (THUDM/AgentBench 578c5e9, Apache-2.0)",
    files=(
        DataFile("standard.jsonl", size=910356, url=_RAW + "data/dbbench/standard.jsonl",
                 sha256="cf8dec6fb8051f46e6171136824aaa8b8707c3affbb3185c0bad2b39bc6b71e2"),
        DataFile("dev.jsonl", size=188018, url=_RAW + "data/dbbench/dev.jsonl",
                 sha256="eb941c58a7a5651357b19e46aa05070f6cd5a7d83ce70cefd24aa3581e1e1130"),
        DataFile("LICENSE", size=11357, url=_RAW + "LICENSE",
                 sha256="c71d239df91726fc519c6eb72d318ec65820627232b2f796219e87dcf35d0ab4"),
    ))
