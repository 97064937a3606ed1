"""Which official OSWorld tasks the headless `files` backend can run, each with a reason.

Decided from the task's own ``config``, ``evaluator`` (and ``postconfig``) and the
instruction, never from a list of task ids:

1. setup or post-evaluation steps that fetch files (``download``, ``googledrive``, ``login``)
   or drive a live browser (``chrome_open_tabs``, ...) -> unsupported;
2. a step or the instruction that needs the network (a URL, ``apt-get install``, ``pip
   install``, an instruction to install software) or a background process that must outlive its step (``... &``) -> unsupported;
3. every result/expected getter must read on-disk state (files, command output): getters of
   screen, window, browser or accessibility-tree state, expected values fetched from cloud
   storage (gold files not in the task data) and getters that look data up online make the
   task unsupported;
4. every program a command runs (setup, getter) must exist in the backend's root filesystem
   (`ROOTFS_PROGRAMS`); keystrokes sent with ``pyautogui`` and app launches are reduced to
   what they leave on disk (nothing);
5. the official metric and getter functions must import with the ``osworld`` extra.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tasks.osworld.loader import OSWorldTask
from tasks.osworld.official import function_problem

#: Setup step types the backend runs or reduces to their on-disk effect.
RUN_STEPS = frozenset({"execute", "command"})
NO_DISK_EFFECT_STEPS = frozenset({"launch", "open", "activate_window", "sleep"})
FETCH_STEPS = frozenset({"download", "googledrive", "login"})
GUI_STEPS = frozenset({"chrome_open_tabs", "chrome_close_tabs", "update_browse_history"})

#: Getters that read files or run a command: what a headless machine can answer. The only
#: getters grading runs (`tasks.osworld.grading.evaluate` refuses a task using any other).
ON_DISK_GETTERS = frozenset({"vm_file", "vm_command_line", "vm_command_error", "cache_file",
                             "content_from_vm_file", "list_directory", "vlc_config",
                             "gimp_config_file", "rule"})
#: Getters that reach the network from the host: upstream's ``rule_relativeTime`` asks
#: https://ipapi.co/json/ for the timezone when the rules name none (desktop-env 1.0.2,
#: ``getters/misc.py``, ``get_timezone_from_ip``).
NETWORK_GETTERS = frozenset({"rule_relativeTime"})
CLOUD_GETTERS = frozenset({"cloud_file", "googledrive_file", "pdf_from_url",
                           "info_from_website", "gotoRecreationPage_and_get_html_content"})

#: Programs the `files` backend's root filesystem provides (`tasks.osworld.files_env`
#: recipe; a test checks each one exists there).
ROOTFS_PROGRAMS = frozenset({
    "bash", "sh", "echo", "cat", "ls", "mkdir", "touch", "chmod", "cp", "mv", "rm", "[",
    "test", "grep", "sed", "awk", "head", "tail", "find", "sort", "wc", "cut", "tr", "ps",
    "kill", "pkill", "python", "python3", "gsettings", "jq", "sudo", "which", "true",
    "false", "if", "then", "else", "fi", "stat", "id", "dpkg", "diff", "file", "cd",
    "export", "set", "source", "nohup", "sleep", "xargs", "tee", "printf",
})

_URL = re.compile(r"https?://")
_INSTALLS = re.compile(r"\binstall(ing|ed)?\b", re.I)
_NETWORK = re.compile(r"\b(apt(-get)?\s+(-\S+\s+)*install|pip3?\s+install|git\s+clone|wget|"
                      r"curl)\b")


@dataclass(frozen=True)
class Capability:
    """`supported` for the `files` backend, else `reason` (one line, grouped by `kind`)."""

    supported: bool
    kind: str = ""
    reason: str = ""


def _command_text(command: Any) -> str:
    return command if isinstance(command, str) else " ".join(map(str, command))


def command_programs(command: Any) -> list[str]:
    """The programs a setup/getter command runs (the first word of each simple command)."""
    if not isinstance(command, str):
        command = " ".join(shlex.quote(str(a)) if str(a) != "|" else "|" for a in command)
    lexer = shlex.shlex(command.replace("\n", " ; "), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        tokens = command.split()
    programs, expect_program = [], True
    for token in tokens:
        if set(token) <= set("|&;()<>"):
            expect_program = token not in (">", "<", ">>", "2>")
            continue
        if not expect_program or re.match(r"^[A-Za-z_]\w*=", token):
            continue
        if token in ("sudo", "nohup", "-S", "then", "do", "else", "!"):
            continue
        if not token.startswith(("-", "$", "{", "}", "]")):
            programs.append(token.split("/")[-1])
        expect_program = False
    return programs


def is_gui_input(command: Any) -> bool:
    """A step that only sends keystrokes/clicks (``python -c 'import pyautogui; ...'``)."""
    return "pyautogui" in _command_text(command)


def _step_problem(step: Mapping[str, Any]) -> tuple[str, str] | None:
    kind = step.get("type", "")
    params = step.get("parameters") or {}
    if kind in FETCH_STEPS:
        return "download", f"setup step {kind!r} fetches files from the network"
    if kind in GUI_STEPS:
        return "live GUI state", f"setup step {kind!r} drives a live browser"
    if kind in NO_DISK_EFFECT_STEPS:
        return None
    if kind not in RUN_STEPS:
        return "unknown step", f"setup step {kind!r} is not supported"
    command = params.get("command", "")
    if is_gui_input(command):
        return None
    return _command_problem(command, f"setup command {_command_text(command)[:60]!r}")


def _command_problem(command: Any, where: str) -> tuple[str, str] | None:
    text = _command_text(command)
    if _URL.search(text) or _NETWORK.search(text):
        return "network", f"{where} needs the network"
    if re.search(r"(?<![&>])&\s*$", text.strip()) or re.search(r"&\s*\n", text):
        return "live process", f"{where} starts a background process"
    missing = sorted(set(command_programs(command)) - ROOTFS_PROGRAMS)
    if missing:
        return "program missing", f"{where} runs {', '.join(missing)} (not in the headless rootfs)"
    return None


def _getter_problem(config: Mapping[str, Any]) -> tuple[str, str] | None:
    kind = config.get("type")
    if kind in CLOUD_GETTERS:
        return "gold file", f"getter {kind!r} fetches a gold file that is not in the task data"
    if kind in NETWORK_GETTERS:
        return "network", f"getter {kind!r} looks data up online"
    if kind not in ON_DISK_GETTERS:
        return "live GUI state", f"getter {kind!r} reads live GUI/app state"
    if kind in {"vm_command_line", "vm_command_error"}:
        problem = _command_problem(config.get("command", ""), "getter command")
        if problem:
            return problem
    problem = function_problem("getters", f"get_{kind}")
    return ("official function", problem) if problem else None


def _first(problems: Iterable[tuple[str, str] | None]) -> tuple[str, str] | None:
    return next((p for p in problems if p), None)


def classify(task: OSWorldTask) -> Capability:
    """The `files` backend's verdict on one task (see the module docstring for the rules)."""
    steps = [*task.config, *task.postconfig]
    problem = _first(_step_problem(s) for s in steps)
    if problem is None and _URL.search(task.instruction):
        problem = ("network", "the instruction points at a web resource")
    if problem is None and _INSTALLS.search(task.instruction):
        problem = ("network", "the task installs software (needs the network)")
    if problem is None and not task.infeasible:
        if not task.funcs or not all(task.funcs):
            problem = ("no evaluator", "the task has no evaluator function")
        else:
            getters = [*task.getter_configs("result"), *task.getter_configs("expected")]
            problem = _first(_getter_problem(g) for g in getters)
            problem = problem or _first(
                ("official function", p) if (p := function_problem("metrics", f)) else None
                for f in task.funcs)
    if problem is None:
        return Capability(True)
    return Capability(False, problem[0], problem[1])
