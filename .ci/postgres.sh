#!/usr/bin/env bash
# Install (if needed) and start a local PostgreSQL for the test suite, as root,
# from Debian's packages. Prints the URL the tests use. Idempotent.
set -euo pipefail
ROLE=holdpoint
PASSWORD=holdpoint
DB=holdpoint_test

if ! command -v pg_ctlcluster >/dev/null 2>&1 || ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq postgresql >/dev/null
fi
version=$(ls /usr/lib/postgresql | sort -n | tail -1)
if ! pg_lsclusters -h | awk '{print $1" "$2}' | grep -q "^$version main$"; then
  pg_createcluster "$version" main >/dev/null
fi
# The suite runs on several workers, each test with servers of its own (each server an
# event-store pool, a projector, a run worker and side-table connections): more than 100.
conf="/etc/postgresql/$version/main/conf.d/holdpoint-tests.conf"
if [ ! -f "$conf" ]; then
  echo "max_connections = 400" > "$conf"
  pg_ctlcluster "$version" main restart 2>/dev/null || true
fi
pg_ctlcluster "$version" main start 2>/dev/null || true
for _ in $(seq 1 50); do
  su postgres -c "pg_isready -q -h 127.0.0.1" && break
  sleep 0.2
done
su postgres -c "psql -q -v ON_ERROR_STOP=1" <<SQL
DO \$\$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$ROLE') THEN
    CREATE ROLE $ROLE LOGIN PASSWORD '$PASSWORD' CREATEDB CREATEROLE;
  END IF;
  -- the benchmarks take a CHECKPOINT after a bulk fill (bench/postgres.py settle)
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'pg_checkpoint') THEN
    GRANT pg_checkpoint TO $ROLE;
  END IF;
END \$\$;
SQL
su postgres -c "psql -tAc \"SELECT 1 FROM pg_database WHERE datname = '$DB'\"" | grep -q 1 \
  || su postgres -c "createdb -O $ROLE $DB"
echo "postgresql://$ROLE:$PASSWORD@127.0.0.1:5432/$DB"
