#!/usr/bin/env bash
# Installs Debian's postgresql for the storage tests when it is missing and we are root.
# The tests start a throwaway cluster of their own (tests/pg_cluster.py: a temp folder, a free
# loopback port, trust auth on 127.0.0.1 only, run as the postgres user since initdb refuses
# root) and never use the system cluster. Without PostgreSQL the PostgreSQL tests are skipped
# with one loud line in the test summary; everything else still runs.
set -u
if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "make: installing Debian's postgresql for the storage tests (about a minute)"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql) >/tmp/stepwise-apt-postgres.log 2>&1 \
    || echo "make: WARNING: apt-get could not install postgresql (see /tmp/stepwise-apt-postgres.log); PostgreSQL tests will be skipped"
else
  echo "make: WARNING: PostgreSQL is missing and apt-get cannot run here; PostgreSQL tests will be skipped"
fi
exit 0
