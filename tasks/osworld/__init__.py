"""OSWorld: the official task JSON, a capability check, the official evaluator functions
(PyPI ``desktop-env``) and two backends: `files` (headless, a sandbox; suite
``osworld-files@1``) and `desktop` (upstream's ``DesktopEnv`` and its VM providers, for users
who have one)."""

from tasks.osworld.capability import Capability, classify
from tasks.osworld.loader import OSWorldTask, default_tasks_dir, load_tasks
from tasks.osworld.suite import OSWorldFilesSuite

__all__ = ["Capability", "OSWorldFilesSuite", "OSWorldTask", "classify", "default_tasks_dir",
           "load_tasks"]
