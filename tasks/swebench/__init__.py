"""SWE-bench: the official instances (Verified, Lite, dev) and the bundled ``swe-lite@2``,
graded with the official `swebench` package (specs, log parsers, resolution rule).

Modules: `data` (the tables, through `datasets`), `grading` (eval script, parser, verdict,
patch hygiene), `repos` (repositories at a commit from ``$SWEBENCH_REPOS``), `environment`
(per-(repository, version) environments from the official specs), `local` (the sandbox
backend), `docker` (the official harness), `env` (the agent's tools), `suite`, `lite`,
`validate`, `bench`.
"""

from tasks.swebench.suite import DevSuite, LiteSuite, SweLiteSuite, VerifiedSuite

__all__ = ["DevSuite", "LiteSuite", "SweLiteSuite", "VerifiedSuite"]
