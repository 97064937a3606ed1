"""Terminal-Bench family: task loader (TB1, TB2/Harbor), sandboxed Env, suites, bench."""

from tasks.terminal.suite import TerminalBenchSuite, TerminalLiteSuite, TerminalSuite

__all__ = ["TerminalBenchSuite", "TerminalLiteSuite", "TerminalSuite"]
