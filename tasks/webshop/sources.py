"""Where ``webshop@N``'s data comes from (`tasks.datasets`; ``harness data pull webshop``).

The 1000-product set of ``shared/data/webshop``: ``items_ins_v2_1000.json`` is byte-for-byte
upstream's (its ``setup.sh -d small`` Google Drive file); ``LICENSE`` is upstream's
``LICENSE.md`` at commit ``64fa2a5c``; ``products_1000.jsonl`` (processed records) and
``asin_order.txt`` (load order) were extracted from the Lucene index of
``ZihanWang314/webshop-minimal`` (see that folder's README) and are published nowhere as such,
so they come only from a mirror of ``shared/data`` (``HARNESS_DATA_BASE_URL``). Checksums
were computed from ``shared/data/webshop``.
"""

from __future__ import annotations

from tasks.datasets import DataFile, DataSet

__all__ = ["DATASET"]

_WEBSHOP_COMMIT = "64fa2a5c15c7daa698b9ac93f5bb5437b634c9bd"

DATASET = DataSet(
    name="webshop", env="WEBSHOP_DATA",
    source="princeton-nlp/WebShop's 1000-product set (setup.sh -d small), processed records "
           "extracted from ZihanWang314/webshop-minimal",
    files=(
        DataFile("products_1000.jsonl", size=4608412,
                 sha256="3c2b7623b0650c6d4d9a87845c515b8ae649322d11b06291316230daa22ef732"),
        DataFile("items_ins_v2_1000.json", size=147099,
                 sha256="f88a36314a397b53b3d9c3fa5878e5f7b26d35019a51ec83fbedeca61a948f6f",
                 url="https://drive.google.com/uc?export=download"
                     "&id=1IduG0xl544V_A_jv3tHXC0kyFi7PnyBu"),
        DataFile("asin_order.txt", size=11000,
                 sha256="f1c1ebb8d93116cbe0009c8601f75e0cc9ae5d930c50848d147c1dc0e2765828"),
        DataFile("LICENSE", size=1094,
                 sha256="8872dbf8660b00890b5e07ce1ea1f7a44fa7ae4e1857da56caba172b51dab3cb",
                 url=f"https://raw.githubusercontent.com/princeton-nlp/WebShop/{_WEBSHOP_COMMIT}"
                     "/LICENSE.md"),
    ))
