"""The harness side of the signal testbed (`signals`): evaluation points from the store,
model adapters, metrics with intervals and paired comparisons, the report, `harness signals`
(`harness.signal_eval.cli`) and `harness bench signals` (`harness.signal_eval.bench`)."""
