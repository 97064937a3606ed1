"""The process-wide FHIR backend the suites share: base record, server thread, HTTP client.

`FhirBackend.shared(data_dir)` builds, on first use, the base record of a data directory (its
patients plus a background history per patient drawn from `RECORDS_SEED`) into a temporary
SQLite file, starts one `FhirServer` for the process on a free 127.0.0.1 port, and opens one
pooled ``httpx.Client``. Everything is shut down at interpreter exit (or by `close_shared`).
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

from harness.core import MissingDependencyError, make_rng
from tasks.medagentbench.data import data_dir as resolve_data_dir
from tasks.medagentbench.data import load_patients
from tasks.medagentbench.fhirstore import ResourceStore, build_database
from tasks.medagentbench.records import RecordBuilder, Resource, background_record
from tasks.medagentbench.validation import issue, operation_outcome

log = logging.getLogger(__name__)

RECORDS_SEED = "medagentbench-records@1"
"""Seed of every patient's background history in the base record."""
HTTP_TIMEOUT_S = 60.0


def base_resources(patients: list[Resource]) -> list[Resource]:
    """Every patient followed by their seeded background history (base ids 1, 2, ...)."""
    resources: list[Resource] = []
    next_id = 1
    for patient in patients:
        builder = RecordBuilder(patient["id"], start=next_id)
        background_record(builder, make_rng(RECORDS_SEED, patient["id"]))
        resources.append(patient)
        resources.extend(builder.resources)
        next_id = builder.next_id
    return resources


class FhirBackend:
    """A running server over a base record, with a client that talks to it over HTTP."""

    def __init__(self, base_path: Path, patients: list[Resource], *, port: int = 0):
        try:
            import httpx

            from tasks.medagentbench.server import FhirServer
        except ImportError as exc:
            raise MissingDependencyError(exc.name or "fastapi", "medagentbench",
                                         "the MedAgentBench FHIR server") from None
        self.base_path = base_path
        self.patients = {p["id"]: p for p in patients}
        self.server = FhirServer(port=port).start()
        self.client = httpx.Client(
            base_url=self.server.url, timeout=HTTP_TIMEOUT_S,
            limits=httpx.Limits(max_connections=512, max_keepalive_connections=256))

    @property
    def registry(self) -> Any:
        return self.server.registry

    def open_episode(self, records: list[Resource], hidden_patient: str | None
                     ) -> tuple[str, ResourceStore]:
        """A new isolated record (the base plus `records` replacing `hidden_patient`'s)."""
        store = ResourceStore(self.base_path, records, hidden_patient)
        return self.registry.add(store), store

    def close_episode(self, episode_id: str) -> None:
        self.registry.drop(episode_id)

    def request(self, method: str, path: str, *, episode_id: str, public_base: str,
                body: str | None = None) -> tuple[int, str]:
        """Send ``METHOD /fhir/<path>`` for one episode; (status, response text)."""
        import httpx

        headers = {"X-Episode-Id": episode_id, "X-Public-Base": public_base}
        if body is not None:
            headers["Content-Type"] = "application/fhir+json"
        # a dropped keep-alive connection is retried once (a POST only when it never left)
        retried = ((httpx.TransportError,) if method == "GET" else
                   (httpx.ConnectError, httpx.WriteError, httpx.RemoteProtocolError))
        for attempt in range(2):
            try:
                response = self.client.request(
                    method, f"/fhir/{path}", headers=headers,
                    content=body.encode() if body is not None else None)
                return response.status_code, response.text
            except httpx.InvalidURL as exc:  # a tab or a space in the agent's URL
                return 400, json.dumps(operation_outcome([issue(
                    "invalid", f"invalid URL {path!r}: {exc}")]))
            except retried:
                if attempt:
                    raise
                log.warning("FHIR request %s %s: connection dropped; retrying once", method,
                            path)
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.client.close()
        self.server.stop()

    # -- process-wide instances ----------------------------------------------------------------
    _shared: dict[Path, FhirBackend] = {}
    _lock = threading.Lock()
    _tmp: Path | None = None

    @classmethod
    def shared(cls, path: str | os.PathLike | None = None) -> FhirBackend:
        """The backend of a data directory, built and started on first use."""
        directory = resolve_data_dir(path)
        with cls._lock:
            if directory not in cls._shared:
                if cls._tmp is None:
                    cls._tmp = Path(tempfile.mkdtemp(prefix="medagentbench-"))
                    atexit.register(close_shared)
                patients = load_patients(directory)
                base = build_database(cls._tmp / f"base-{len(cls._shared)}.sqlite",
                                      base_resources(patients))
                cls._shared[directory] = cls(base, patients)
            return cls._shared[directory]


def close_shared() -> None:
    """Stop every shared backend and remove their base files."""
    with FhirBackend._lock:
        for backend in FhirBackend._shared.values():
            backend.close()
        FhirBackend._shared.clear()
        if FhirBackend._tmp is not None:
            shutil.rmtree(FhirBackend._tmp, ignore_errors=True)
            FhirBackend._tmp = None
