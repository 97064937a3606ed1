"""The test suite itself (issue 18, failure 12): a user can run the fast tests alone, and the
slow ones are marked so."""

import ast
import subprocess
import sys
from pathlib import Path

from cli_support import REPO, child_env


def test_readme_documents_the_fast_suite():
    readme = (REPO / "README.md").read_text()
    assert 'pytest -m "not slow"' in readme


def _timeouts(path: Path):
    """(test name, timeout seconds, marked slow) of every test function in `path`."""
    tree = ast.parse(path.read_text())
    module_slow = "pytest.mark.slow" in path.read_text().split("def ", 1)[0]
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            marks = [ast.unparse(d) for d in node.decorator_list]
            timeout = next((ast.literal_eval(m.split("(", 1)[1].rstrip(")"))
                            for m in marks if m.startswith("pytest.mark.timeout(")), None)
            yield node.name, timeout, module_slow or "pytest.mark.slow" in marks


def test_every_test_with_a_long_timeout_is_marked_slow():
    learns = dict((name, (t, slow)) for name, t, slow in _timeouts(
        REPO / "tests" / "harness" / "train" / "test_train_learns.py"))
    assert learns and all(slow for _, slow in learns.values())
    long = [(str(path.relative_to(REPO)), name) for path in sorted((REPO / "tests").rglob(
        "test_*.py")) for name, timeout, slow in _timeouts(path) if timeout and timeout > 600
            and not slow]
    assert long == []


def test_not_slow_deselects_the_slow_tests():
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m",
                           "not slow", "-p", "no:cacheprovider", "tests/reliability"],
                          cwd=REPO, env=child_env(), capture_output=True, text=True, timeout=300)
    collected = done.stdout
    assert "test_rel_suite.py::test_readme_documents_the_fast_suite" in collected, done.stdout
    assert "test_rel_interrupt" not in collected and "test_property_no_5xx" not in collected
