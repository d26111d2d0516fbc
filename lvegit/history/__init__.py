"""The run history: every scheduled or dispatched run's attempts, kept with the repository (store), and
what they say of each LVE on each model over time (status)."""
