"""Build the differential fixture: episodes of the @2 suites graded by the reference grader.

Usage (the reference grader lives outside the repository, see README.md here):

    python tests/tasks/medagentbench/refsol_fixture/make_fixture.py --upstream /tmp/refsol_run

``--upstream`` is a folder holding ``src/server/tasks/medagentbench/{refsol,utils,eval}.py``
unchanged (and empty ``__init__.py`` files on that path). The script plays scripted
behaviours (`BEHAVIOURS`) on every test task of ``medagentbench-v1@2`` and ``-v2@2`` through
`OfficialProtocolEnv`, serves the episode's chart as the default episode of a FHIR server on
``localhost:8080`` (the official ``fhir_api_base``), calls the upstream ``eval(case_data,
results, fhir_api_base)`` on each episode that finished with a result (the official harness
grades only those), and writes ``fixture.jsonl.gz``: one episode per line with the agent
turns as written, the replies (a GET reply as its sha256 and length), the FINISH text and
the reference verdict.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import hashlib
import io
import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace

from tasks import get_suite
from tasks.medagentbench.clinical import OFFICIAL_API_BASE
from tasks.medagentbench.data import load_official_tasks
from tasks.medagentbench.oracle import ORACLES
from tasks.medagentbench.oracle_official import ORACLES_OFFICIAL
from tasks.medagentbench.server import FhirServer

HERE = Path(__file__).parent
SUITES = ("medagentbench-v1@2", "medagentbench-v2@2")
GET_REPLY = "Here is the response from the GET request:"


def play(env, actions, seed):
    env.reset(seed=seed)
    status = "limit"
    for action in actions:
        result = env.step(action)
        if result.terminated:
            status = "invalid" if result.info["invalid"] else "finished"
            break
        if result.truncated:
            break
    return status


def oracle_actions(env, oracle, seed):
    env.reset(seed=seed)
    actions = []
    for _ in range(env.max_steps):
        action = oracle(env.task, list(env._exchanges), env.api_base)
        actions.append(action)
        if env.step(action).terminated:
            break
    return actions


# -- behaviours: (name, transform(oracle actions, funcs-oracle actions, task, k) -> actions) --
def _finish_arg(action):
    return json.loads(action[len("FINISH("):-1])


def _finish(answer):
    return f"FINISH({json.dumps(answer)})"


def _posts(actions):
    return [a for a in actions if a.startswith("POST")]


def _perturb(value, k):
    if isinstance(value, bool) or value is None:
        return 1
    if isinstance(value, (int, float)):
        return value + (1 if isinstance(value, int) else (0.1, 0.5, -0.3)[k % 3])
    if isinstance(value, str) and re.match(r"\d{4}-\d\d-\d\dT", value):
        return value.replace(value[:4], str(int(value[:4]) - 1), 1)
    if isinstance(value, str):
        return value[:-1] + ("0" if value[-1:] != "0" else "1")
    return value


def wrong_value(a, f, task, k):
    answer = _finish_arg(a[-1])
    answer = [_perturb(v, k) for v in answer] if answer else [k % 7]
    return a[:-1] + [_finish(answer)]


def number_forms(a, f, task, k):
    answer = _finish_arg(a[-1])
    forms = []
    for v in answer:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            v = (float(v), str(v), int(v) if float(v).is_integer() else round(v, 1) + 0.04,
                 [v])[k % 4]
        forms.append(v)
    return a[:-1] + [_finish(forms if forms else [k % 2 == 0])]


def _date_variant(text, k):
    return (text.replace("+00:00", "Z"), text[:10], text[:16], text.replace("+00:00", ""),
            text[:19] + ".000+00:00")[k % 5]


def date_forms(a, f, task, k):
    out = []
    for action in a:
        if action.startswith("POST"):
            head, _, body = action.partition("\n")
            payload = json.loads(body)
            for key in ("authoredOn", "effectiveDateTime", "occurrenceDateTime"):
                if key in payload:
                    payload[key] = _date_variant(payload[key], k)
            action = f"{head}\n{json.dumps(payload)}"
        elif action.startswith("FINISH("):
            answer = [_date_variant(v, k) if isinstance(v, str) and v[:2] == "20" and "T" in v
                      else v for v in _finish_arg(action)]
            action = _finish(answer)
        out.append(action)
    return out


def permuted(a, f, task, k):
    posts = _posts(a)
    gets = [x for x in a if x.startswith("GET")]
    answer = _finish_arg(a[-1])
    if len(posts) > 1:
        return gets + posts[::-1] + [a[-1]]
    if len(answer) > 1:
        return gets + posts + [_finish(answer[::-1])]
    return posts + gets + [a[-1]]


def invalid_post_first(a, f, task, k):
    bad = (f"POST {OFFICIAL_API_BASE}MedicationRequest\n{{\"resourceType\": \"Medication",
           f"POST {OFFICIAL_API_BASE}ServiceRequest", "POST\n[1, 2")[k % 3]
    return [bad] + a


def extra_post(a, f, task, k):
    posts = _posts(a)
    stray = [f"POST {OFFICIAL_API_BASE}Observation\n" + json.dumps({
        "resourceType": "Observation", "status": "final", "code": {"text": "BP"},
        "valueString": "120/80 mmHg", "subject": {"reference": f"Patient/{task.mrn}"}})]
    extra = (posts[:1] or stray) if k % 2 == 0 else stray
    return a[:-1] + extra + [a[-1]]


def fenced(a, f, task, k):
    fence = ("```\n{}\n```", "```tool_code\n{}\n```", "  {}\n", "```json\n{}\n```")[k % 4]
    return [fence.format(x) for x in a]


def invalid_turn(a, f, task, k):
    if k % 2 == 0:
        return [f"I will look this up.\n{a[0]}"] + a[1:]
    return a[:-1] + [f"The answer is {a[-1]}"]


def finish_malformed(a, f, task, k):
    last = a[-1]
    return a[:-1] + [(last[:-1], last + ".", last.replace("FINISH(", "FINISH( "),
                      "FINISH(" + last[len("FINISH("):-1].replace("[", "(").replace("]", ")")
                      + ")")[k % 4]]


def mentions_post(a, f, task, k):
    if k % 2 == 0:
        return a[:-1] + ['FINISH(["POST request placed"])']
    return [x + "&note=POST" if x.startswith("GET") else x for x in a] or a


def answer_only(a, f, task, k):
    return [x for x in a if not x.startswith("GET")] if k % 2 else [a[-1]]


def wrong_order_field(a, f, task, k):
    out = []
    for action in a:
        if action.startswith("POST"):
            head, _, body = action.partition("\n")
            payload = json.loads(body)
            key = ("status", "intent", "priority", "subject", "resourceType")[k % 5]
            if key in payload:
                payload[key] = {"status": "draft", "intent": "plan", "priority": "routine",
                                "subject": {"reference": "Patient/S0000000"},
                                "resourceType": "Observation"}[key]
            action = f"{head}\n{json.dumps(payload)}"
        out.append(action)
    return out


def over_limit(a, f, task, k):
    get = next((x for x in a if x.startswith("GET")),
               f"GET {OFFICIAL_API_BASE}Patient?identifier={task.mrn}")
    return [get] * 8 + [a[-1]]


def mixed_conventions(a, f, task, k):
    """The funcs-convention orders with the reference answer, or the other way round."""
    if k % 2 == 0:
        return f[:-1] + [a[-1]]
    return a[:-1] + [f[-1]]


ROTATING = [wrong_value, number_forms, date_forms, permuted, invalid_post_first, extra_post,
            fenced, invalid_turn, finish_malformed, mentions_post, answer_only,
            wrong_order_field, over_limit, mixed_conventions]
BEHAVIOURS = ["oracle-refsol", "oracle-funcs", "finish-empty", "finish-minus-one"] + [
    b.__name__.replace("_", "-") for b in ROTATING]


def episodes_for(task_index, a, f, task):
    yield "oracle-refsol", a
    yield "oracle-funcs", f
    yield "finish-empty", ["FINISH([])"]
    yield "finish-minus-one", ["FINISH([-1])"]
    for j in range(2):
        k = task_index * 2 + j
        behaviour = ROTATING[k % len(ROTATING)]
        yield behaviour.__name__.replace("_", "-"), behaviour(a, f, task, k // len(ROTATING))


def chart_digest(records) -> str:
    """sha256 of the chart (canonical JSON): the test regenerates it and checks it is this."""
    return hashlib.sha256(json.dumps(list(records), sort_keys=True).encode()).hexdigest()


def encode_turns(turns):
    """The transcript without the prompt; a GET reply as its digest (it carries the chart)."""
    out = []
    for turn in turns[1:]:
        if turn.role == "user" and turn.content.startswith(GET_REPLY):
            assert "POST request accepted" not in turn.content
            digest = hashlib.sha256(turn.content.encode()).hexdigest()
            out.append(["get-reply", f"sha256:{digest}:{len(turn.content)}"])
        else:
            out.append([turn.role, turn.content])
    return out


def run_suite(suite, backend, upstream_eval, lines) -> int:
    """Append the episodes of one suite to `lines`; the number the project graders agree on."""
    agree = 0
    official = {r["id"]: r for r in load_official_tasks(int(suite.base_name[-1]),
                                                        suite.data_dir)}
    for index, spec in enumerate(suite.tasks("test")):
        seed = index % 3
        env = suite.make_env(spec.id)
        a = oracle_actions(env, ORACLES_OFFICIAL[spec.task_type], seed)
        f = oracle_actions(env, ORACLES[spec.task_type], seed)
        for behaviour, actions in episodes_for(index, a, f, env.task):
            status = play(env, actions, seed)
            turns = env.transcript()
            result, verdict = None, False
            if status == "finished":  # the official harness grades only these
                cleaned = turns[-1].content.strip().replace("```tool_code", "")
                result = cleaned.replace("```", "").strip()[len("FINISH("):-1]
                backend.registry.default_id = env._episode
                history = [SimpleNamespace(role=t.role, content=t.content) for t in turns]
                with contextlib.redirect_stdout(io.StringIO()):
                    verdict = upstream_eval(official[spec.id], SimpleNamespace(
                        history=history, result=result), OFFICIAL_API_BASE) is True
            agree += bool(env._won) == verdict
            lines.append(json.dumps({
                "suite": suite.id, "task": spec.id, "seed": seed, "behaviour": behaviour,
                "branch": env.task.branch, "chart": chart_digest(env.case().records),
                "status": status, "result": result, "turns": encode_turns(turns),
                "refsol": verdict}))
        env.close()
    return agree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--out", default=str(HERE / "fixture.jsonl.gz"))
    args = parser.parse_args()
    sys.path.insert(0, args.upstream)
    from src.server.tasks.medagentbench.eval import eval as upstream_eval

    lines, agree = [], 0
    suites = [get_suite(s) for s in SUITES]
    backend = suites[0].backend()
    assert all(s.backend() is backend for s in suites)
    server = FhirServer(host="127.0.0.1", port=8080)
    server.registry = backend.registry  # (an empty registry is falsy: pass it this way)
    with server:
        for suite in suites:
            agree += run_suite(suite, backend, upstream_eval, lines)
    with open(args.out, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
        out.write(("\n".join(lines) + "\n").encode())
    print(f"{len(lines)} episodes, project graders agree on {agree}")


if __name__ == "__main__":
    main()
