"""AppWorld: ``appworld-lite@2`` (AppWorld's protocol and grading on project-written apps)
and an adapter for the official engine (`tasks.appworld.official`, for users with its data)."""

from tasks.appworld.suite import AppWorldLiteSuite

__all__ = ["AppWorldLiteSuite"]
