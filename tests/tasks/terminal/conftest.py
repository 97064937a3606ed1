"""Fixtures of the terminal tests: the terminal-lite suite (its rootfs is built once, cached)."""

from __future__ import annotations

import pytest

from tasks.sandbox import sandbox_available


@pytest.fixture(scope="session")
def lite_suite():
    reason = sandbox_available()
    if reason is not None:
        pytest.skip(f"sandbox unavailable: {reason}")
    from tasks.terminal import TerminalLiteSuite

    return TerminalLiteSuite()
