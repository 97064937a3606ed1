"""Rule 6 of the capability check: a feasible task whose official evaluation already passes
on the freshly set-up headless machine is unsupported (the VM snapshot's state differs from
the Debian defaults, e.g. the screen lock already on), since doing nothing would succeed.

Measured, not listed: each feasible task is set up in the sandbox and scored at once (``DONE``).
The scores are cached per root-filesystem digest and task content in the rootfs cache
directory, so only the first suite construction on a machine pays (about a second per task).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path

from tasks.osworld.loader import OSWorldTask

logger = logging.getLogger(__name__)


def _task_digest(task: OSWorldTask) -> str:
    text = json.dumps([task.id, task.config, dict(task.evaluator)], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def initial_scores(tasks: Sequence[OSWorldTask]) -> dict[str, float]:
    """The official score of each task right after setup, with no agent action."""
    from tasks.osworld.files_env import OSWORLD_RECIPE, OSWorldFilesEnv
    from tasks.sandbox import rootfs_cache_dir

    cache_path: Path = rootfs_cache_dir() / f"osworld-initial-{OSWORLD_RECIPE.digest()}.json"
    cache: dict[str, float] = {}
    if cache_path.is_file():
        cache = json.loads(cache_path.read_text())
    scores, changed = {}, False
    for task in tasks:
        key = f"{task.id}:{_task_digest(task)}"
        if key not in cache:
            env = OSWorldFilesEnv(task)
            try:
                env.reset(seed=0)
                cache[key] = env.step("DONE").info["score"]
            finally:
                env.close()
            changed = True
        scores[task.id] = cache[key]
    if changed:
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(cache, indent=1, sort_keys=True))
        tmp.replace(cache_path)
    return scores
