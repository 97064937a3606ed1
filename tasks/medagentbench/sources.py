"""Where the MedAgentBench suites' data comes from (`tasks.datasets`;
``harness data pull medagentbench``).

``test_data_v1.json``, ``test_data_v2.json``, ``funcs_v1.json`` and ``LICENSE`` are the files
of ``rushilcs/MedAgentBench`` (a fork of ``stanfordmlgroup/MedAgentBench``) at commit
``e9793e8b``, byte-for-byte (sha256 checked against that commit). ``patients.json`` was
recovered from a recorded ``GET /Patient?_count=500`` response (see
``shared/data/medagentbench/README.md``) and is published nowhere as such, so it comes only
from a mirror of ``shared/data`` (``HARNESS_DATA_BASE_URL``).
"""

from __future__ import annotations

from tasks.datasets import DataFile, DataSet

__all__ = ["DATASET"]

_RAW = ("https://raw.githubusercontent.com/rushilcs/MedAgentBench/"
        "e9793e8b878ced68ab43b67a48a743eb6a2bb478/")

DATASET = DataSet(
    name="medagentbench", env="MEDAGENTBENCH_DATA",
    source="MedAgentBench task files (stanfordmlgroup/MedAgentBench via rushilcs' fork, "
           "e9793e8b) and recovered patient demographics",
    files=(
        DataFile("test_data_v1.json", size=39332,
                 sha256="b539a3dece8cf2fe0518bbfe76e47dec53e3676755c9bb6d87ff261b2aad856a",
                 url=_RAW + "data/medagentbench/test_data_v1.json"),
        DataFile("test_data_v2.json", size=118276,
                 sha256="b6e89b2ef82f1bef27c5778a644a8a66c7b25738bbd6a48d03ab3e5182df6ca8",
                 url=_RAW + "data/medagentbench/test_data_v2.json"),
        DataFile("funcs_v1.json", size=12571,
                 sha256="c977266db5eca75182c0d12cac1962b33ae6b5a54b9029ceb104e1a93b4c38c1",
                 url=_RAW + "data/medagentbench/funcs_v1.json"),
        DataFile("patients.json", size=554547,
                 sha256="abf15a6a081c4084d8fc712dc9acf6074f5b1c172ba69282b03450239ba354cc"),
        DataFile("LICENSE", size=1088,
                 sha256="a5dd06db7e5e4d6f790b24d2c54a027e1b5ad7519786bd31a7ff6508cd354828",
                 url=_RAW + "LICENSE"),
    ))
