"""What every layer uses: the exception hierarchy and exit codes, settings, the one safe way to open
files a pull request controls, escaping and printing, installed versions."""
