"""Git: every git operation lvegit runs, and the LVEs a diff touches."""
