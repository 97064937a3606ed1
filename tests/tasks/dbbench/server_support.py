"""What the DB-Bench tests share: whether a MariaDB server can run here."""

from __future__ import annotations

import pytest

from tasks.dbbench.server import DBBenchServerError, find_binaries

__all__ = ["MISSING", "needs_server"]

try:
    find_binaries()
    MISSING = ""
except DBBenchServerError as exc:
    MISSING = str(exc)
needs_server = pytest.mark.skipif(bool(MISSING), reason=f"needs mariadb-server: {MISSING}")
