"""Tables, figures and pages built from the store's tidy episode table.

`leaderboard` (the terminal/Markdown leaderboard of ``harness leaderboard``), `ranking` (who
leads, who is not separable from the leader after Holm), `tables` (the Markdown/LaTeX table
model), `table_builders`, `figures`, `provenance`, `page` (the static HTML leaderboard),
`build` (``build_report``: one report folder), `commands` (``harness report``) and `bench`
(``harness bench report``).
"""
