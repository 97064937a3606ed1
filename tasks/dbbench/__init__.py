"""AgentBench DB-Bench: SQL tasks on a real MariaDB server the suite starts on a private Unix
socket. Modules: `data`, `server`, `grading` (upstream's checker semantics), `env`, `suite`,
`sources` (``harness data pull dbbench``)."""

from tasks.dbbench.suite import DBBenchSuite

__all__ = ["DBBenchSuite"]
