"""End to end: `harness serve` on a free loopback port and `harness run --policy openai:...`
through the real openai client, against `hf:` in-process; faults; a server killed mid-run."""

import signal
import subprocess
import time

import pytest

from harness.records import EpisodeKey
from harness.store import Store
from tests.harness.policies.llm_support import (IMPRINT_OPTIONS, free_port, get_json,
                                                harness_command, serve_subprocess,
                                                stored_episodes, subprocess_env)

pytestmark = pytest.mark.slow
MOVES = {"Left", "Down", "Right", "Up"}


def _run(*args, timeout=300):
    result = subprocess.run(harness_command("run", *args), env=subprocess_env(),
                            capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def _trajectories(db, policy_id):
    episodes = [e for e in stored_episodes(db) if e["policy_id"] == policy_id]
    with Store(db) as store:
        return {(e["task_id"], e["eval_seed"]): (e, store.load_steps(e["run_id"], EpisodeKey(
            e["policy_id"], e["suite"], e["task_id"], e["eval_seed"], e["sample"])))
            for e in episodes}


def test_served_and_in_process_greedy_runs_take_the_same_actions(imprinted_path, tmp_path):
    port = free_port()
    db = tmp_path / "runs.db"
    common = ["--suite", "frozenlake@1", "--tasks", "2", "--max-steps", "6",
              "--concurrency", "1", "--db", str(db)]
    served = f"openai:tiny@http://127.0.0.1:{port}/v1?max_tokens=32&{IMPRINT_OPTIONS}"
    local = f"hf:{imprinted_path}?max_tokens=32&threads=1&{IMPRINT_OPTIONS}"
    with serve_subprocess("--model", f"hf:{imprinted_path}", "--name", "tiny", "--threads",
                          "1", port=port) as server:
        _run("--policy", served, *common)
        stats = get_json(f"http://127.0.0.1:{port}/harness/stats")
        assert server.poll() is None
    _run("--policy", local, *common)
    via_server, in_process = _trajectories(db, served), _trajectories(db, local)
    assert set(via_server) == set(in_process) and len(via_server) == 2
    actions = []
    for key, (episode, steps) in via_server.items():
        other_episode, other_steps = in_process[key]
        assert [s.action for s in steps] == [s.action for s in other_steps]
        assert [s.raw_output for s in steps] == [s.raw_output for s in other_steps]
        for field in ("prompt_tokens", "completion_tokens", "n_steps", "n_invalid", "score"):
            assert episode[field] == other_episode[field], field
        assert episode["status"] == "ok" and episode["prompt_tokens"] > 0
        actions += [s.action for s in steps]
    assert stats["completed"] == len(actions)
    assert sum(a in MOVES for a in actions) >= len(actions) // 2  # parsed actions compared


def test_faulty_server_run_stores_every_episode_once_and_counts_retries(tmp_path, monkeypatch):
    import harness.cli as cli
    import harness.policies as policies
    from harness.policies import register_model_backends
    from harness.policies.backends import make_model_policy

    register_model_backends()
    built, per_episode = [], {}

    def factory(spec, argument):
        policy = make_model_policy(spec)
        act = policy.act

        async def counted(context):
            decision = await act(context)
            entry = per_episode.setdefault(id(context), [context, 0])  # keeps the id unique
            entry[1] += decision.retries
            return decision

        policy.act = counted
        built.append(policy)
        return policy

    monkeypatch.setitem(policies._BACKENDS, "openai", (factory, "counting"))
    port = free_port()
    db = tmp_path / "faults.db"
    spec = (f"openai:echo@http://127.0.0.1:{port}/v1?max_tokens=8&backoff=0.005"
            "&backoff_max=0.05&max_retries=40")
    with serve_subprocess("--model", "echo", "--fail-rate", "0.3", "--latency-ms", "5",
                          "--latency-jitter-ms", "60", "--fault-seed", "7", port=port):
        code = cli.main(["run", "--policy", spec, "--suite", "frozenlake@1", "--tasks", "6",
                         "--eval-seeds", "2", "--max-steps", "5", "--concurrency", "4",
                         "--db", str(db)])
        stats = get_json(f"http://127.0.0.1:{port}/harness/stats")
    assert code == 0
    episodes = stored_episodes(db)
    keys = {(e["task_id"], e["eval_seed"]) for e in episodes}
    assert len(episodes) == len(keys) == 12
    assert all(e["status"] == "ok" and e["n_steps"] == 5 for e in episodes)
    faults = stats["injected_429"] + stats["injected_500"]
    assert stats["injected_429"] > 0 and stats["injected_500"] > 0
    assert len(per_episode) == 12 and sum(n for _, n in per_episode.values()) == faults
    assert built[0].stats()["retries"] == faults and stats["completed"] == 60


def _count(db):
    try:
        return len(stored_episodes(db))
    except Exception:  # noqa: BLE001 - the database may not exist yet
        return 0


def test_server_killed_mid_run_then_rerun_resumes_and_loses_nothing(tmp_path):
    port = free_port()
    db = tmp_path / "resume.db"
    spec = (f"openai:echo@http://127.0.0.1:{port}/v1?max_tokens=8&backoff=0.05"
            "&backoff_max=0.2&max_retries=1000&timeout=5")
    args = ["--policy", spec, "--suite", "frozenlake@1", "--tasks", "6", "--eval-seeds",
            "2", "--max-steps", "8", "--concurrency", "3", "--db", str(db)]
    serve = ["--model", "echo", "--latency-ms", "100"]
    env = subprocess_env()
    with serve_subprocess(*serve, port=port) as server:
        run = subprocess.Popen(harness_command("run", *args), env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while _count(db) < 3:
            assert run.poll() is None, run.stderr.read()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        server.send_signal(signal.SIGKILL)
        server.wait()
    time.sleep(1.0)  # the run's episodes are now retrying against a dead port
    assert run.poll() is None, "the run must keep retrying, not fail its episodes"
    run.send_signal(signal.SIGKILL)
    run.wait()
    before = stored_episodes(db)
    assert 3 <= len(before) < 12 and all(e["status"] == "ok" for e in before)
    with serve_subprocess(*serve, port=port):
        result = _run(*args)
    assert f"resuming: {len(before)} of 12 episodes already stored" in result.stderr
    after = stored_episodes(db)
    assert len(after) == len({(e["task_id"], e["eval_seed"]) for e in after}) == 12
    assert all(e["status"] == "ok" and e["n_steps"] == 8 for e in after)
    unchanged = {(e["task_id"], e["eval_seed"]): e["finished_at"] for e in before}
    assert all(unchanged[k] == e["finished_at"] for e in after
               if (k := (e["task_id"], e["eval_seed"])) in unchanged)


def test_serve_command_rejects_bad_flags(tmp_path):
    result = subprocess.run(harness_command("serve", "--model", str(tmp_path), "--port",
                                            str(free_port())), env=subprocess_env(),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "not a model directory" in result.stderr and "Traceback" not in result.stderr
    result = subprocess.run(harness_command("serve", "--model", "echo", "--fail-rate", "2"),
                            env=subprocess_env(), capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "--fail-rate" in result.stderr
