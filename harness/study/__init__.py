"""Research protocols: declared control grids over training recipes, training seeds and
evaluation seeds (`harness study`), with per-cell verdicts under multiplicity control and
power. Modules: `config` (the study file), `run` (plan, status, execution, resume),
`verdicts` (the statistics), `analysis` (store -> verdicts, headroom), `report`,
`provenance` (the machine), `cli`."""
