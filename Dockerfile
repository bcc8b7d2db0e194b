# One image for every Holdpoint process: the API server, the projector, db init.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY domain ./domain
COPY api ./api
COPY projections ./projections
COPY persistence ./persistence
COPY integrity ./integrity
COPY service ./service
# The seed examples: `holdpoint serve` with no --graph serves them.
COPY examples ./examples
# /app/var is the data folder, the user's own (0700): the SQLite store by default, and
# the API keys a first start writes there (SECURITY.md, "Bootstrap keys: a file, never a log").
RUN pip install . && useradd --system --home /app holdpoint \
    && install -d -o holdpoint -g holdpoint -m 0700 /app/var
USER holdpoint

# The store comes from the environment; compose sets it to PostgreSQL.
ENV HOLDPOINT_STORE=sqlite:////app/var/holdpoint.db \
    HOLDPOINT_BOOTSTRAP_KEYS_FILE=/app/var/holdpoint.bootstrap-keys
ENTRYPOINT ["holdpoint"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8000"]
