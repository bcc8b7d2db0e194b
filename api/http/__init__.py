"""The HTTP entry point: the FastAPI app, its dependencies, problems and routers."""
