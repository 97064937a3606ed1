"""Shared, cached test inputs for the WebShop tests (not a test module).

The real data is read from ``<repo root>/../shared/data/webshop`` unless ``WEBSHOP_DATA`` is
set, the same rule the loader applies.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
DATA_DIR = Path(os.environ.get("WEBSHOP_DATA") or REPO_ROOT.parent / "shared" / "data" / "webshop")


@functools.lru_cache(maxsize=None)
def real_suite():
    from tasks.webshop import WebShopSuite

    return WebShopSuite(DATA_DIR)


@functools.lru_cache(maxsize=None)
def real_suite_v1():
    from tasks.webshop import WebShopSuiteV1

    return WebShopSuiteV1(DATA_DIR)


@functools.lru_cache(maxsize=None)
def synthetic_suite():
    from tasks.webshop import WebShopSyntheticSuite

    return WebShopSyntheticSuite()


def play(env, actions):
    """Reset `env` and play `actions`; the list of StepResults."""
    env.reset(seed=0)
    return [env.step(a) for a in actions]


def run_oracle(env):
    """Reset `env` and follow its oracle to the end; (final StepResult, actions)."""
    env.reset(seed=0)
    actions, result = [], None
    while result is None or not (result.terminated or result.truncated):
        actions.append(env.oracle_action())
        result = env.step(actions[-1])
    return result, actions
