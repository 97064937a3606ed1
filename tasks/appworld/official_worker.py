"""The official AppWorld engine in its own process: one JSON request a line on stdin, one JSON
reply a line on stdout. Run by `tasks.appworld.official` with AppWorld's interpreter (its own
venv: it pins pydantic 1) and the no-network prefix (`tasks.appworld.netns`), so the engine,
the evaluator and the model's code they execute never reach the network.

Requests: ``{"op": "task_ids", "dataset"}``, ``{"op": "reset", "task_id",
"experiment_name"}`` (-> the instruction), ``{"op": "execute", "code"}`` (-> output),
``{"op": "completed"}``, ``{"op": "evaluate"}`` (-> ``{"success", "pass_percentage"}``),
``{"op": "save_state"}``, ``{"op": "load_state", "state_id"}``, ``{"op": "close"}``.
Replies: ``{"ok": value}`` or ``{"error": "Type: message"}``. Imports only the standard
library and ``appworld`` (this checkout's packages need the harness's venv).
"""

import json
import os
import sys
import traceback


OPS = frozenset({"task_ids", "reset", "execute", "completed", "evaluate", "save_state",
                 "load_state", "close"})


class Worker:
    def __init__(self):
        import appworld

        self.appworld = appworld
        self.world = None

    def task_ids(self, dataset):
        return list(self.appworld.load_task_ids(dataset))

    def reset(self, task_id, experiment_name):
        self.close()
        self.world = self.appworld.AppWorld(task_id=task_id, experiment_name=experiment_name)
        return self.world.task.instruction

    def execute(self, code):
        return self.world.execute(code)

    def completed(self):
        return bool(self.world.task_completed())

    def evaluate(self):
        tracker = self.world.evaluate()
        return {"success": bool(tracker.success),
                "pass_percentage": float(tracker.pass_percentage)}

    def save_state(self):
        return self.world.save_state()

    def load_state(self, state_id):
        self.world.load_state(state_id)

    def close(self):
        if self.world is not None:
            self.world.close()
            self.world = None


def main():
    # replies go to a private copy of stdout; anything the engine or the model's code prints
    # lands on stderr instead of in the reply stream
    channel = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    worker = Worker()
    for line in sys.stdin:
        request = json.loads(line)
        op = request.pop("op")
        try:
            if op not in OPS:
                raise ValueError(f"unknown op {op!r}")
            reply = {"ok": getattr(worker, op)(**request)}
        except Exception as exc:  # reported to the adapter, which raises
            traceback.print_exc()
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        channel.write(json.dumps(reply) + "\n")
        if op == "close":
            break


if __name__ == "__main__":
    main()
