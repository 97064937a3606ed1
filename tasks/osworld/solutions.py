"""Reference solutions the project wrote for the OSWorld tasks the `files` backend supports.

One tuple of actions per task id (``tasks.osworld.files_env`` action format); the oracle plays
them, then ``DONE``. Infeasible tasks need no entry: their reference solution is upstream's
answer, ``FAIL`` (declare the task infeasible). A supported feasible task without an entry
has no oracle, and the tests fail until one is written here.
"""

from __future__ import annotations

import json

from tasks.osworld.loader import OSWorldTask


def _bash(script: str) -> str:
    return f"```bash\n{script}\n```"


def _write_json(path: str, value: object) -> str:
    return _bash(f"mkdir -p \"$(dirname {path})\" && cat > {path} <<'JSON'\n"
                 f"{json.dumps(value, indent=2)}\nJSON")


_VSCODE_USER = "/home/user/.config/Code/User"

SOLUTIONS: dict[str, tuple[str, ...]] = {
    # os
    "f9be0997-4b7c-45c5-b05c-4612b44a6118": (
        _bash("gsettings set org.gnome.desktop.notifications show-banners false"),),
    "e0df059f-28a6-4169-924f-b9623e7184cc": (
        _bash("mv ~/Desktop/todo_list_Jan_1 ~/Desktop/todo_list_Jan_2"),),
    "bedcedc4-4d72-425e-ad62-21960b11fe0d": (
        _bash("gsettings set org.gnome.desktop.session idle-delay 0"),),
    "a4d98375-215b-4a4d-aee9-3d4370fccc41": (
        _bash("gsettings set org.gnome.desktop.screensaver lock-enabled true"),),
    "3ce045a0-877b-42aa-8d2c-b4a863336ab8": (
        _bash("gsettings set org.gnome.desktop.interface text-scaling-factor 1.5"),),
    # upstream's expected list keeps thunderbird and chrome (it drops vim, the second of the
    # three favourites its setup writes); the solution satisfies upstream's evaluator
    "ec4e3f68-9ea4-4c18-a5c9-69f89d1178b3": (
        _bash("gsettings set org.gnome.shell favorite-apps "
              "\"['thunderbird.desktop', 'google-chrome.desktop']\""),),
    # vs_code: settings and key bindings are JSON files in the user's config directory
    "ea98c5d7-3cf9-4f9b-8ad3-366b58e0fcae": (
        _write_json(f"{_VSCODE_USER}/keybindings.json",
                    [{"key": "ctrl+f", "command": "-list.find",
                      "when": "listFocus && listSupportsFind"}]),),
    "930fdb3b-11a8-46fe-9bac-577332e2640e": (
        _write_json(f"{_VSCODE_USER}/keybindings.json",
                    [{"key": "ctrl+j", "command": "workbench.action.focusActiveEditorGroup",
                      "when": "terminalFocus"}]),),
    "9d425400-e9b2-4424-9a4b-d4c7abac4140": (
        _write_json(f"{_VSCODE_USER}/settings.json", {"workbench.editor.wrapTabs": True}),),
    "9439a27b-18ae-42d8-9778-5f68f891805e": (
        _write_json(f"{_VSCODE_USER}/settings.json", {"debug.focusEditorOnBreak": False}),),
    "276cc624-87ea-4f08-ab93-f770e3790175": (
        _write_json(f"{_VSCODE_USER}/settings.json", {"editor.wordWrapColumn": 50}),),
    "982d12a5-beab-424f-8d38-d2a48429e511": (
        _bash(f"mkdir -p {_VSCODE_USER} && printf '%s\\n' "
              f"'{{\"workbench.colorTheme\": \"Visual Studio Dark\"}}' > "
              f"{_VSCODE_USER}/settings.json"),),
    "57242fad-77ca-454f-b71b-f187181a9f23": (
        _bash("touch /home/user/Desktop/test.py"),),
}


def reference_solution(task: OSWorldTask) -> tuple[str, ...] | None:
    """The actions that solve `task` (``("FAIL",)`` for infeasible tasks), None if none."""
    if task.infeasible:
        return ("FAIL",)
    return SOLUTIONS.get(task.id)
