"""POST bodies checked against FHIR R4 with PyPI ``fhir.resources``; OperationOutcomes.

`fhir.resources` 8 ships R5 as its default and R4B beside it; R4B is R4 for every element
the benchmark uses (Observation, MedicationRequest, ServiceRequest), so it is the model set.
One leniency, documented: funcs_v1.json describes ``ServiceRequest.note`` as one object, not
the list FHIR has, so a single Annotation there is validated as a list of one (and stored as
sent). Everything else must be valid FHIR.
"""

from __future__ import annotations

import functools
from typing import Any

from harness.core import MissingDependencyError

POSTABLE = ("Observation", "MedicationRequest", "ServiceRequest")
SINGLE_AS_LIST = {"ServiceRequest": ("note",)}
"""Elements that the official tool list shows as one object where FHIR has a list."""


def issue(code: str, diagnostics: str, *, severity: str = "error",
          expression: str | None = None) -> dict[str, Any]:
    """One OperationOutcome.issue (``code`` from the FHIR issue-type value set)."""
    entry: dict[str, Any] = {"severity": severity, "code": code, "diagnostics": diagnostics}
    if expression:
        entry["expression"] = [expression]
    return entry


def operation_outcome(issues: list[dict[str, Any]]) -> dict[str, Any]:
    return {"resourceType": "OperationOutcome", "issue": issues}


@functools.lru_cache(maxsize=8)
def _model(resource_type: str) -> Any:
    try:
        from fhir.resources.R4B import get_fhir_model_class
    except ImportError:
        raise MissingDependencyError("fhir.resources", "medagentbench",
                                     "validating FHIR resources") from None
    return get_fhir_model_class(resource_type)


def _location(loc: tuple) -> str:
    return ".".join(str(part) for part in loc) or "(resource)"


def validate_resource(resource_type: str, payload: Any) -> list[dict[str, Any]]:
    """Problems of `payload` as a `resource_type` (empty: valid)."""
    if not isinstance(payload, dict):
        return [issue("structure", f"the body must be a JSON object (a {resource_type} "
                      f"resource), got {type(payload).__name__}")]
    if payload.get("resourceType") != resource_type:
        return [issue("invalid", f"resourceType must be {resource_type!r} when posting to "
                      f"/{resource_type}, got {payload.get('resourceType')!r}",
                      expression="resourceType")]
    candidate = dict(payload)
    for field in SINGLE_AS_LIST.get(resource_type, ()):
        if isinstance(candidate.get(field), dict):
            candidate[field] = [candidate[field]]
    from pydantic import ValidationError

    try:
        _model(resource_type).model_validate(candidate)
    except ValidationError as exc:
        return [issue("invalid", f"{_location(error['loc'])}: {error['msg']}",
                      expression=_location(error["loc"])) for error in exc.errors()[:20]]
    except (ValueError, TypeError) as exc:
        return [issue("invalid", str(exc).splitlines()[0][:500])]
    return []
