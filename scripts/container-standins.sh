#!/usr/bin/env bash
# Stand-ins for the container recipe's base images, built from Debian's packages, for a
# machine whose podman runs containers but reaches no image registry (this project's
# machines reach PyPI, Debian and npm alone). They are not the official images: one
# Debian 12 root file system (debootstrap) with python3 (3.11), PostgreSQL 15 and Redis
# 7, tagged localhost/tickwheel-standin/{python,postgres,redis}, each doing what the
# official image's entrypoint does for compose.yaml. Then, to run the container test:
#
#   eval "$(scripts/container-standins.sh)"
#   .venv/bin/pytest -q tests/acceptance/test_containers.py
#
# It prints the TICKWHEEL_TEST_*_IMAGE variables the test reads and, where podman's
# defaults cannot start a container here, a CONTAINERS_CONF that can (runc instead of
# crun on a hybrid cgroup hierarchy; limits no higher than this process's own, for a
# root without CAP_SYS_RESOURCE). Needs root, podman and debootstrap (apt-get install
# podman podman-compose runc iptables debootstrap: podman's netavark needs iptables);
# about 3 minutes and 1 GB. Nothing of it runs in `make test`. `podman rmi` the three
# tags (and localhost/tickwheel-standin/base) to remove them.
set -euo pipefail

say() { echo "container-standins: $*" >&2; }
for tool in podman debootstrap; do
  command -v "$tool" >/dev/null || { say "needs $tool (apt-get install $tool)"; exit 2; }
done
[ "$(id -u)" = 0 ] || { say "needs root (debootstrap)"; exit 2; }

state="${XDG_CACHE_HOME:-$HOME/.cache}/tickwheel-standins"
mkdir -p "$state"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
base=localhost/tickwheel-standin/base:bookworm

if ! podman image exists "$base"; then
  say "debootstrap of Debian 12 with python3, postgresql-15 and redis-server (minutes)"
  debootstrap --variant=minbase \
    --include=python3,python3-venv,python3-pip,ca-certificates,postgresql-15,redis-server,redis-tools \
    bookworm "$work/rootfs" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 ||
    { tail -5 "$work/debootstrap.log" >&2; exit 1; }
  tar -C "$work/rootfs" -c . | podman import --quiet - "$base" >/dev/null
  rm -rf "$work/rootfs"
fi

# podman's defaults, or what this machine needs instead
if ! podman run --rm "$base" true >/dev/null 2>"$work/run.err"; then
  conf="$state/containers.conf"
  cat >"$conf" <<EOF
# Written by scripts/container-standins.sh: podman's defaults failed here with
# $(tail -1 "$work/run.err")
[containers]
default_ulimits = ["nofile=$(ulimit -Hn):$(ulimit -Hn)", "nproc=4096:4096"]
[engine]
runtime = "$(command -v runc >/dev/null && echo runc || echo crun)"
EOF
  export CONTAINERS_CONF="$conf"
  if ! podman run --rm "$base" true >/dev/null 2>"$work/run.err"; then
    say "podman cannot run a container here: $(tail -1 "$work/run.err")"
    exit 1
  fi
  echo "export CONTAINERS_CONF=$conf"
fi

mkdir -p "$work/python" "$work/postgres" "$work/redis"

# python:3.11-slim: `python` on PATH, and pip trusting what this machine trusts (a
# proxy in front of PyPI may present its own certificate authority)
cp /etc/ssl/certs/ca-certificates.crt "$work/python/"
cat >"$work/python/Containerfile" <<'EOF'
FROM localhost/tickwheel-standin/base:bookworm
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
RUN ln -s /usr/bin/python3 /usr/local/bin/python
ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt LANG=C.UTF-8
CMD ["python3"]
EOF

# postgres: a new cluster in PGDATA with POSTGRES_USER, POSTGRES_PASSWORD and
# POSTGRES_DB, then the server on every address with password authentication
cat >"$work/postgres/entrypoint.sh" <<'EOF'
#!/bin/sh
set -eu
bin=/usr/lib/postgresql/15/bin
user=${POSTGRES_USER:-postgres}
mkdir -p "$PGDATA" /run/postgresql
chown -R postgres:postgres "$PGDATA" /run/postgresql
chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  printf '%s\n' "${POSTGRES_PASSWORD}" >/tmp/pwfile
  chown postgres /tmp/pwfile
  su postgres -s /bin/sh -c "$bin/initdb -D '$PGDATA' -U '$user' --pwfile=/tmp/pwfile --auth-host=scram-sha-256 --auth-local=trust" >/dev/null
  rm -f /tmp/pwfile
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  su postgres -s /bin/sh -c "$bin/pg_ctl -D '$PGDATA' -o '-c listen_addresses=' -w start" >/dev/null
  db=${POSTGRES_DB:-$user}
  if [ "$db" != postgres ]; then
    su postgres -s /bin/sh -c "$bin/createdb -h /run/postgresql -U '$user' '$db'"
  fi
  su postgres -s /bin/sh -c "$bin/pg_ctl -D '$PGDATA' -m fast -w stop" >/dev/null
fi
exec su postgres -s /bin/sh -c "exec $bin/postgres -D '$PGDATA' -c listen_addresses='*'"
EOF
cat >"$work/postgres/Containerfile" <<'EOF'
FROM localhost/tickwheel-standin/base:bookworm
COPY entrypoint.sh /usr/local/bin/docker-entrypoint.sh
# the server's own client programs (pg_isready), not Debian's wrappers, which look for
# the clusters Debian made
RUN chmod +x /usr/local/bin/docker-entrypoint.sh && ln -s /usr/lib/postgresql/15/bin/* /usr/local/bin/
ENV PGDATA=/var/lib/postgresql/data
VOLUME /var/lib/postgresql/data
ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]
EOF

# redis: as the official image, a server started without a configuration file serves
# every address (protected mode off)
cat >"$work/redis/entrypoint.sh" <<'EOF'
#!/bin/sh
if [ "${1:-}" = redis-server ]; then
  shift
  exec redis-server --protected-mode no "$@"
fi
exec "$@"
EOF
cat >"$work/redis/Containerfile" <<'EOF'
FROM localhost/tickwheel-standin/base:bookworm
COPY entrypoint.sh /usr/local/bin/docker-entrypoint.sh
RUN chmod +x /usr/local/bin/docker-entrypoint.sh
ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]
CMD ["redis-server"]
EOF

for image in python postgres redis; do
  say "building localhost/tickwheel-standin/$image:latest"
  podman build --quiet --layers=false -t "localhost/tickwheel-standin/$image:latest" \
    "$work/$image" >/dev/null
done
echo "export TICKWHEEL_TEST_PYTHON_IMAGE=localhost/tickwheel-standin/python:latest"
echo "export TICKWHEEL_TEST_POSTGRES_IMAGE=localhost/tickwheel-standin/postgres:latest"
echo "export TICKWHEEL_TEST_REDIS_IMAGE=localhost/tickwheel-standin/redis:latest"
