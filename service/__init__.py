"""The server's machinery, with no web framework: the use cases, runs, read-model
hosting, rate limits, metrics, settings, and the composition root (`service.services`)."""
