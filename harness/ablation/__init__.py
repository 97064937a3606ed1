"""`harness ablate`: paired ablations of harness layers (`harness.policies.layers`).

`plan` (the arms and the two runs that play them through the one runner), `analysis` (paired
effects, activation, token cost, maturity score, final success), `report` (Markdown and
LaTeX), `cli` (the command).
"""
