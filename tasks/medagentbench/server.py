"""The FHIR R4 REST server (FastAPI on uvicorn) and the registry of episode records.

Routes, under ``/fhir/``: ``GET /{type}`` (search, a ``Bundle`` searchset with ``self`` /
``next`` / ``previous`` paging links), ``GET /{type}/{id}`` (read), ``POST /{type}`` (create
``Observation``, ``MedicationRequest``, ``ServiceRequest``, validated with ``fhir.resources``
and checked to reference an existing patient), ``GET /metadata``. Every error is a FHIR
``OperationOutcome`` with a 4xx status (5xx only for a server bug, never a crash).

Which episode's record a request reads is the ``X-Episode-Id`` header (the env sends it);
without it, the registry's default episode (the one `harness serve-fhir` opens). The
``X-Public-Base`` header sets the base URL written into links and ``fullUrl`` (the env sends
the api_base the agent sees, so responses do not depend on the real port).
"""

from __future__ import annotations

import hashlib
import json
import logging
import socket
import threading
import time
import uuid
from typing import Any
from urllib.parse import urlencode

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from harness.core import HarnessError
from tasks.medagentbench.clinical import NOW_ISO
from tasks.medagentbench.fhirstore import ResourceStore, SearchResult
from tasks.medagentbench.search import PARAMETERS, SearchError, reference_id
from tasks.medagentbench.validation import POSTABLE, issue, operation_outcome, validate_resource

log = logging.getLogger(__name__)

FHIR_JSON = "application/fhir+json"
MAX_BODY_BYTES = 1_000_000
"""Largest POST body accepted (413 beyond it)."""
EPISODE_HEADER = "x-episode-id"
PUBLIC_BASE_HEADER = "x-public-base"


class ServerStartError(HarnessError):
    """The FHIR server could not start (port taken, thread died)."""


class EpisodeRegistry:
    """Episode id -> `ResourceStore`; thread-safe."""

    def __init__(self) -> None:
        self._stores: dict[str, ResourceStore] = {}
        self._lock = threading.Lock()
        self.default_id: str | None = None

    def add(self, store: ResourceStore, episode_id: str | None = None) -> str:
        episode_id = episode_id or uuid.uuid4().hex
        with self._lock:
            self._stores[episode_id] = store
        return episode_id

    def get(self, episode_id: str) -> ResourceStore | None:
        with self._lock:
            return self._stores.get(episode_id)

    def drop(self, episode_id: str) -> None:
        with self._lock:
            store = self._stores.pop(episode_id, None)
        if store is not None:
            store.close()

    def __len__(self) -> int:
        with self._lock:
            return len(self._stores)


class FhirProblem(Exception):
    """Answered as an OperationOutcome with `status`."""

    def __init__(self, status: int, code: str, diagnostics: str,
                 issues: list[dict[str, Any]] | None = None):
        super().__init__(diagnostics)
        self.status, self.issues = status, issues or [issue(code, diagnostics)]


def _respond(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    text = body if isinstance(body, str) else json.dumps(body, separators=(",", ":"))
    return Response(text, status_code=status, media_type=FHIR_JSON, headers=headers)


def _problem(status: int, issues: list[dict[str, Any]]) -> Response:
    return _respond(status, operation_outcome(issues))


def _public_base(request: Request) -> str:
    base = request.headers.get(PUBLIC_BASE_HEADER) or f"{str(request.base_url).rstrip('/')}/fhir/"
    return base if base.endswith("/") else base + "/"


def _store(registry: EpisodeRegistry, request: Request) -> ResourceStore:
    episode_id = request.headers.get(EPISODE_HEADER) or registry.default_id
    store = registry.get(episode_id) if episode_id else None
    if store is None:
        raise FhirProblem(404, "not-found", f"no episode {episode_id!r} on this server")
    return store


def _check_type(resource_type: str) -> None:
    if resource_type not in PARAMETERS:
        raise FhirProblem(404, "not-supported", f"unknown resource type {resource_type!r}; "
                          f"this server knows {', '.join(sorted(PARAMETERS))}")


def bundle_text(result: SearchResult, resource_type: str, params: list[tuple[str, str]],
                base: str) -> str:
    """The searchset Bundle as JSON text (stored resource texts are spliced in unchanged)."""
    kept = [(k, v) for k, v in params if k != "_offset"]

    def link(offset: int) -> str:
        query = urlencode(kept + ([("_offset", str(offset))] if offset else []))
        return f"{base}{resource_type}" + (f"?{query}" if query else "")

    links = [{"relation": "self", "url": link(result.offset)}]
    if result.count and result.offset + result.count < result.total:
        links.append({"relation": "next", "url": link(result.offset + result.count)})
    if result.offset > 0:
        links.append({"relation": "previous", "url": link(max(0, result.offset - result.count))})
    head = {"resourceType": "Bundle",
            "id": hashlib.blake2b(links[0]["url"].encode(), digest_size=8).hexdigest(),
            "meta": {"lastUpdated": NOW_ISO}, "type": "searchset", "total": result.total,
            "link": links}
    entries = ",".join(
        f'{{"fullUrl":{json.dumps(f"{base}{resource_type}/{rid}")},"resource":{text},'
        '"search":{"mode":"match"}}' for rid, text in result.resources)
    return json.dumps(head, separators=(",", ":"))[:-1] + f',"entry":[{entries}]}}'


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise FhirProblem(413, "too-costly", f"body of {declared} bytes exceeds {limit} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise FhirProblem(413, "too-costly", f"body exceeds {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _parse_json(body: bytes) -> Any:
    if not body.strip():
        raise FhirProblem(400, "structure", "empty body: POST a FHIR resource as JSON")
    try:
        return json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise FhirProblem(400, "structure", f"malformed JSON: {exc}") from None
    except RecursionError:
        raise FhirProblem(400, "structure", "JSON nested too deeply") from None


def _validate(resource_type: str, payload: Any) -> None:
    try:
        problems = validate_resource(resource_type, payload)
    except RecursionError:
        raise FhirProblem(400, "structure", "resource nested too deeply") from None
    if problems:
        raise FhirProblem(400, "invalid", "invalid resource", problems)


def _check_subject(store: ResourceStore, payload: dict[str, Any]) -> None:
    subject = payload.get("subject")
    reference = subject.get("reference") if isinstance(subject, dict) else None
    if not isinstance(reference, str) or "Patient/" not in reference:
        raise FhirProblem(400, "required", "subject.reference must name a patient as "
                          "'Patient/<id>'")
    if store.read("Patient", reference_id(reference)) is None:
        raise FhirProblem(400, "not-found", f"subject {reference!r}: no such patient")


def _capability() -> dict[str, Any]:
    resources = [{"type": t, "interaction": [{"code": "read"}, {"code": "search-type"}]
                  + ([{"code": "create"}] if t in POSTABLE else []),
                  "searchParam": [{"name": p, "type": k} for p, k in PARAMETERS[t].items()]}
                 for t in sorted(PARAMETERS)]
    return {"resourceType": "CapabilityStatement", "status": "active", "date": NOW_ISO,
            "kind": "instance", "fhirVersion": "4.0.1", "format": ["json"],
            "rest": [{"mode": "server", "resource": resources}]}


def _install_error_handlers(app: FastAPI) -> None:
    """Every error, including the framework's own 404/405 and a server bug, answers as an
    OperationOutcome."""

    @app.exception_handler(FhirProblem)
    async def fhir_problem(request: Request, exc: FhirProblem) -> Response:
        return _problem(exc.status, exc.issues)

    @app.exception_handler(StarletteHTTPException)
    async def http_problem(request: Request, exc: StarletteHTTPException) -> Response:
        code = {404: "not-found", 405: "not-supported"}.get(exc.status_code, "processing")
        return _problem(exc.status_code, [issue(code, f"{exc.detail}: {request.method} "
                                                f"{request.url.path}")])

    @app.exception_handler(RequestValidationError)
    async def request_problem(request: Request, exc: RequestValidationError) -> Response:
        return _problem(400, [issue("invalid", str(exc)[:500])])

    app.add_middleware(_ServerBugs)


class _ServerBugs:
    """ASGI middleware: an unexpected exception (a server bug) answers 500 with an
    OperationOutcome and keeps the connection open. (A handler for `Exception` would run in
    Starlette's outermost middleware, which re-raises it: uvicorn then drops the connection
    that other requests of the same client share.)"""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: dict[str, Any]) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:  # noqa: BLE001 - answered, logged, never a dead connection
            log.exception("FHIR server error on %s %s", scope.get("method"), scope.get("path"))
            if started:  # nothing sensible can follow a started response
                raise
            response = _problem(500, [issue("exception", f"internal error: "
                                                         f"{type(exc).__name__}")])
            await response(scope, receive, send)


def build_app(registry: EpisodeRegistry, *, max_body_bytes: int = MAX_BODY_BYTES) -> FastAPI:
    """The ASGI app serving `registry`'s episodes."""
    app = FastAPI(title="MedAgentBench FHIR R4 server", openapi_url=None, docs_url=None,
                  redoc_url=None)
    _install_error_handlers(app)

    @app.get("/fhir/metadata")
    async def metadata() -> Response:
        return _respond(200, _capability())

    @app.get("/fhir/{resource_type}")
    async def search(resource_type: str, request: Request) -> Response:
        _check_type(resource_type)
        params = request.query_params.multi_items()
        try:
            result = _store(registry, request).search(resource_type, params)
        except SearchError as exc:
            raise FhirProblem(400, "invalid", str(exc)) from None
        return _respond(200, bundle_text(result, resource_type, params, _public_base(request)))

    @app.get("/fhir/{resource_type}/{resource_id}")
    async def read(resource_type: str, resource_id: str, request: Request) -> Response:
        _check_type(resource_type)
        resource = _store(registry, request).read(resource_type, resource_id)
        if resource is None:
            raise FhirProblem(404, "not-found", f"{resource_type}/{resource_id} is not known")
        return _respond(200, resource)

    @app.post("/fhir/{resource_type}")
    async def create(resource_type: str, request: Request) -> Response:
        _check_type(resource_type)
        if resource_type not in POSTABLE:
            raise FhirProblem(405, "not-supported", f"creating {resource_type} is not "
                              f"supported; POST one of {', '.join(POSTABLE)}")
        store = _store(registry, request)
        payload = _parse_json(await _read_body(request, max_body_bytes))
        _validate(resource_type, payload)
        _check_subject(store, payload)
        created = store.create(payload)
        location = f"{_public_base(request)}{resource_type}/{created['id']}/_history/1"
        return _respond(201, created, headers={"Location": location})

    @app.api_route("/fhir/{path:path}", methods=["PUT", "PATCH", "DELETE"])
    async def not_allowed(path: str, request: Request) -> Response:
        raise FhirProblem(405, "not-supported", f"{request.method} is not supported here")

    return app


class FhirServer:
    """`build_app` on uvicorn in a background thread, bound to 127.0.0.1 on a free port
    (or `port`). Use as a context manager or call `start()` / `stop()`."""

    def __init__(self, registry: EpisodeRegistry | None = None, *, host: str = "127.0.0.1",
                 port: int = 0, max_body_bytes: int = MAX_BODY_BYTES):
        self.registry = registry if registry is not None else EpisodeRegistry()
        self.host, self._port, self._max_body = host, port, max_body_bytes
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout_s: float = 20.0) -> FhirServer:
        import uvicorn

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind((self.host, self._port))
        except OSError as exc:
            sock.close()
            raise ServerStartError(f"cannot bind {self.host}:{self._port}: {exc}") from None
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(build_app(self.registry, max_body_bytes=self._max_body),
                                log_level="warning", access_log=False, lifespan="off",
                                timeout_keep_alive=60, backlog=4096,
                                timeout_graceful_shutdown=2)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]},
                                        name=f"fhir-server-{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise ServerStartError(f"the FHIR server on port {self.port} did not start")
            time.sleep(0.01)
        log.info("FHIR server listening on %s", self.url)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = self._thread = None

    def __enter__(self) -> FhirServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
