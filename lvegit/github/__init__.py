"""The GitHub Action: what runs on a pull request, and the one verdict comment that summarises it."""
