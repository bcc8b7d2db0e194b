# One image for every Holdpoint process: the API server, the projector, db init.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY domain ./domain
COPY api ./api
COPY projections ./projections
COPY persistence ./persistence
RUN pip install . && useradd --system --home /app holdpoint
USER holdpoint

# The store comes from the environment; compose sets it to PostgreSQL.
ENV HOLDPOINT_STORE=sqlite:////app/var/holdpoint.db
ENTRYPOINT ["holdpoint"]
CMD ["demo"]
