"""The container recipe: the Dockerfile, its .dockerignore and compose.yaml.

What needs no container engine runs everywhere: compose.yaml names every role with its
health check and start order and sets only variables Tickwheel reads; the image runs
`tickwheel` as a user without privileges; the build context is what the Dockerfile
copies; the wheel built from that context installs with the distributed extra, and the
health checks (Python, no curl) pass against a live node and fail without one.

Where a container engine runs (podman with podman-compose, or docker with its compose
plugin) and can pull the base images, the image is built, the compose cluster brought up
under a project name of its own, a task submitted through the published port with the
Python client and seen to succeed, and everything the test started removed. Otherwise
that test skips, saying exactly why: no engine, an engine that cannot run, or a base
image it cannot pull (this machine reaches no image registry). `TICKWHEEL_TEST_*_IMAGE`
points the test at a mirror of the base images.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, NoReturn

import httpx
import pytest
import yaml
from harness import Tickwheel
from installs import ROOT, copy_checkout, fresh_venv, probe, run

from bench.targets import free_port
from tickwheel import Client
from tickwheel.config import Settings, env

DOCKERFILE = ROOT / "Dockerfile"
COMPOSE = ROOT / "compose.yaml"
DOCKERIGNORE = ROOT / ".dockerignore"
TICKWHEEL_ROLES = Counter({"migrate": 1, "api": 1, "scheduler": 2, "worker": 1})
# The variables the CLI reads beside the Settings' twins (--log-level, the client's).
CLI_VARIABLES = {"TICKWHEEL_LOG_LEVEL", "TICKWHEEL_TOKEN", "TICKWHEEL_URL", "TICKWHEEL_INSECURE"}


def instructions(path: Path = DOCKERFILE) -> list[tuple[str, str]]:
    """The Dockerfile's instructions, (KEYWORD, arguments), continuation lines joined."""
    found: list[tuple[str, str]] = []
    pending = ""
    for line in path.read_text().splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        keyword, _, arguments = (pending + line).strip().partition(" ")
        found.append((keyword.upper(), " ".join(arguments.split())))
        pending = ""
    return found


def stages() -> list[list[tuple[str, str]]]:
    """The instructions of each stage (the ARGs before the first FROM are left out)."""
    split: list[list[tuple[str, str]]] = []
    for keyword, arguments in instructions():
        if keyword == "FROM":
            split.append([])
        if split:
            split[-1].append((keyword, arguments))
    return split


def default_arg(name: str) -> str:
    for keyword, arguments in instructions():
        key, _, value = arguments.partition("=")
        if keyword == "ARG" and key == name:
            return value
    raise AssertionError(f"the Dockerfile declares no ARG {name}")


def default_of(value: str) -> str:
    """What compose makes of `${VARIABLE:-default}` with the variable unset."""
    return re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", value)


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return loaded


def tickwheel_services() -> dict[str, dict[str, Any]]:
    """The services that run the image built from this checkout."""
    return {name: s for name, s in compose()["services"].items() if "build" in s}


def health_test(service: dict[str, Any]) -> str:
    """A CMD-SHELL health check's command line."""
    kind, command = service["healthcheck"]["test"]
    assert kind == "CMD-SHELL"  # podman-compose 1.0 (Debian 12) runs a CMD list as one word
    assert isinstance(command, str)
    return command


# --- compose.yaml -----------------------------------------------------------------------


def test_compose_runs_every_role_with_a_health_check_in_order() -> None:
    services = compose()["services"]
    ours = tickwheel_services()
    assert Counter(s["command"][0] for s in ours.values()) == TICKWHEEL_ROLES
    assert {"postgres", "redis"} <= set(services)
    assert len({s["image"] for s in ours.values()}) == 1  # one image for every role
    for name, service in services.items():
        if ours.get(name, {}).get("command") == ["migrate"]:
            assert service["restart"] == "on-failure", "migrate runs until it succeeds"
            assert service["depends_on"] == {"postgres": {"condition": "service_healthy"}}
            continue
        assert health_test(service), name
        if name in ours:
            assert service["depends_on"] == {
                "migrate": {"condition": "service_completed_successfully"},
                "postgres": {"condition": "service_healthy"},
                "redis": {"condition": "service_healthy"},
            }, name


def test_compose_publishes_the_api_alone_and_on_loopback() -> None:
    published = {n: s["ports"] for n, s in compose()["services"].items() if "ports" in s}
    assert [s["command"] for s in (tickwheel_services()[n] for n in published)] == [["api"]]
    [[port]] = published.values()
    assert port == "127.0.0.1:${TICKWHEEL_API_PORT:-8700}:8700"  # never 5432 or 6379


def test_compose_sets_only_variables_tickwheel_reads() -> None:
    known = {env(f.name) for f in fields(Settings)} | CLI_VARIABLES
    for name, service in tickwheel_services().items():
        variables = service["environment"]
        assert set(variables) - known == set(), name
        assert variables["TICKWHEEL_DATABASE_URL"].startswith("postgresql://")
        assert "@postgres:5432/" in variables["TICKWHEEL_DATABASE_URL"]
        assert variables["TICKWHEEL_REDIS_URL"].startswith("redis://redis:6379/")
    api = next(s for s in tickwheel_services().values() if s["command"] == ["api"])
    assert api["environment"]["TICKWHEEL_HOST"] == "0.0.0.0"


# --- the Dockerfile and its build context ------------------------------------------------


def test_the_image_is_built_in_two_stages_on_a_slim_python_311() -> None:
    assert default_arg("PYTHON_IMAGE").endswith("python:3.11-slim")
    build, final = stages()
    assert build[0] == ("FROM", "${PYTHON_IMAGE} AS build")
    assert final[0] == ("FROM", "${PYTHON_IMAGE}")
    [building] = [a for k, a in build if k == "RUN"]
    assert "pip wheel --no-deps" in building and "[distributed]" in building
    assert ("COPY", "--from=build /opt/tickwheel /opt/tickwheel") in final
    assert not [a for k, a in final if k == "COPY" and "--from" not in a]  # no source


def test_the_image_runs_tickwheel_as_a_user_without_privileges() -> None:
    final = dict(stages()[-1])  # the last of each keyword
    user, _, group = final["USER"].partition(":")
    assert user.isdigit() and int(user) >= 1000 and group.isdigit() and int(group) >= 1000
    assert json.loads(final["ENTRYPOINT"]) == ["tickwheel"]
    assert json.loads(final["CMD"]) == ["up"]
    variables = dict(re.findall(r"(\w+)=(\S+)", final["ENV"]))
    assert variables["TICKWHEEL_HOST"] == "0.0.0.0"
    assert variables["TICKWHEEL_DATABASE_URL"] == "sqlite:////data/tickwheel.db"
    assert final["VOLUME"] == "/data" and final["WORKDIR"] == "/data"
    check = healthcheck_argv()
    assert check[:2] == ["python", "-c"] and "/healthz" in check[2]
    assert not [a for _, a in instructions() if "curl" in a or "wget" in a]


def healthcheck_argv() -> list[str]:
    command = dict(stages()[-1])["HEALTHCHECK"].partition(" CMD ")[2]
    argv: list[str] = json.loads(command)
    return argv


def test_the_build_context_is_what_the_dockerfile_copies() -> None:
    patterns = [
        line.strip()
        for line in DOCKERIGNORE.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert patterns[0] == "*"  # everything else (.venv, .git, caches, tests) stays out
    admitted = {p[1:].rstrip("/") for p in patterns if p.startswith("!")}
    copied = {
        source
        for keyword, arguments in instructions()
        if keyword == "COPY" and not arguments.startswith("--from")
        for source in arguments.split()[:-1]
    }
    assert admitted == copied == {"pyproject.toml", "README.md", "tickwheel"}
    assert {"**/__pycache__", "**/*.py[cod]"} <= set(patterns)


# --- the wheel the image installs, and its health checks ----------------------------------


def in_build_context(name: str) -> bool:
    """What .dockerignore lets into the build context (see the test above)."""
    top = name.split("/")[0]
    return top in {"pyproject.toml", "README.md", "tickwheel"} and "__pycache__" not in name


@pytest.fixture(scope="module")
def image_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the build stage makes, on this machine: a wheel of the build context alone,
    installed with the distributed extra into a fresh virtual environment."""
    folder = tmp_path_factory.mktemp("image")
    context = copy_checkout(folder / "context", keep=in_build_context)
    built = run(
        sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
        "--wheel-dir", folder / "wheels", context, cwd=folder, timeout=180,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    [wheel] = (folder / "wheels").glob("tickwheel-*.whl")
    return fresh_venv(folder / "venv", f"{wheel}[distributed]")


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_wheel_installs_with_the_distributed_extra(image_venv: Path) -> None:
    found = probe(image_venv, ["tickwheel", "asyncpg", "redis", "hiredis"])
    assert found["modules"] == ["tickwheel", "asyncpg", "redis", "hiredis"]
    done = run(image_venv / "bin" / "tickwheel", "migrate", "--help", cwd=image_venv)
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_health_checks_pass_on_a_live_node_and_fail_without_one(
    image_venv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTHONPATH", raising=False)  # nothing of the checkout's
    tw = Tickwheel(tmp_path / "image.db", command=str(image_venv / "bin" / "tickwheel"))
    services = compose()["services"]
    checks = {  # each health check, aimed at this node instead of the containers' names
        "Dockerfile": shlex.join(healthcheck_argv()),
        "compose api": health_test(services["api"]).replace(":8700/", f":{tw.port}/"),
        "compose scheduler": health_test(services["scheduler-1"]).replace(
            "http://api:8700", tw.url
        ),
        "compose worker": health_test(services["worker"]).replace("http://api:8700", tw.url),
    }
    environ = {
        "PATH": f"{image_venv / 'bin'}:{os.environ['PATH']}",  # the image's `python`
        "TICKWHEEL_PORT": str(tw.port),
    }

    def outcomes() -> dict[str, int]:
        return {
            name: run("sh", "-c", command, cwd=tmp_path, env=environ, timeout=20).returncode
            for name, command in checks.items()
        }

    tw.start(30)
    try:
        assert outcomes() == dict.fromkeys(checks, 0)
    finally:
        tw.stop()
    assert 0 not in outcomes().values()


# --- the real thing, where a container engine runs ----------------------------------------


@dataclass(frozen=True)
class Engine:
    name: str  # podman or docker
    compose: list[str]  # how it runs compose files
    environ: dict[str, str]

    def __call__(self, *arguments: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return run(self.name, *arguments, cwd=ROOT, env=self.environ, timeout=timeout)

    def compose_run(
        self, project: str, *arguments: str, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        command = [*self.compose, "-p", project, "-f", str(COMPOSE), *arguments]
        return run(*command, cwd=ROOT, env=self.environ, timeout=timeout)


def last_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = (done.stderr or done.stdout).strip().splitlines()
    return lines[-1] if lines else f"exit status {done.returncode}"


def skip(reason: str) -> NoReturn:
    """Skip loudly. Not a failure in CI either: no CI machine here reaches a registry."""
    pytest.skip(f"!!! the compose cluster did NOT run: {reason} !!!")


def find_engine() -> Engine:
    """podman with podman-compose, or docker with its compose plugin, whichever runs."""
    environ = {"PODMAN_COMPOSE_WARNING_LOGS": "false"}
    reasons = []
    if shutil.which("podman"):
        info = run("podman", "info", cwd=ROOT)
        if info.returncode != 0:
            reasons.append(f"podman does not run: {last_line(info)}")
        elif not shutil.which("podman-compose"):
            reasons.append("podman runs but podman-compose is not installed")
        else:
            return Engine("podman", ["podman-compose"], environ)
    else:
        reasons.append("podman is not installed (Debian: apt-get install podman podman-compose)")
    if shutil.which("docker"):
        info = run("docker", "info", cwd=ROOT)
        plugin = run("docker", "compose", "version", cwd=ROOT)
        if info.returncode != 0:
            reasons.append(f"docker has no engine: {last_line(info)}")
        elif plugin.returncode != 0:
            reasons.append(f"docker has no compose plugin: {last_line(plugin)}")
        else:
            return Engine("docker", ["docker", "compose"], environ)
    skip("; ".join(reasons))


@dataclass(frozen=True)
class BaseImages:
    python: str
    postgres: str
    redis: str

    @classmethod
    def chosen(cls) -> BaseImages:
        services = compose()["services"]
        return cls(
            python=os.environ.get("TICKWHEEL_TEST_PYTHON_IMAGE", default_arg("PYTHON_IMAGE")),
            postgres=os.environ.get(
                "TICKWHEEL_TEST_POSTGRES_IMAGE", default_of(services["postgres"]["image"])
            ),
            redis=os.environ.get(
                "TICKWHEEL_TEST_REDIS_IMAGE", default_of(services["redis"]["image"])
            ),
        )


def pull(engine: Engine, images: BaseImages) -> None:
    for image in (images.python, images.postgres, images.redis):
        if engine("image", "inspect", image).returncode == 0:
            continue
        try:
            pulled = engine("pull", image, timeout=600)
        except subprocess.TimeoutExpired:
            skip(f"{engine.name} cannot pull {image}: no answer in 600 s")
        if pulled.returncode != 0:
            skip(f"{engine.name} cannot pull {image}: {last_line(pulled)}")
    ran = engine("run", "--rm", images.python, "python", "-c", "print('ok')")
    if ran.returncode != 0 or ran.stdout.strip() != "ok":
        skip(
            f"{engine.name} cannot run a container of {images.python}: {last_line(ran)}"
            " (scripts/container-standins.sh writes a CONTAINERS_CONF that may)"
        )


@dataclass(frozen=True)
class Cluster:
    url: str
    engine: Engine
    project: str

    def states(self) -> dict[str, str]:
        """Each service's container: `healthy`, `unhealthy` or `starting`, and for
        migrate `exited N` or `running`. Podman runs health checks from systemd timers,
        which may not run here: it is asked to run each check now."""
        found = self.engine("ps", "-a", "-q", "--filter", f"label={PROJECT_LABEL}={self.project}")
        states = {}
        for container in found.stdout.split():
            service, running, code, health = self.engine(
                "inspect", "--format", INSPECTED, container
            ).stdout.split("|")
            if service == "migrate":
                states[service] = "running" if running == "true" else f"exited {code}"
            elif self.engine.name == "podman":
                ran = self.engine("healthcheck", "run", container, timeout=30)
                states[service] = "healthy" if ran.returncode == 0 else "unhealthy"
            else:
                states[service] = health.strip() or "no health check"
        return states


PROJECT_LABEL = "com.docker.compose.project"
INSPECTED = (
    '{{index .Config.Labels "com.docker.compose.service"}}|{{.State.Running}}'
    "|{{.State.ExitCode}}|{{if .State.Health}}{{.State.Health.Status}}{{end}}"
)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """The compose cluster, under a project name and an image tag of its own, on a free
    port; its containers, network, volumes and images removed afterwards (and nothing
    else: every one is found by the project's name or the build's label)."""
    engine = find_engine()
    images = BaseImages.chosen()
    pull(engine, images)
    project = f"tickwheel-test-{uuid.uuid4().hex[:8]}"
    image = f"localhost/{project}:latest"
    label = f"tickwheel.test={project}"
    port = free_port()
    engine = Engine(
        engine.name,
        engine.compose,
        {
            **engine.environ,
            "TICKWHEEL_IMAGE": image,
            "TICKWHEEL_API_PORT": str(port),
            # a mirror, if the test was pointed at one (compose.yaml reads these too)
            "TICKWHEEL_POSTGRES_IMAGE": images.postgres,
            "TICKWHEEL_REDIS_IMAGE": images.redis,
        },
    )
    podman = ["--format", "docker", "--layers=false"] if engine.name == "podman" else []
    try:
        built = engine(
            "build", *podman, "--label", label, "--build-arg", f"PYTHON_IMAGE={images.python}",
            "-t", image, ".", timeout=900,
        )  # fmt: skip
        assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
        up = engine.compose_run(project, "up", "-d")
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        yield Cluster(f"http://127.0.0.1:{port}", engine, project)
    finally:
        logs = engine.compose_run(project, "logs", timeout=60)
        (tmp_path / "compose.log").write_text(logs.stdout + logs.stderr)
        print(f"the cluster's logs: {tmp_path / 'compose.log'}")
        remove(engine, project, label)


def remove(engine: Engine, project: str, label: str) -> None:
    """What the test made: the project's containers with their volumes (the image's
    /data, anonymous, included), its network, and the images built with `label`."""
    found = engine("ps", "-a", "-q", "--filter", f"label={PROJECT_LABEL}={project}")
    containers = found.stdout.split()
    mounts = '{{range .Mounts}}{{if eq .Type "volume"}}{{.Name}} {{end}}{{end}}'
    volumes = engine("inspect", "--format", mounts, *containers).stdout.split()
    down = engine.compose_run(project, "down", "-v", "-t", "10")
    if containers:
        engine("rm", "-f", "-v", *containers)
    if volumes:
        engine("volume", "rm", "-f", *volumes)
    if engine("network", "exists", f"{project}_default").returncode == 0:
        engine("network", "rm", "-f", f"{project}_default")  # podman-compose 1.0 leaves it
    built = engine("images", "-a", "-q", "--filter", f"label={label}").stdout.split()
    if built:
        engine("rmi", "-f", *built)
    assert down.returncode == 0, down.stderr[-3000:]


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_the_compose_cluster_runs_a_task(cluster: Cluster) -> None:
    deadline = time.monotonic() + 300
    while True:  # the API's container starts once migrate has run
        try:
            if httpx.get(f"{cluster.url}/healthz", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, "the API did not answer on its published port"
        time.sleep(1)
    with Client(cluster.url) as client:
        task = client.submit("noop", {"from": "compose"})
        assert client.wait(task.task_id, timeout_seconds=120).status == "succeeded"
    while True:  # both schedulers share the partitions; the worker is alive
        nodes = httpx.get(f"{cluster.url}/api/nodes", timeout=5).json()
        held = [len(s["partitions"]) for s in nodes["schedulers"]]
        if len(held) == 2 and all(held) and nodes["workers"]:
            break
        assert time.monotonic() < deadline, f"the cluster's nodes: {nodes}"
        time.sleep(1)
    expected = {name: "healthy" for name in compose()["services"]} | {"migrate": "exited 0"}
    while (states := cluster.states()) != expected:
        assert time.monotonic() < deadline, f"the services: {states}"
        time.sleep(2)
