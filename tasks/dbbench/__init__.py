"""AgentBench DB-Bench: SQL tasks on a real MariaDB server the suite starts on a private Unix
socket, contained (unprivileged, in its own namespaces), the agent's SQL on a per-episode
account with rights on its own database only. Modules: `data`, `containment`, `server`,
`grading` (upstream's checker semantics), `env`, `suite`, `sources`
(``harness data pull dbbench``)."""

from tasks.dbbench.suite import DBBenchSuite

__all__ = ["DBBenchSuite"]
