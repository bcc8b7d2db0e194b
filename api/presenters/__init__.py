"""Results as JSON, the same for the CLI's --json and the HTTP API."""
