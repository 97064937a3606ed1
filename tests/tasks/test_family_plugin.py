"""A family outside this tree plugs in with no edit under `harness/` (nor under `tasks/`).

A throwaway family in a temporary package (a suite, a CLI subcommand, a bench) is installed
the way a user installs one: a distribution on ``sys.path`` whose entry point in the group
`tasks.plugins.ENTRY_POINT_GROUP` names the module that registers it. It then runs through
`harness list`, its own subcommand, `harness bench`, `harness run` and `harness audit`.
"""

from __future__ import annotations

import sys
import textwrap

import pytest

import tasks.base
import tasks.plugins
from harness.cli import main
from harness.store import load_episodes
from tasks.base import check_env, get_suite

FAMILY = {
    "__init__.py": """
        from tasks.plugins import register_bench, register_commands
        from tasks.base import register_suite

        register_suite("coinflip", 1, "throwaway_family.suite:CoinSuite")
        register_commands("throwaway_family.cli")
        register_bench("coinflip", "throwaway_family.cli:bench_report")
        """,
    "suite.py": """
        from tasks.base import StepResult, SuiteBase, TaskSpec

        class CoinEnv:
            max_steps = 3

            def __init__(self, side):
                self.side = side

            def reset(self, *, seed):
                self.t = 0
                return "call heads or tails", self._info(False, 0.0, False)

            def _info(self, won, score, invalid):
                return {"won": won, "score": score, "invalid": invalid,
                        "admissible_actions": ["heads", "tails"]}

            def step(self, action):
                self.t += 1
                action = action.strip().lower()
                if action not in ("heads", "tails"):
                    return StepResult("say heads or tails", 0.0, False,
                                      self.t >= self.max_steps, self._info(False, 0.0, True))
                won = action == self.side
                return StepResult("done", float(won), True, False,
                                  self._info(won, float(won), False))

            def oracle_action(self):
                return self.side

        class CoinSuite(SuiteBase):
            name = "coinflip"
            version = 1
            description = "throwaway plugin family: call the coin"
            trivial_actions = {"say heads": "heads"}
            instructions = "Answer heads or tails."

            def __init__(self):
                super().__init__([TaskSpec(f"{split}-{i}", split, "call", {"side": side})
                                  for split in ("train", "dev", "test") for i, side in
                                  enumerate(("heads", "tails", "heads", "tails"))])

            def make_env(self, task_id):
                return CoinEnv(self.task(task_id).metadata["side"])
        """,
    "cli.py": """
        def add_commands(subparsers):
            p = subparsers.add_parser("coinflip", help="the throwaway family's command")
            p.add_argument("--times", type=int, default=1)
            p.set_defaults(func=cmd_coinflip)

        def cmd_coinflip(args):
            for _ in range(args.times):
                print("coinflip command ran")
            return 0

        def bench_report(args):
            return ["coinflip bench: 1.0 flips/s (baseline 1.0)"]
        """,
}


@pytest.fixture()
def installed_family(tmp_path, monkeypatch):
    """The family's package and its distribution metadata on ``sys.path``; the registries
    put back afterwards."""
    package = tmp_path / "throwaway_family"
    package.mkdir()
    for name, source in FAMILY.items():
        (package / name).write_text(textwrap.dedent(source))
    dist = tmp_path / "throwaway_family-0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: throwaway-family\n"
                                   "Version: 0\n")
    (dist / "entry_points.txt").write_text(
        f"[{tasks.plugins.ENTRY_POINT_GROUP}]\ncoinflip = throwaway_family\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for module, name in ((tasks.base, "_REGISTRY"), (tasks.base, "_CACHE"),
                         (tasks.plugins, "_COMMANDS"), (tasks.plugins, "_BENCHES"),
                         (tasks.plugins, "_LOADED")):
        value = getattr(module, name)
        monkeypatch.setattr(module, name, {k: dict(v) if isinstance(v, dict) else v
                                           for k, v in value.items()}
                            if isinstance(value, dict) else type(value)(value))
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("throwaway_family")]:
        del sys.modules[name]


def test_a_family_in_another_package_runs_through_harness(installed_family, tmp_path, capsys):
    db = str(tmp_path / "plugin.db")
    assert main(["list", "suites"]) == 0
    assert "coinflip@1" in capsys.readouterr().out
    check_env(get_suite("coinflip@1").make_env("test-1"))

    assert main(["coinflip", "--times", "2"]) == 0
    assert capsys.readouterr().out == "coinflip command ran\n" * 2
    assert main(["bench", "coinflip"]) == 0
    assert capsys.readouterr().out == "coinflip bench: 1.0 flips/s (baseline 1.0)\n"

    assert main(["run", "--policy", "oracle,noop:say heads", "--suite", "coinflip",
                 "--db", db, "--run-id", "plugin"]) == 0
    assert "played 8 episodes (0 errors)" in capsys.readouterr().out
    episodes = load_episodes(db, run_id="plugin")
    assert set(episodes["suite"]) == {"coinflip@1"}
    assert episodes.groupby("policy")["success"].mean().to_dict() == {
        "oracle": 1.0, "noop:say heads": 0.5}

    assert main(["audit", "coinflip", "--k", "2", "--eval-seeds", "1", "--db", db]) == 0
    out = capsys.readouterr().out
    assert "trivial ceiling  50.0% [" in out and "oracle           100.0% [" in out


def test_a_family_that_fails_to_load_is_one_line(tmp_path, monkeypatch, capsys,
                                                 installed_family):
    (installed_family / "throwaway_family" / "__init__.py").write_text("import no_such_mod\n")
    assert main(["run", "--policy", "random", "--suite", "coinflip", "--db",
                 str(tmp_path / "x.db")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "family 'coinflip'" in err[0] and "no_such_mod" in err[0], err
