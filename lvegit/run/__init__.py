"""Running instances against models: attempts and their reports, the runner (concurrency, retries,
appends), the plans of `run` and `record`, and the live re-runs of a check."""
