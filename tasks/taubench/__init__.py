"""τ-bench (retail and airline): a tool-calling agent talks with a simulated user and changes
a mock database under a policy; graded by the final database and the required outputs.

Modules: `data` (the files), `retail_tools`/`airline_tools` (the tools), `grading` (the
reward), `users` (the user simulators), `env` (the conversation), `suite` (the suites),
`audit` (gold replay and the user-simulator audit), `sources` (``harness data pull``).
"""

from tasks.taubench.suite import TauAirlineSuite, TauRetailSuite

__all__ = ["TauRetailSuite", "TauAirlineSuite"]
