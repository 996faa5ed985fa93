# Tickwheel's image: the package with its distributed extra (asyncpg, redis-py) in a
# virtual environment on a slim Python 3.11, run as a user without privileges.
#
#   docker build -t tickwheel .
#   docker run -p 127.0.0.1:8700:8700 -v tickwheel-data:/data -e TICKWHEEL_INSECURE=1 tickwheel
#
# By default it runs embedded (`tickwheel up`) on /data/tickwheel.db, listening on
# 0.0.0.0:8700; any other command is a `tickwheel` subcommand (`api`, `scheduler`,
# `worker`, `migrate`, `token create`, ...): compose.yaml runs a cluster from it.
# Podman keeps HEALTHCHECK only in Docker's image format: `podman build --format docker`.
ARG PYTHON_IMAGE=docker.io/library/python:3.11-slim

# The build stage: a wheel of the checkout, installed with its extra into /opt/tickwheel.
# The build context holds pyproject.toml, README.md and tickwheel/ alone (.dockerignore).
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY tickwheel ./tickwheel
RUN python -m pip wheel --no-deps --wheel-dir /wheels . \
 && python -m venv /opt/tickwheel \
 && /opt/tickwheel/bin/pip install "$(ls /wheels/tickwheel-*.whl)[distributed]" \
 && /opt/tickwheel/bin/tickwheel --help >/dev/null

# The image: the environment alone (its pip stays, for images that add an --app's
# dependencies); no wheel, no build cache.
FROM ${PYTHON_IMAGE}
ENV PATH=/opt/tickwheel/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    TICKWHEEL_HOST=0.0.0.0 \
    TICKWHEEL_PORT=8700 \
    TICKWHEEL_DATABASE_URL=sqlite:////data/tickwheel.db
RUN groupadd --gid 10001 tickwheel \
 && useradd --uid 10001 --gid tickwheel --home-dir /data --no-create-home \
      --shell /usr/sbin/nologin tickwheel \
 && mkdir /data && chown tickwheel:tickwheel /data
COPY --from=build /opt/tickwheel /opt/tickwheel
USER 10001:10001
WORKDIR /data
VOLUME /data
EXPOSE 8700
# Liveness without curl: /healthz answers 200 while the node serves (`tickwheel up`
# and `tickwheel api`; compose.yaml gives the schedulers and the worker their own).
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 \
  CMD ["python", "-c", "import os, urllib.request as u; u.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('TICKWHEEL_PORT', '8700'), timeout=4)"]
# A node stops gracefully on SIGTERM within TICKWHEEL_SHUTDOWN_GRACE_SECONDS (30):
# give it that long (`docker stop -t 40`, compose's stop_grace_period).
STOPSIGNAL SIGTERM
ENTRYPOINT ["tickwheel"]
CMD ["up"]
