"""Session models shared by the policy, serving and training tests (built once per session)."""

import pytest

from harness.policies.tiny import make_tiny_model
from tests.harness.policies.llm_support import make_imprinted_model, session_model


@pytest.fixture(scope="session")
def tiny_path(tmp_path_factory):
    """The default tiny Qwen2 (about 1M parameters, random weights, seed 0)."""
    return session_model(tmp_path_factory, "tiny", lambda path: make_tiny_model(path, seed=0))


@pytest.fixture(scope="session")
def imprinted_path(tmp_path_factory):
    """A small Qwen2 fine-tuned to answer frozenlake prompts with <action>MOVE</action>."""
    return session_model(tmp_path_factory, "imprinted", make_imprinted_model)


@pytest.fixture(scope="session")
def tiny_model(tiny_path):
    from harness.policies.hf import LocalModel

    return LocalModel(tiny_path, threads=1)
