"""Harbor (TB2) task folders laid out as Harbor documents them, key by key
(``fixtures/tb2``: ``word-count`` in the registry's schema-1.1 form with every section,
``line-stats`` in the first ``version = "1.0"`` form): each documented ``task.toml`` key is
honoured, noted or refused with one line; both reward files are read as Harbor reads them; in
the sandbox the oracle (``solution/solve.sh``) passes and submitting at once fails."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tasks.sandbox import sandbox_available
from tasks.terminal.harbor import harbor_reward
from tasks.terminal.taskdir import load_task, network_policy
from tests.tasks.terminal.support import play_oracle

FIXTURES = Path(__file__).parent / "fixtures" / "tb2"


def fixture_copy(tmp_path: Path, name: str, toml: str | None = None, *,
                 dataset: str = "tasks") -> Path:
    """A copy of fixture `name` under ``tmp_path/dataset``, its task.toml replaced by `toml`
    (a whole file) when given."""
    task = tmp_path / dataset / name
    shutil.copytree(FIXTURES / name, task)
    if toml is not None:
        (task / "task.toml").write_text(toml)
    return task


def with_keys(name: str, extra: str) -> str:
    """Fixture `name`'s task.toml with the TOML text `extra` appended (new tables only)."""
    return (FIXTURES / name / "task.toml").read_text() + "\n" + extra


@pytest.fixture
def sandbox() -> None:
    reason = sandbox_available()
    if reason is not None:
        pytest.skip(f"sandbox unavailable: {reason}")


def play(env, actions: list[str]):
    """`actions` in order from a fresh reset; the last step's result."""
    env.reset(seed=0)
    result = None
    for action in actions:
        result = env.step(action)
    return result


# ---- loading: every documented key ----------------------------------------------------------

def test_the_schema_1_1_fixture_is_read_key_by_key():
    task = load_task(FIXTURES / "word-count")
    assert task.unsupported is None and task.format == "tb2"
    assert (task.category, task.difficulty, task.extras["tags"]) == (
        "text-processing", "easy", ["wc", "shell"])
    assert (task.agent_timeout_s, task.verifier_timeout_s) == (75.0, 45.0)
    assert (task.extras["memory_mb"], task.extras["storage_mb"]) == (6144, 64)
    assert task.network == "registries"  # allow_internet = true: Harbor's public default
    assert ("WORDS_FILE", "/app/words.txt") in task.env
    assert task.extras["verifier_env"] == {"EXPECTED_WORDS": "7"}
    assert task.extras["solution_env"] == {"COUNT_OUT": "/app/count.txt"}
    notes = " | ".join(task.notes)
    for said in ("docker_image harness-fixtures/word-count:20250101 not pulled",
                 "cpus = 1 not applied", "build_timeout_sec not applied",
                 "memory 6144 MiB: a per-process data limit",
                 "public network (its default) is given as the package registries"):
        assert said in notes, said
    assert "user" not in notes  # user = "root" is what runs anyway


def test_the_version_1_0_fixture_reads_harbors_deprecated_sizes():
    task = load_task(FIXTURES / "line-stats")
    assert task.unsupported is None and task.network == "none"  # nothing declared
    assert (task.agent_timeout_s, task.verifier_timeout_s) == (60.0, 30.0)
    assert (task.extras["memory_mb"], task.extras["storage_mb"]) == (5 * 1024, 1024)
    assert task.solution_dir is not None and task.extras["solution_env"] == {}


def test_absent_timeouts_take_harbors_verifier_default(tmp_path):
    task = load_task(fixture_copy(tmp_path, "line-stats", 'version = "1.0"\n'))
    assert (task.agent_timeout_s, task.verifier_timeout_s) == (900.0, 600.0)
    assert (task.extras["memory_mb"], task.extras["storage_mb"]) == (None, None)


@pytest.mark.parametrize("extra, noted", [
    ('[agent]\nuser = "agent"\n', "[agent] user = 'agent' not applied"),
    ('[verifier]\nuser = 1000\n', "[verifier] user = 1000 not applied"),
    ('[verifier]\nnetwork_mode = "no-network"\n', "[verifier] network override not applied"),
    ('[agent]\nallowed_hosts = ["pypi.org"]\n', "[agent] network override not applied"),
])
def test_phase_settings_are_noted_not_applied(tmp_path, extra, noted):
    task = load_task(fixture_copy(tmp_path, "line-stats", 'version = "1.0"\n' + extra))
    assert task.unsupported is None and noted in " | ".join(task.notes)


@pytest.mark.parametrize("extra, reason", [
    ("[[steps]]\nname = \"one\"\n", "multi-step task ([[steps]])"),
    ('[verifier.environment]\ndocker_image = "grader:1"\n', "separate verifier environment"),
    ('[verifier]\nenvironment_mode = "separate"\n', "separate verifier environment"),
    ('[environment]\nos = "windows"\n', "os = 'windows'; only linux"),
    ("[environment]\ngpus = 2\n", "needs 2 GPU(s) ([environment]); the sandbox has none"),
    ('[environment.tpu]\ntype = "v6e"\ntopology = "2x4"\n', "needs a TPU"),
    ('[[environment.mcp_servers]]\nname = "search"\ntransport = "sse"\n'
     'url = "http://search:8000/sse"\n', "mcp_servers (search) are not started here"),
    ('[environment.healthcheck]\ncommand = "curl -f localhost:8080"\n', "healthcheck"),
    ('[environment]\nenv = { TOKEN = "${HOST_TOKEN}" }\n',
     "[environment.env] TOKEN = '${HOST_TOKEN}' reads a host variable"),
    ('[verifier]\nenv = { KEY = "${OPENAI_API_KEY:-none}" }\n', "[verifier.env] KEY"),
    ('[solution]\nenv = { KEY = "${SECRET}" }\n', "[solution.env] KEY"),
    ('[environment]\nnetwork_mode = "allowlist"\nallowed_hosts = ["pypi.org", "example.com"]\n',
     "allowed_hosts example.com are outside the registries"),
    ('[environment]\nnetwork_mode = "everything"\n', "network_mode = 'everything'"),
])
def test_what_the_sandbox_cannot_provide_is_refused_in_one_line(tmp_path, extra, reason):
    task = load_task(fixture_copy(tmp_path, "line-stats", 'version = "1.0"\n' + extra))
    assert task.unsupported is not None and reason in task.unsupported, task.unsupported
    assert "\n" not in task.unsupported


def test_a_prebuilt_image_without_a_dockerfile_or_a_compose_environment_is_refused(tmp_path):
    image_only = fixture_copy(tmp_path, "word-count", dataset="a")
    (image_only / "environment" / "Dockerfile").unlink()
    assert "docker_image harness-fixtures/word-count:20250101 is a prebuilt image" in (
        load_task(image_only).unsupported)
    compose = fixture_copy(tmp_path, "word-count", dataset="b")
    (compose / "environment" / "docker-compose.yaml").write_text(
        "services:\n  main:\n    build: .\n  db:\n    image: postgres:16\n")
    assert "environment/docker-compose.yaml (a multi-container" in load_task(compose).unsupported


@pytest.mark.parametrize("extra, reason", [
    ("[verifier]\ntimeout_sec = nan\n", "verifier timeout nan s is out of range"),
    ("[verifier]\ntimeout_sec = -1.0\n", "verifier timeout -1.0 s is out of range"),
    ("[verifier]\ntimeout_sec = inf\n", "verifier timeout inf s is out of range"),
    ("[agent]\ntimeout_sec = 0\n", "agent timeout 0.0 s is out of range"),
    ('[agent]\ntimeout_sec = "900"\n', "[agent] timeout_sec = '900' is not a number"),
    ("[environment]\nmemory_mb = -2048\n", "memory_mb = -2048 is not a positive number of MiB"),
    ("[environment]\nstorage_mb = nan\n", "storage_mb = nan is not a positive number of MiB"),
    ("[environment]\nstorage_mb = 0\n", "storage_mb = 0 is not a positive number of MiB"),
    ("[environment]\nmemory_mb = true\n", "memory_mb = True is not a positive number"),
    ('[environment]\nmemory = "-2G"\n', "memory = -2048 is not a positive number of MiB"),
    ('[environment]\nstorage = "10X"\n', "storage = '10X' is not a size like '2G'"),
    ('[environment]\nmemory = "lots"\n', "memory = 'lots' is not a size"),
    ("[verifier]\nenv = 3\n", "[verifier.env] is not a table"),
])
def test_bad_values_make_the_task_unsupported_with_one_line(tmp_path, extra, reason):
    task = load_task(fixture_copy(tmp_path, "line-stats", 'version = "1.0"\n' + extra))
    assert task.unsupported is not None and reason in task.unsupported, task.unsupported
    assert "\n" not in task.unsupported


@pytest.mark.parametrize("environment, policy", [
    ({"network_mode": "no-network"}, "none"),
    ({"network_mode": "no-network", "allow_internet": True}, "none"),  # network_mode wins
    ({"network_mode": "public"}, "registries"),
    ({"allow_internet": False}, "none"),
    ({"network_mode": "allowlist", "allowed_hosts": ["PyPI.org.", "files.pythonhosted.org"]},
     "registries"),
    ({"allowed_hosts": ["deb.debian.org"]}, "registries"),  # hosts alone mean allowlist
    ({"network_mode": "allowlist", "allowed_hosts": []}, "none"),  # an empty list denies all
])
def test_harbors_network_settings_map_to_a_sandbox_policy(environment, policy, monkeypatch):
    monkeypatch.delenv("HARNESS_EGRESS_ALLOW", raising=False)
    assert network_policy(environment) == policy


# ---- reward files ---------------------------------------------------------------------------

@pytest.mark.parametrize("reward_json, reward_txt, expected", [
    (None, "1\n", (1.0, "reward.txt")),
    (None, "0.25", (0.25, "reward.txt")),
    (None, "-1", (-1.0, "reward.txt")),  # finite values are kept, as Harbor keeps them
    (None, "", (0.0, "reward.txt is empty")),
    (None, "passed", (0.0, "reward.txt is not a number")),
    (None, "nan", (0.0, "reward.txt: nan is not a finite reward")),
    (None, "-inf", (0.0, "reward.txt: -inf is not a finite reward")),
    (None, None, (0.0, "no reward.txt or reward.json")),
    ('{"reward": 1, "speed": 2.5}', None, (1.0, "reward.json (reward=1, speed=2.5)")),
    ('{"accuracy": 0.75}', None, (0.75, "reward.json (accuracy=0.75)")),  # the only one
    ('{"reward": 0, "label": "x", "ok": true}', None, (0.0, "reward.json (reward=0)")),
    ('{"a": 1, "b": 0}', None, (0.0, "reward.json has 2 numeric rewards and none named")),
    ('{"a": 1, "b": 0}', "0.5", (0.5, "reward.json (a=1, b=0, reward=0.5)")),
    ('{"reward": 1}', "0", (1.0, "reward.json (reward=1)")),  # reward.json is read first
    ('{"reward": NaN}', None, (0.0, "reward.json: nan is not a finite reward")),
    ("[1]", None, (0.0, "reward.json is not a JSON object")),
    ("{", None, (0.0, "reward.json is not a JSON object")),
    ("", "1", (0.0, "reward.json is empty")),
])
def test_reward_files_are_read_as_harbor_reads_them(reward_json, reward_txt, expected):
    reward, verdict = harbor_reward(reward_json, reward_txt)
    assert reward == expected[0] and verdict.startswith(expected[1]), verdict


# ---- in the sandbox -------------------------------------------------------------------------

@pytest.fixture
def bench(sandbox) -> Iterator:
    from tasks.terminal import TerminalBenchSuite

    suite = TerminalBenchSuite(FIXTURES)
    assert suite.unsupported == {}
    envs = []

    def make(task_id: str):
        envs.append(suite.make_env(task_id))
        return envs[-1]

    yield make
    for env in envs:
        env.close()


@pytest.mark.parametrize("task_id, verdict", [
    ("word-count", "reward.txt"),
    ("line-stats", "reward.json (reward=1, rows_ok=1, sum_ok=1)"),
])
def test_the_oracle_passes_and_submitting_at_once_fails(bench, task_id, verdict):
    env = bench(task_id)
    refused = play(env, ["submit"])
    assert refused.reward == 0.0 and refused.info["verifier"] in (
        "reward.txt", "reward.json (reward=0, rows_ok=0, sum_ok=0)")
    result = play_oracle(env)
    assert (result.reward, result.info["verifier"]) == (1.0, verdict), result.observation


def test_the_tasks_limits_and_environment_reach_the_episode(bench):
    env = bench("word-count")
    assert (env.limits.wall_s, env.limits.disk_bytes, env.limits.memory_bytes) == (
        75.0, 64 << 20, 6144 << 20)
    assert bench("line-stats").limits.disk_bytes == 1024 << 20
    seen = play(env, ["echo $WORDS_FILE; head -c 96M /dev/zero > /app/big"]).observation
    assert seen.startswith("/app/words.txt\n") and "No space left on device" in seen, seen


def test_a_verifier_slower_than_its_timeout_fails(tmp_path, sandbox):
    from tasks.terminal import TerminalBenchSuite

    toml = (FIXTURES / "word-count" / "task.toml").read_text().replace(
        "timeout_sec = 45.0", "timeout_sec = 1.0")
    task = fixture_copy(tmp_path, "word-count", toml)
    test_sh = task / "tests" / "test.sh"
    test_sh.write_text(test_sh.read_text().replace("mkdir -p", "sleep 3; mkdir -p", 1))
    env = TerminalBenchSuite(tmp_path / "tasks").make_env("word-count")
    try:
        result = play_oracle(env)
    finally:
        env.close()
    assert (result.reward, result.info["verifier"]) == (0.0, "timeout")
