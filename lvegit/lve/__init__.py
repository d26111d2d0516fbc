"""The LVE format: test.json, prompts and their templates, instance files, the repository of LVEs."""
