"""AppWorld: ``appworld-lite@2`` and ``@3`` (AppWorld's protocol and grading on apps the
project wrote; ``@3`` adds the scope templates) and an adapter for the official engine
(`tasks.appworld.official`, for users with its data)."""

from tasks.appworld.suite import AppWorldLiteSuite, AppWorldLiteSuiteV3

__all__ = ["AppWorldLiteSuite", "AppWorldLiteSuiteV3"]
