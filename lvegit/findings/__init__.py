"""Scanners' findings as LVE drafts: the failing attempts of a garak report (garak.py) or of a promptfoo
evaluation (promptfoo.py) become LVEs (drafts.py writes them), one per probe or plugin and model, for a
maintainer to review, finish and commit."""
