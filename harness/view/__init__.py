"""`harness view`: a local web app over the results store (read-only, 127.0.0.1): runs, the
leaderboard (the CLI's computation), episodes filtered and searched, one episode step by
step, two policies side by side, and the stored audits. Modules: `queries` (what pages read),
`html` (escaping and building blocks), `pages` (one function per page), `audits` (the audits
page), `boards` (leaderboards computed in a background thread), `export` (the static copy
of ``--export``), `app` (the Starlette routes and the server), `commands` (the CLI entry),
`bench` (``harness bench view``)."""
