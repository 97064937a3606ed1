"""ALFWorld's part of ``harness bench env``: the harness's engine (memoised TextWorld) on
random admissible commands and, as the baseline, the stock TextWorld engine on the same
commands. Registered with `tasks.plugins.register_bench_part` as ``"tasks.alfworld.bench:
alfworld_bench"`` (the engine reaches it through that registry, never through ALFWorld's
internals)."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from harness.core import make_rng

__all__ = ["alfworld_bench", "ALFWORLD_TARGET_MS"]

ALFWORLD_TARGET_MS = 20.0
ALFWORLD_STEPS = 60
"""Random admissible steps timed per game."""
STOCK_STEPS = 12
"""Steps per game replayed on the stock engine (about 70 ms each)."""


def _percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def _bench_games(tmp: Path) -> tuple[list[Path], str]:
    """Official ``valid_unseen`` games when ``ALFWORLD_DATA`` has them, else one freshly
    generated game per task type (``valid_unseen``)."""
    from tasks.alfworld.data import collect_games, official_data_root
    from tasks.alfworld.generator import generate_games

    root = official_data_root()
    if root is not None:
        games = [g for g in collect_games(root) if g.official_split == "valid_unseen"][:6]
        return [root / "json_2.1.1" / g.task_id / "game.tw-pddl" for g in games], "official"
    report = generate_games(tmp, {"valid_unseen": 1}, make_rng("harness bench env"),
                            splits=("valid_unseen",))
    return [tmp / g.path / "game.tw-pddl" for g in report.games], "generated"


def _time_engine(game_files: list[Path], rng: np.random.Generator) -> dict[str, Any]:
    from tasks.alfworld.engine import Engine
    from tasks.alfworld.suite import pinned_game

    load, reset, steps, plan, commands = [], [], [], [], []
    for game_file in game_files:
        started = time.perf_counter()
        engine = Engine(pinned_game(game_file))
        load.append(time.perf_counter() - started)
        played = []
        for _ in range(ALFWORLD_STEPS):
            command = str(rng.choice(engine.admissible))
            started = time.perf_counter()
            engine.step(command)
            steps.append(time.perf_counter() - started)
            played.append(command)
            if engine.won:
                started = time.perf_counter()
                engine.reset()
                reset.append(time.perf_counter() - started)
        started = time.perf_counter()
        engine.plan()
        plan.append(time.perf_counter() - started)
        commands.append(played)
    return {"load": load, "reset": reset, "steps": steps, "plan": plan, "commands": commands}


def _time_stock(game_files: list[Path], commands: list[list[str]]) -> list[float]:
    """The same commands on the stock engine (memoisation removed for the measurement)."""
    from tasks.alfworld import speedups
    from tasks.alfworld.engine import import_engine
    from tasks.alfworld.suite import pinned_game

    api = import_engine()
    speedups.uninstall()
    steps = []
    try:
        for game_file, played in zip(game_files, commands):
            infos = api["textworld"].EnvInfos(won=True, admissible_commands=True,
                                              extras=["gamefile"])
            env = api["AlfredInfos"](api["AlfredDemangler"](shuffle=False)(
                api["PddlEnv"](infos)))
            env.load(pinned_game(game_file))
            env.reset()
            for command in played[:STOCK_STEPS]:
                started = time.perf_counter()
                _, _, done = env.step(command)
                steps.append(time.perf_counter() - started)
                if done:
                    break
    finally:
        speedups.install()
    return steps


def alfworld_bench() -> list[str]:
    """Lines of the ALFWorld part of ``harness bench env``."""
    rng = make_rng("harness bench env", "alfworld")
    with tempfile.TemporaryDirectory() as tmp:
        game_files, source = _bench_games(Path(tmp))
        timed = _time_engine(game_files, rng)
        stock = _time_stock(game_files, timed["commands"])
    ms = [1000 * s for s in timed["steps"]]
    stock_ms = [1000 * s for s in stock]
    median, stock_median = statistics.median(ms), statistics.median(stock_ms)
    verdict = "ok" if median < ALFWORLD_TARGET_MS else "SLOW"
    lines = [
        f"ALFWorld ({source} games: {len(game_files)}, {len(ms)} random admissible steps)",
        f"  step, harness engine  : median {median:7.2f} ms  p95 {_percentile(ms, 95):7.2f} ms"
        f"  (target < {ALFWORLD_TARGET_MS:.0f} ms: {verdict})",
        f"  step, stock TextWorld : median {stock_median:7.2f} ms  p95 "
        f"{_percentile(stock_ms, 95):7.2f} ms  ({len(stock_ms)} of the same steps)",
        f"  ratio stock/harness   : {stock_median / median:7.1f}x",
        f"  first load (translate): median {statistics.median(timed['load']):7.2f} s",
        f"  oracle replan         : median {1000 * statistics.median(timed['plan']):7.1f} ms",
    ]
    if timed["reset"]:
        lines.append(f"  reset (restore)       : median "
                     f"{1000 * statistics.median(timed['reset']):7.2f} ms")
    return lines
