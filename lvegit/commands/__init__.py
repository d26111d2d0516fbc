"""One module per command: parse options, call the core, print."""
