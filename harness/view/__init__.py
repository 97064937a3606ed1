"""`harness view`: a local web app over the results store (read-only, 127.0.0.1): runs, the
leaderboard (the CLI's computation), episodes filtered and searched, one episode step by
step, and two policies side by side. Modules: `queries` (what pages read), `html` (escaping
and building blocks), `pages` (one function per page), `app` (the Starlette routes and the
server), `commands` (the CLI entry)."""
