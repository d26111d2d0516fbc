"""`lvegit site`: a static website of an LVE repository (build.py gathers and renders; templates/ holds the
Jinja2 templates, autoescaped; static/ the one stylesheet and the one script). The pages link relatively
and load nothing from the network, so the site works opened from disk and served under a sub-path."""
