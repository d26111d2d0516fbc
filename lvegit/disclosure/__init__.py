"""Coordinated disclosure: withheld LVEs, whose payload lives in the repository encrypted with age to the
repository's disclosure recipients while a public abstract says what it is (docs/disclosure.md)."""
