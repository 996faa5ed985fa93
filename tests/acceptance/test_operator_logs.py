"""What an operator reads (issue 16): a cluster runs 1,000 tasks, 10 of which fail,
through a Redis stop of 5 s and a PostgreSQL restart. Its processes write one line per
failed task, a handful of lines per outage, and no traceback. The servers are the
suite's own (tests/servers.py), never the machine's."""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

from cluster import Cluster, cluster_in
from harness import Target, wait_for
from servers import PrivatePostgres, PrivateRedis

from tickwheel import Client
from tickwheel.client import task_body
from tickwheel.client.retries import DEFAULT_POLICY, Retries

PATIENT = Retries(replace(DEFAULT_POLICY, max_retries=30))
OUTAGE = re.compile(r"is unavailable|still unavailable|available again")


def submit(cluster: Cluster, target: Target, path: str, count: int) -> list[str]:
    bodies = [task_body("http", {"url": f"{target.url}{path}"}, max_retries=0)] * count
    with Client(cluster.api_url, retries=PATIENT) as client:
        return [t.task_id for t in client.submit_many(bodies)]


def ended(cluster: Cluster, ids: list[str]) -> bool:
    rows = cluster.query(
        "SELECT count(*) FROM tasks WHERE task_id = ANY($1::text[])"
        " AND status IN ('succeeded', 'failed')",
        ids,
    )
    return rows[0][0] == len(ids)


def test_a_day_of_failures_and_outages_reads_in_a_few_lines(
    tmp_path: Path, target: Target, private_redis: PrivateRedis, private_postgres: PrivatePostgres
) -> None:
    target.responses["/fail"] = lambda n: 500
    settings = {"TICKWHEEL_LOG_LEVEL": "info", "TICKWHEEL_PARTITIONS": "8"}
    with cluster_in(
        tmp_path, database_url=private_postgres.url, redis_url=private_redis.url, **settings
    ) as cluster:
        cluster.start("scheduler", "scheduler-0")
        cluster.start("worker", "worker-0")
        cluster.start_api()
        failing = submit(cluster, target, "/fail", 10)
        passing = submit(cluster, target, "/ok", 990)
        assert wait_for(lambda: ended(cluster, failing + passing), timeout=60), cluster.logs()

        private_redis.stop()
        time.sleep(5)
        private_redis.start()
        after_redis = submit(cluster, target, "/ok", 20)
        assert wait_for(lambda: ended(cluster, after_redis), timeout=60), cluster.logs()

        private_postgres.restart()
        after_postgres = submit(cluster, target, "/ok", 20)
        assert wait_for(lambda: ended(cluster, after_postgres), timeout=60), cluster.logs()
        time.sleep(2)  # the last "available again" lines are written
        logs = {p.name: p.log.read_text() for p in cluster.processes}

    everything = "\n".join(logs.values())
    assert "Traceback" not in everything, everything[-5000:]
    failures = [line for line in everything.splitlines() if " attempt 1 failed: " in line]
    assert sorted(re.search(r"task (\S+) ", f)[1] for f in failures) == sorted(failing)  # type: ignore[index]
    for name, text in logs.items():
        outage = [line for line in text.splitlines() if OUTAGE.search(line)]
        # Two outages, each its start and end for the store, the queue and the metrics
        # a process uses: a handful each, however many calls failed meanwhile.
        assert len(outage) <= 12, (name, outage)
        per_kind = Counter(line.split(" is ")[0].split(": ")[-1] for line in outage)
        assert all(n <= 4 for n in per_kind.values()), (name, per_kind)
