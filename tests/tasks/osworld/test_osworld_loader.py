"""OSWorld loader, static capability check, official-function bridge and action parsing
(fast: no sandbox)."""

import collections
import json

import pytest

from harness.core import MissingDependencyError
from tasks.osworld.capability import classify, command_programs
from tasks.osworld.desktop import load_desktop_env, parse_desktop_action
from tasks.osworld.files_env import parse_action
from tasks.osworld.loader import OSWorldDataError, load_tasks, parse_task
from tasks.osworld.official import OfficialFunctionError, function_problem, official_function


@pytest.fixture(scope="module")
def tasks():
    return load_tasks()


def test_loader_parses_all_369_official_tasks(tasks):
    assert len(tasks) == 369
    by_domain = collections.Counter(t.domain for t in tasks)
    assert by_domain == {"chrome": 46, "gimp": 26, "libreoffice_calc": 47,
                         "libreoffice_impress": 47, "libreoffice_writer": 23, "multi_apps": 101,
                         "os": 24, "thunderbird": 15, "vlc": 17, "vs_code": 23}
    assert sum(t.infeasible for t in tasks) == 30
    assert all(t.instruction and t.evaluator.get("func") is not None for t in tasks)


def test_loader_errors_are_one_line(tmp_path):
    with pytest.raises(OSWorldDataError, match="OSWORLD_TASKS"):
        load_tasks(tmp_path)
    with pytest.raises(OSWorldDataError, match="lacks 'evaluator'"):
        parse_task({"id": "x", "instruction": "y"}, "os")


def test_capability_check_gives_every_unsupported_task_a_reason(tasks):
    verdicts = [classify(t) for t in tasks]
    kinds = collections.Counter(v.kind for v in verdicts if not v.supported)
    assert all(v.reason for v in verdicts if not v.supported)
    assert kinds == {"download": 253, "live GUI state": 55, "network": 14,
                     "official function": 10, "program missing": 6}
    # statically supported: 31 (one more is dropped by the measured initial-state rule)
    assert sum(v.supported for v in verdicts) == 31


def test_capability_rules_follow_the_task_json():
    base = {"id": "t", "instruction": "Rename the file.", "config": [],
            "evaluator": {"func": "exact_match",
                          "result": {"type": "vm_command_line", "command": "ls ~/Desktop"},
                          "expected": {"type": "rule", "rules": {"expected": "a\n"}}}}
    assert classify(parse_task(base, "os")).supported
    download = {**base, "config": [{"type": "download", "parameters": {"files": []}}]}
    assert classify(parse_task(download, "os")).kind == "download"
    screen = json.loads(json.dumps(base))
    screen["evaluator"]["result"] = {"type": "vm_screen_size"}
    assert classify(parse_task(screen, "os")).kind == "live GUI state"
    gold = json.loads(json.dumps(base))
    gold["evaluator"]["expected"] = {"type": "cloud_file", "path": "https://x", "dest": "y"}
    assert classify(parse_task(gold, "os")).kind == "gold file"
    tool = json.loads(json.dumps(base))
    tool["evaluator"]["result"]["command"] = "timedatectl status"
    assert classify(parse_task(tool, "os")).kind == "program missing"
    background = {**base, "config": [{"type": "execute", "parameters": {
        "command": "nohup ./loop.sh > /dev/null 2>&1 &", "shell": True}}]}
    assert classify(parse_task(background, "os")).kind == "live process"
    heavy = json.loads(json.dumps(base))
    heavy["evaluator"]["func"] = "compare_images"  # metrics.vlc imports opencv and librosa
    assert classify(parse_task(heavy, "vlc")).kind == "official function"


def test_command_programs_reads_pipelines():
    assert command_programs("echo password | sudo -S mkdir ~/x && ls") == ["echo", "mkdir", "ls"]
    assert command_programs(["code", "--list-extensions", "|", "grep", "x"]) == ["code", "grep"]
    assert command_programs("A=1 python3 -c 'print(1)'") == ["python3"]


def test_official_functions_come_from_desktop_env():
    metric = official_function("metrics", "check_json_settings")
    assert metric.__module__ == "desktop_env.evaluators.metrics.vscode"
    assert official_function("getters", "get_rule")({}, {"rules": {"a": 1}}) == {"a": 1}
    assert "opencv" in (function_problem("metrics", "compare_images") or "") or \
        "cv2" in (function_problem("metrics", "compare_images") or "") or \
        "acoustid" in (function_problem("metrics", "compare_images") or "")
    with pytest.raises(OfficialFunctionError, match="no function"):
        official_function("metrics", "no_such_metric")


def test_action_parsing():
    assert parse_action("DONE") == ("DONE", "")
    assert parse_action(" fail ") == ("FAIL", "")
    assert parse_action("```bash\nls -la\n```") == ("bash", "ls -la")
    assert parse_action("```python\nprint(1)\n```") == ("python", "print(1)")
    assert parse_action("ls -la") is None
    assert parse_action("<<this is not an action>>") is None


def test_desktop_backend_is_import_guarded_and_parses_actions():
    with pytest.raises(MissingDependencyError, match="OSWorld VM backend"):
        load_desktop_env()
    assert parse_desktop_action("done", "pyautogui") == "DONE"
    assert parse_desktop_action("pyautogui.click(10, 20)", "pyautogui") == \
        "pyautogui.click(10, 20)"
    assert parse_desktop_action('{"action_type": "CLICK", "x": 1, "y": 2}', "computer_13") == \
        {"action_type": "CLICK", "x": 1, "y": 2}
    with pytest.raises(SyntaxError):
        parse_desktop_action("click here please", "pyautogui")
