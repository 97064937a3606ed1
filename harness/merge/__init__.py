"""Model merging and task-vector geometry: `harness merge` (methods in
`harness.merge.methods`, whole models streamed by `harness.merge.models`)."""
