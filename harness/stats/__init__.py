"""Statistics over the tidy episode DataFrame (`harness.store.load_episodes`) or over arrays
with documented shapes. Pure functions; every random step takes a `numpy.random.Generator`.
Import from the topic modules (`estimators`, `bootstrap`, `paired`, ...)."""
