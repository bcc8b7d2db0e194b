"""The `holdpoint` command line: one module per command group."""
