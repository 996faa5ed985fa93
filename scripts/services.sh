#!/usr/bin/env bash
# Start the local PostgreSQL and Redis that the tests use, when they are installed but
# not running. Missing servers are left missing: their tests then skip loudly (or fail,
# with TICKWHEEL_REQUIRE_SERVICES=1).
set -uo pipefail

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

if ! listening 5432 && command -v pg_ctlcluster >/dev/null && [ -d /etc/postgresql ]; then
  echo "starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
fi
if ! listening 6379 && command -v redis-server >/dev/null; then
  echo "starting Redis"
  mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
fi
for _ in $(seq 1 50); do
  { listening 5432 || ! command -v pg_ctlcluster >/dev/null; } &&
    { listening 6379 || ! command -v redis-server >/dev/null; } && break
  sleep 0.2
done
exit 0
