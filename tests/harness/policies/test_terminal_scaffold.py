"""The ``terminal@1`` scaffold: its parser (hand cases, hypothesis), its prompt (window, cuts,
token budget), suites' default scaffolds, and `harness run` of an ``openai:`` policy against
`harness serve`'s app on two ``terminal-lite@2`` tasks."""

from __future__ import annotations

import json
import re
import subprocess

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.core import ConfigError
from harness.policies import make_policy
from harness.policies.base import EpisodeContext
from harness.policies.model import Completion, apply_suite_scaffolds
from harness.policies.scaffold import INVALID_ACTION, make_scaffold, scaffold_names
from harness.policies.terminal_scaffold import (SUBMIT, TerminalScaffold, parse_command,
                                                render_action, truncate_output)
from harness.records import EpisodeKey
from harness.serve.engines import EchoEngine, Prompted
from harness.store import Store
from tasks import get_suite
from tasks.base import TaskSpec
from tasks.terminal.env import oracle_actions

B = "```"


@pytest.mark.parametrize("reply, action", [
    (f"I list the files.\n{B}bash\nls -la /app\n{B}", "ls -la /app"),
    (f"{B}sh\npwd\n{B}", "pwd"),
    (f"{B}\n  echo hi  \n{B}\n", "echo hi"),
    (f"{B}BASH title\nls\n{B}", "ls"),
    (f"{B}bash\ncat > a.py <<'EOF'\ndef f():\n    return 1\nEOF\npython3 a.py\n{B}",
     "cat > a.py <<'EOF'\ndef f():\n    return 1\nEOF\npython3 a.py"),
    (f"{B}bash\nfor f in *.txt; do\n\twc -l \"$f\"\ndone\n{B}",
     "for f in *.txt; do\n\twc -l \"$f\"\ndone"),
    (f"{B}bash\nsubmit\n{B}", SUBMIT),
    (f"{B}bash\nSubmit\n{B}", SUBMIT),
    (f"{B}bash\nmake test\nsubmit\n{B}", "make test\nsubmit"),  # the env runs it, then submits
    ("The task is done.\nsubmit", SUBMIT),
    ("`submit`", SUBMIT),
    (f"{B}text\noutput I expect\n{B}\n{B}bash\nls\n{B}", "ls"),
    (f"<think>maybe\n{B}bash\nrm -rf /\n{B}\n</think>\n{B}bash\nls\n{B}", "ls"),
    (f"reasoning opened in the prompt</think>\n{B}bash\nls\n{B}", "ls"),
    (f"{B}bash\necho '<think>' '</think>'\n{B}", "echo '<think>' '</think>'"),
    (f"````bash\necho '{B}'\n````", f"echo '{B}'"),
    (f'{B}json\n{{"tool": "view", "path": "a.py", "start": 1, "end": 9}}\n{B}',
     '{"tool": "view", "path": "a.py", "start": 1, "end": 9}'),
])
def test_parse_reads_one_command_verbatim(reply, action):
    parsed = parse_command(reply)
    assert parsed.ok, parsed.error
    assert parsed.action == action


@pytest.mark.parametrize("reply, error", [
    ("ls -la", "no code block"),
    ("", "no code block"),
    (None, "output is not text"),
    (f"{B}bash\nls\n{B}\n{B}bash\npwd\n{B}", "2 code blocks"),
    (f"{B}bash\ncat <<EOF > a\nx\n", "unclosed code block"),  # cut at max_tokens
    (f"{B}bash\n\n  \n{B}", "empty command"),
    (f"{B}python\nprint(1)\n{B}", "no shell code block (only python)"),
    (f"{B}bash\necho \x00\n{B}", "non-printable"),
    (f"<think>{B}bash\nls\n{B}", "no code block"),  # only inside unclosed reasoning
    (f"{B}bash\n{'x' * 9000}\n{B}", "longer than 8000"),
    ("I will now submit the work.", "no code block"),
])
def test_parse_rejects(reply, error):
    parsed = parse_command(reply)
    assert not parsed.ok and parsed.env_action == INVALID_ACTION
    assert error in parsed.error


REPLY_PARTS = st.sampled_from(["```", "````", "```bash", "```sh", "```json", "```text", "\n",
                               "<think>", "</think>", "submit", "`", " ", "ls -la", "EOF",
                               "\r", "\x00", "\u2028"])


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), st.lists(st.one_of(REPLY_PARTS, st.text(max_size=5)))
                 .map("".join)))
def test_parse_never_raises(reply):
    parsed = make_scaffold("terminal@1").parse(reply)
    assert parsed.ok == (parsed.action is not None)
    if parsed.ok:
        assert parsed.action == parsed.action.strip() and parsed.action


COMMAND = st.text(st.characters(codec="utf-8", exclude_categories=("Cc", "Cs", "Zl", "Zp"),
                                exclude_characters="\ufffd") | st.sampled_from("`\n\t <>"),
                  min_size=1, max_size=300).filter(lambda c: c.strip())


@settings(max_examples=300, deadline=None)
@given(COMMAND, st.sampled_from(["", "Reasoning first.\n", "<think>x</think>\n"]))
def test_render_then_parse_gives_the_command_back(command, before):
    parsed = parse_command(before + render_action(command))
    expected = SUBMIT if command.strip().lower() == SUBMIT else command.strip()
    assert parsed.action == expected, parsed.error


def test_truncate_output_keeps_head_and_tail_and_states_the_cut():
    text = "".join(f"line {i}\n" for i in range(1000))
    cut = truncate_output(text, 200)
    assert cut.startswith("line 0\n") and cut.endswith("line 999\n")
    omitted = int(re.search(r"\[\.\.\. (\d+) characters omitted \.\.\.\]", cut).group(1))
    assert omitted == len(text) - 200 and len(cut) < 260
    assert truncate_output("short", 200) == "short"


def _context(history, observation, instructions="RULES"):
    task = TaskSpec("t", "test", "files")
    return EpisodeContext("terminal-lite@2", task, {}, None, np.random.default_rng(0),
                          observation, {}, list(history), len(history), instructions, True)


def test_prompt_keeps_the_task_and_a_window_of_turns():
    history = [("TASK: count words", "ls"), ("a.txt\n[exit code 0]", "wc -w a.txt"),
               ("3 a.txt\n[exit code 0]", INVALID_ACTION), ("invalid command: x", "echo 3")]
    scaffold = TerminalScaffold(history=2)
    messages = scaffold.messages(_context(history, "3\n[exit code 0]"))
    roles = [m["role"] for m in messages]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]
    assert messages[0]["content"].startswith("RULES\n\n") and "```bash" in messages[0]["content"]
    assert messages[1]["content"].startswith("TASK: count words\n\n[2 earlier turns omitted]")
    assert messages[1]["content"].endswith("3 a.txt\n[exit code 0]")
    assert "could not be parsed" in messages[2]["content"]
    assert parse_command(messages[4]["content"]).action == "echo 3"
    assert messages[5]["content"].startswith("3\n[exit code 0]")
    full = TerminalScaffold(history=10).messages(_context(history, "3"))
    assert [m["content"] for m in full[1:3]] == ["TASK: count words", render_action("ls")]
    first = TerminalScaffold().messages(_context([], "TASK: count words"))
    assert [m["role"] for m in first] == ["system", "user"]


def test_prompt_cuts_long_outputs_and_fits_the_budget():
    history = [("TASK", "cat big"), ("y\n" * 5000, "cat big")]
    scaffold = TerminalScaffold(history=4)
    messages = scaffold.messages(_context(history, "z\n" * 20000))
    assert "characters omitted" in messages[3]["content"] and len(messages[3]["content"]) < 3200
    assert "characters omitted" in messages[5]["content"]

    def count(msgs):  # one token per 4 characters
        return sum(len(m["content"]) for m in msgs) // 4

    fitted = scaffold.messages(_context(history, "z\n" * 20000), budget=800,
                               count_tokens=count)
    assert count(fitted) <= 800
    assert fitted[1]["content"].startswith("TASK") and "omitted" in fitted[1]["content"]
    assert "characters omitted" in fitted[-1]["content"]


def test_terminal_is_registered_and_its_spec_round_trips():
    assert "terminal@1" in scaffold_names()
    scaffold = make_scaffold("terminal@1", history=3, max_action_chars=200)
    assert scaffold.spec.to_dict() == {"id": "terminal@1", "name": "terminal", "version": 1,
                                       "history": 3, "max_action_chars": 8000,
                                       "chat_template": "model"}
    assert make_scaffold(scaffold.spec.to_dict()).spec == scaffold.spec


def test_suites_name_their_default_scaffold():
    url = "@http://127.0.0.1:9/v1?client=direct"
    lite, lake = get_suite("terminal-lite@2"), get_suite("frozenlake@1")
    free, pinned = make_policy(f"openai:m{url}"), make_policy(f"openai:m{url}&format=react")
    apply_suite_scaffolds([free, pinned], [lite])
    assert free.scaffold.spec.id == "terminal@1" and free.provenance["scaffold"]["id"] == \
        "terminal@1"
    assert pinned.scaffold.spec.id == "react@1"
    apply_suite_scaffolds([free], [lake])
    assert free.scaffold.spec.id == "think@1"
    with pytest.raises(ConfigError, match="different scaffolds"):
        apply_suite_scaffolds([free], [lite, lake])
    apply_suite_scaffolds([pinned], [lite, lake])  # a pinned scaffold serves both


# ---- end to end: harness run -> openai client -> harness serve app -> sandbox ---------------

class OracleEngine(EchoEngine):
    """Replies to each terminal-lite prompt with the task's next oracle command (then
    ``submit``) in the terminal scaffold's format, written out here by hand."""

    def __init__(self, suite):
        super().__init__("oracle-script")
        self.scripts = {}
        for spec in suite.tasks():
            task = suite.terminal_task(spec.id)
            self.scripts[task.instruction] = [*oracle_actions(task), SUBMIT]
        self.replies = 0

    async def chat(self, messages, sampling, *, clamp=False):
        task = messages[1]["content"]
        script = max((s for i, s in self.scripts.items() if task.startswith(i)), key=len)
        omitted = re.search(r"\[(\d+) earlier turns? omitted\]", task)
        turn = sum(m["role"] == "assistant" for m in messages) + (
            int(omitted.group(1)) if omitted else 0)
        command = script[turn]
        assert "`" not in command
        self.replies += 1
        return Prompted(len(str(messages)), [Completion(
            f"Next step of the solution.\n```bash\n{command}\n```", "stop")])


def test_harness_run_openai_policy_on_terminal_lite(tmp_path):
    from tasks.sandbox import sandbox_available

    reason = sandbox_available()
    if reason is not None:
        pytest.skip(f"sandbox unavailable: {reason}")
    from harness.serve.app import create_app
    from tests.harness.policies.llm_support import (free_port, harness_command,
                                                    stored_episodes, subprocess_env,
                                                    thread_server)

    suite = get_suite("terminal-lite@2")
    engine, port, db = OracleEngine(suite), free_port(), tmp_path / "runs.db"
    policy = f"openai:oracle-script@http://127.0.0.1:{port}/v1?client=direct"
    with thread_server(create_app(engine), port):
        done = subprocess.run(harness_command(
            "run", "--policy", policy, "--suite", "terminal-lite@2", "--tasks", "2",
            "--split", "test", "--db", str(db), "--concurrency", "2"),
            env=subprocess_env(), capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    with Store(db, readonly=True) as store:
        episodes = store.load_episodes()
        run_id = episodes["run_id"].iloc[0]
        config = store.run_config(run_id)
        assert config["scaffolds"][policy]["id"] == "terminal@1"
        assert len(episodes) == 2 and set(episodes["status"]) == {"ok"}
        assert episodes["n_invalid"].sum() == 0 and episodes["success"].all()
        for row in episodes.itertuples():
            key = EpisodeKey(row.policy, row.suite, row.task_id, int(row.eval_seed),
                             int(row.sample))
            steps = store.load_steps(run_id, key)
            task = suite.terminal_task(row.task_id)
            assert [s.action for s in steps] == [*map(str.strip, oracle_actions(task)), SUBMIT]
            assert "[exit code 0]" in steps[1].observation  # the command ran in the sandbox
            assert "```bash" in steps[0].raw_output
    assert engine.replies == int(episodes["n_steps"].sum())  # one request per turn
    for stored in stored_episodes(db):
        assert json.loads(stored["policy_provenance"])["scaffold"]["id"] == "terminal@1"


@pytest.mark.slow
def test_harness_run_hf_and_checkpoint_policies_on_terminal_lite(tmp_path, tiny_path):
    """A local model (random weights: its replies are unparsed, each an invalid turn, never a
    crash) gets the suite's terminal@1; a checkpoint keeps the scaffold it was trained with."""
    import shutil

    from tasks.sandbox import sandbox_available

    reason = sandbox_available()
    if reason is not None:
        pytest.skip(f"sandbox unavailable: {reason}")
    from harness.policies.checkpoint import write_checkpoint_metadata
    from tests.harness.policies.llm_support import (harness_command, stored_episodes,
                                                    subprocess_env)

    checkpoint = tmp_path / "checkpoint"
    shutil.copytree(tiny_path, checkpoint)
    trained = {"name": "bare", "version": 1, "history": 2, "max_action_chars": 200,
               "chat_template": "model"}
    write_checkpoint_metadata(checkpoint, train_seed=3, step=5, scaffold=trained)
    hf = f"hf:{tiny_path}?max_tokens=16&threads=1"
    ckpt = f"checkpoint:{checkpoint}?max_tokens=16&threads=1"
    db = tmp_path / "runs.db"
    done = subprocess.run(harness_command(
        "run", "--policy", f"{hf},{ckpt}", "--suite", "terminal-lite@2", "--tasks", "1",
        "--max-steps", "2", "--db", str(db)), env=subprocess_env(), capture_output=True,
        text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    with Store(db, readonly=True) as store:
        config = store.run_config(store.load_episodes()["run_id"].iloc[0])
    assert config["scaffolds"][hf]["id"] == "terminal@1"
    assert config["scaffolds"][ckpt] == {"id": "bare@1", **trained}
    episodes = {e["policy_id"]: e for e in stored_episodes(db)}
    assert {e["status"] for e in episodes.values()} == {"ok"}
    assert [episodes[p]["n_steps"] for p in (hf, ckpt)] == [2, 2]
    assert episodes[hf]["n_invalid"] == 2  # random bytes hold no ```bash block
