-- Named queries of the PostgreSQL store (see tickwheel/storage/named_queries.py).
-- Batches arrive as arrays, one per column, and are read with unnest: a batch of any
-- size is one statement and one round trip. $n are positional (asyncpg).
--
-- A statement that names its rows by seq writes its status test as
-- `(status = 'pending') IS TRUE`: the same test (status is never null), but one that
-- keeps the planner on the primary key. Written plainly, it matches the partial
-- indexes of pending or running tasks, which stale statistics (a fresh table, a burst
-- since the last ANALYZE) show as nearly empty: the plan then reads every pending task
-- for each claim (13,000 to 24,000 index entries per claim of 54, replayed against a
-- table not yet analyzed; BENCHMARKS.md, "PostgreSQL's share of a task").

-- name: now_ms
SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint;

-- name: take_marks
-- The counter's row lock is held until commit, so marks follow commit order.
UPDATE cluster SET value = value + $1 WHERE key = 'mark' RETURNING value;

-- name: max_mark
SELECT value FROM cluster WHERE key = 'mark';

-- name: max_seq
SELECT COALESCE(MAX(seq), 0) FROM tasks;

-- name: next_seqs
SELECT nextval('tasks_seq') FROM generate_series(1, $1);

-- name: insert_tasks
INSERT INTO tasks (
    seq, mark, task_id, partition, task_type, payload, schedule_type, schedule_id,
    queue, priority, max_retries, backoff_base, backoff_max, timeout_seconds,
    due_time, created_at, idempotency_key, workflow_id, node_name, ordering_key, status,
    completed_at, request_hash, triggered_at, expires_at, traceparent, limit_key
)
SELECT * FROM unnest(
    $1::bigint[], $2::bigint[], $3::text[], $4::int[], $5::text[], $6::text[], $7::text[],
    $8::text[], $9::text[], $10::int[], $11::int[], $12::float8[], $13::float8[],
    $14::float8[], $15::bigint[], $16::bigint[], $17::text[], $18::text[], $19::text[],
    $20::text[], $21::text[], $22::bigint[], $23::text[], $24::bigint[], $25::bigint[],
    $26::text[], $27::text[]
);

-- name: statuses_of
-- Locked: a predecessor cannot end between this read and the commit that sets its
-- has_dependents, or its end would queue no news for the dependent.
SELECT task_id, seq, status FROM tasks WHERE task_id = ANY($1::text[])
ORDER BY seq FOR UPDATE;

-- name: insert_dependencies
INSERT INTO task_dependencies (task_seq, total_predecessors, satisfied_count)
SELECT * FROM unnest($1::bigint[], $2::int[], $3::int[]);

-- name: insert_edges
INSERT INTO task_edges (predecessor_seq, dependent_seq, state)
SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[])
ON CONFLICT DO NOTHING;

-- name: mark_has_dependents
UPDATE tasks SET has_dependents = true WHERE seq = ANY($1::bigint[]) AND NOT has_dependents;

-- name: take_propagations
SELECT p.seq, t.task_id, t.status, t.ordering_key FROM propagations AS p
JOIN tasks AS t ON t.seq = p.seq
WHERE p.not_before <= $1
ORDER BY p.seq LIMIT $2
FOR UPDATE OF p SKIP LOCKED;

-- name: settle_edges
UPDATE task_edges SET state = $2
WHERE predecessor_seq = ANY($1::bigint[]) AND state = 'waiting'
RETURNING predecessor_seq, dependent_seq;

-- name: count_satisfied
UPDATE task_dependencies AS d SET satisfied_count = d.satisfied_count + c.n
FROM unnest($1::bigint[], $2::int[]) AS c (dseq, n)
WHERE d.task_seq = c.dseq AND d.satisfied_count + c.n <= d.total_predecessors
RETURNING d.task_seq, d.satisfied_count = d.total_predecessors;

-- name: unblock
UPDATE tasks
SET status = 'pending', version = version + 1, mark = u.mark, due_time = GREATEST(due_time, $3)
FROM unnest($1::bigint[], $2::bigint[]) AS u (useq, mark)
WHERE tasks.seq = ANY($1::bigint[]) AND tasks.seq = u.useq AND tasks.status = 'blocked';

-- name: fail_upstream
UPDATE tasks
SET status = 'upstream_failed', version = version + 1, completed_at = $3, last_error = f.error
FROM unnest($1::bigint[], $2::text[]) AS f (fseq, error)
WHERE tasks.seq = ANY($1::bigint[]) AND tasks.seq = f.fseq AND tasks.status = 'blocked';

-- name: forget_propagations
DELETE FROM propagations WHERE seq = ANY($1::bigint[]);

-- name: propagate_later
INSERT INTO propagations (seq, not_before) SELECT * FROM unnest($1::bigint[], $2::bigint[])
ON CONFLICT (seq) DO UPDATE SET not_before = excluded.not_before;

-- name: has_propagations
SELECT EXISTS (SELECT 1 FROM propagations WHERE not_before <= $1);

-- name: lock_keys
-- Taken first, in a fixed order: claims and hand-overs of one key happen one at a time.
SELECT pg_advisory_xact_lock(hashtextextended(k, 7)) FROM unnest($1::text[]) AS k ORDER BY k;

-- name: key_holder
SELECT o.holder_seq, t.status, t.lease_expires_at FROM ordering_keys AS o
JOIN tasks AS t ON t.seq = o.holder_seq
WHERE o.ordering_key = $1;

-- name: next_of_key
SELECT seq, status FROM tasks
WHERE ordering_key = $1 AND status IN ('pending', 'waiting')
  AND (status = 'waiting' OR due_time <= $2)
ORDER BY due_time, seq
LIMIT 1;

-- name: hold_key
INSERT INTO ordering_keys (ordering_key, holder_seq) VALUES ($1, $2)
ON CONFLICT (ordering_key) DO UPDATE SET holder_seq = excluded.holder_seq;

-- name: free_key
DELETE FROM ordering_keys WHERE ordering_key = $1;

-- name: take_turn
UPDATE tasks SET status = 'pending', version = version + 1, mark = $2
WHERE seq = $1 AND status = 'waiting';

-- name: keyed_claims
SELECT seq, ordering_key FROM tasks
WHERE seq = ANY($1::bigint[]) AND (status = 'pending') IS TRUE AND due_time <= $2
  AND ordering_key IS NOT NULL;

-- name: wait_for_turn
UPDATE tasks SET status = 'waiting', version = version + 1
WHERE seq = ANY($1::bigint[]) AND (status = 'pending') IS TRUE;

-- name: insert_workflow
INSERT INTO workflows (workflow_id, name, created_at, request_hash) VALUES ($1, $2, $3, $4)
ON CONFLICT (workflow_id) DO NOTHING;

-- name: get_workflow
SELECT workflow_id, name, created_at, request_hash FROM workflows WHERE workflow_id = $1;

-- name: workflow_tasks
SELECT {task_columns} FROM tasks WHERE workflow_id = $1 ORDER BY seq;

-- name: active_workflows
SELECT DISTINCT workflow_id FROM tasks
WHERE workflow_id = ANY($1::text[])
  AND status NOT IN ('succeeded', 'failed', 'cancelled', 'upstream_failed', 'expired');

-- name: edges_into
SELECT predecessor_seq, dependent_seq FROM task_edges WHERE dependent_seq = ANY($1::bigint[]);

-- name: take_idempotency_keys
-- Each key that is free, or held since before $6 (its window has passed), is taken;
-- the keys taken are returned. A key held meanwhile by a concurrent insert waits for
-- its commit and is then not taken. The keys come sorted: a lock order.
INSERT INTO idempotency_keys (task_type, key, task_id, request_hash, created_at)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[])
ON CONFLICT (task_type, key) DO UPDATE
SET task_id = excluded.task_id, request_hash = excluded.request_hash,
    created_at = excluded.created_at
WHERE idempotency_keys.created_at < $6
RETURNING task_type, key;

-- name: idempotency_key_holders
SELECT k.task_type, k.key, k.task_id, k.request_hash
FROM idempotency_keys k
JOIN unnest($1::text[], $2::text[]) AS wanted (task_type, key) USING (task_type, key);

-- name: stored_requests
-- Tasks whose ids a client chose: a repeat must be the same request (request_hash).
SELECT task_id, request_hash FROM tasks WHERE task_id = ANY($1::text[]);

-- name: seqs_of
SELECT task_id, seq FROM tasks WHERE task_id = ANY($1::text[]);

-- name: load_due_range
SELECT seq, partition, due_time, queue, priority, schedule_id IS NOT NULL AS is_cron, mark
FROM tasks
WHERE status = 'pending' AND partition = ANY($1::int[]) AND due_time > $2 AND due_time <= $3
  AND held_by IS NULL;

-- name: load_new
SELECT seq, partition, due_time, queue, priority, schedule_id IS NOT NULL AS is_cron, mark
FROM tasks
WHERE mark > $2 AND status = 'pending' AND due_time <= $3 AND partition = ANY($1::int[]);

-- name: claim
-- Due by the stamp of the release, not by the claimer's clock (see the SQLite store).
-- While limits exist, `claim_skipping` is added, and to the limited claim's,
-- `claim_marking` (see `claim_statement`). A task claimed is no longer held by a limit.
UPDATE tasks
SET status = 'running', version = version + 1, attempts = attempts + 1,
    lease_expires_at = $4, worker_id = $5, started_at = $3, triggered_at = c.triggered,
    held_by = NULL
FROM unnest($1::bigint[], $2::bigint[]) AS c (cseq, triggered)
WHERE tasks.seq = ANY($1::bigint[]) AND tasks.seq = c.cseq
  AND (tasks.status = 'pending') IS TRUE
  AND tasks.due_time <= c.triggered
  AND ($6 OR tasks.ordering_key IS NULL)
  AND (tasks.expires_at IS NULL OR tasks.expires_at > $3)
RETURNING seq, task_id, task_type, payload, attempts, version, due_time, lease_expires_at,
          queue, priority, max_retries, backoff_base, backoff_max, timeout_seconds, expires_at,
          traceparent;

-- name: claim_skipping
-- Tasks of a limit ($7-$9: the task types, queues and keys that have one) are left to
-- the limited claim.
  AND NOT (tasks.task_type = ANY($7::text[]) OR tasks.queue = ANY($8::text[])
           OR (tasks.limit_key IS NOT NULL AND tasks.limit_key = ANY($9::text[])))

-- name: claim_marking
-- A limited claim's ($10: admitted by a concurrency limit), which skips nothing.
, holds_slot = $10

-- name: extend_leases
UPDATE tasks SET lease_expires_at = $3
FROM unnest($1::bigint[], $2::bigint[]) AS f (fseq, fence)
WHERE tasks.seq = ANY($1::bigint[]) AND tasks.seq = f.fseq AND tasks.version = f.fence
  AND (tasks.status = 'running') IS TRUE
RETURNING tasks.seq;

-- name: finish
UPDATE tasks
SET status = f.status, version = tasks.version + 1, lease_expires_at = NULL,
    mark = COALESCE(f.mark, tasks.mark),
    due_time = COALESCE(f.retry_at, tasks.due_time),
    triggered_at = CASE WHEN f.retry_at IS NULL THEN tasks.triggered_at END,
    completed_at = CASE WHEN f.retry_at IS NULL THEN f.ended END,
    last_error = COALESCE(f.error, tasks.last_error)
FROM unnest(
    $1::bigint[], $2::bigint[], $3::text[], $4::bigint[], $5::bigint[], $6::text[],
    $7::bigint[], $8::bigint[]
) AS f (fseq, fence, status, retry_at, ended, error, mark, expired_before)
WHERE tasks.seq = ANY($1::bigint[]) AND tasks.seq = f.fseq AND tasks.version = f.fence
  AND (tasks.status = 'running') IS TRUE
  AND (f.expired_before IS NULL OR tasks.lease_expires_at < f.expired_before)
RETURNING tasks.seq, tasks.attempts, tasks.started_at, tasks.worker_id, tasks.schedule_id;

-- name: end_attempts
-- `finish` and `insert_executions` in one statement, for ends that take no new marks
-- (no retries): one round trip, atomic by itself. $9: each end's outcome.
WITH ended AS (
    UPDATE tasks
    SET status = f.status, version = tasks.version + 1, lease_expires_at = NULL,
        completed_at = f.ended, last_error = COALESCE(f.error, tasks.last_error)
    FROM unnest(
        $1::bigint[], $2::bigint[], $3::text[], $4::bigint[], $5::bigint[], $6::text[],
        $7::bigint[], $8::bigint[], $9::text[]
    ) AS f (fseq, fence, status, retry_at, ended, error, mark, expired_before, outcome)
    WHERE tasks.seq = ANY($1::bigint[]) AND tasks.seq = f.fseq AND tasks.version = f.fence
      AND (tasks.status = 'running') IS TRUE
      AND (f.expired_before IS NULL OR tasks.lease_expires_at < f.expired_before)
    RETURNING tasks.seq, tasks.schedule_id, tasks.attempts, f.fence, tasks.worker_id,
              tasks.started_at, f.ended, f.outcome, f.error
), recorded AS (
    INSERT INTO executions
        (task_seq, schedule_id, attempt, fence, worker_id, started_at, ended_at, outcome, error)
    SELECT * FROM ended
)
SELECT seq FROM ended;

-- name: insert_executions
INSERT INTO executions
    (task_seq, schedule_id, attempt, fence, worker_id, started_at, ended_at, outcome, error, retry_at)
SELECT * FROM unnest(
    $1::bigint[], $2::text[], $3::int[], $4::bigint[], $5::text[], $6::bigint[],
    $7::bigint[], $8::text[], $9::text[], $10::bigint[]
);

-- name: expired_leases
SELECT {task_columns} FROM tasks
WHERE status = 'running' AND lease_expires_at < $2 AND partition = ANY($1::int[])
ORDER BY lease_expires_at
LIMIT $3;

-- name: expire_unstarted
-- Tasks not started by their expiry end expired, a final status: the trigger queues
-- the news of those with dependents or an ordering key. A schedule's current instance
-- waits until it is released (which advances its schedule), or the schedule would
-- stop. A claim racing this either started the task first (the status check, made
-- again on the locked row, then skips it) or refuses it (its expiry check).
UPDATE tasks
SET status = 'expired', version = version + 1, completed_at = $2,
    last_error = 'not started before it expired'
WHERE seq IN (
    SELECT seq FROM tasks AS t
    WHERE expires_at IS NOT NULL AND status IN ('pending', 'waiting', 'blocked')
      AND expires_at <= $2 AND partition = ANY($1::int[])
      AND NOT EXISTS (
          SELECT 1 FROM schedules AS s
          WHERE s.schedule_id = t.schedule_id AND s.current_seq = t.seq
      )
    ORDER BY expires_at
    LIMIT $3
)
  AND status IN ('pending', 'waiting', 'blocked')
RETURNING {task_columns};

-- name: cancel
-- A running task keeps its lease's end: its attempt may run until then (its key waits).
-- Returned for the execution row of an attempt cancelled while it ran (a lease left).
UPDATE tasks
SET status = 'cancelled', version = version + 1, completed_at = $3,
    lease_expires_at = CASE WHEN status = 'running' THEN lease_expires_at END
WHERE seq = $1 AND version = $2
RETURNING seq, attempts, started_at, worker_id, schedule_id, lease_expires_at;

-- name: traceparents_of
SELECT seq, traceparent FROM tasks WHERE seq = ANY($1::bigint[]) AND traceparent IS NOT NULL;

-- name: get_task
SELECT {task_columns} FROM tasks WHERE task_id = $1;

-- name: get_tasks
SELECT {task_columns} FROM tasks WHERE seq = ANY($1::bigint[]);

-- name: predecessors_of
SELECT t.task_id, t.status FROM task_edges AS e JOIN tasks AS t ON t.seq = e.predecessor_seq
WHERE e.dependent_seq = $1
ORDER BY t.seq;

-- name: ordering_key_holder
SELECT t.task_id FROM ordering_keys AS k JOIN tasks AS t ON t.seq = k.holder_seq
WHERE k.ordering_key = $1;

-- name: history_of_task
SELECT e.id, t.task_id, e.attempt, e.fence, e.worker_id, e.started_at, e.ended_at, e.outcome, e.error,
       e.retry_at
FROM executions AS e JOIN tasks AS t ON t.seq = e.task_seq
WHERE e.task_seq = $1 AND e.id < $2
ORDER BY e.id DESC LIMIT $3;

-- name: execution_at_fence
-- The end recorded for one attempt, found by its fence (one row at most: an end, or a
-- cancel while it ran, is a compare-and-set on that fence).
SELECT e.id, t.task_id, e.attempt, e.fence, e.worker_id, e.started_at, e.ended_at, e.outcome, e.error,
       e.retry_at
FROM executions AS e JOIN tasks AS t ON t.seq = e.task_seq
WHERE e.task_seq = $1 AND e.fence = $2
ORDER BY e.id LIMIT 1;

-- name: history_of_schedule
SELECT e.id, t.task_id, e.attempt, e.fence, e.worker_id, e.started_at, e.ended_at, e.outcome, e.error,
       e.retry_at
FROM executions AS e JOIN tasks AS t ON t.seq = e.task_seq
WHERE e.schedule_id = $1 AND e.id < $2
ORDER BY e.id DESC LIMIT $3;

-- name: insert_schedule
INSERT INTO schedules (
    schedule_id, task_type, payload, queue, priority, max_retries, backoff_base, backoff_max,
    timeout_seconds, cron_expression, timezone, jitter_seconds, misfire_policy, overlap_policy,
    status, version, current_seq, previous_seq, created_at, expires_after_ms
) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20);

-- name: set_current_seq
UPDATE schedules SET current_seq = $2 WHERE schedule_id = $1;

-- name: get_schedule
SELECT {schedule_columns} FROM schedules WHERE schedule_id = $1;

-- name: schedules_of
SELECT {schedule_columns} FROM schedules
WHERE status = 'active' AND current_seq = ANY($1::bigint[]);

-- name: advance_schedule
UPDATE schedules
SET version = version + 1, current_seq = $1,
    previous_seq = CASE WHEN $4 THEN previous_seq ELSE current_seq END
WHERE schedule_id = $2 AND version = $3 AND status = 'active';

-- name: delete_task
DELETE FROM tasks WHERE seq = $1;

-- name: skip_instance
UPDATE tasks
SET status = 'cancelled', version = version + 1, completed_at = $2, last_error = $3
WHERE seq = $1 AND (status = 'pending') IS TRUE;

-- name: set_schedule_status
UPDATE schedules SET status = $2, version = version + 1
WHERE schedule_id = $1 AND ($3::text[] IS NULL OR status = ANY($3::text[]))
RETURNING {schedule_columns};

-- name: release_leases
UPDATE partition_leases SET owner = NULL, expires_at = 0
FROM unnest($2::int[], $3::bigint[]) AS r (rpartition, repoch)
WHERE partition = r.rpartition AND owner = $1 AND epoch = r.repoch;

-- name: renew_leases
-- A scheduler's whole renewal in one statement (one round trip to a far store): per
-- partition of $3, with the epoch it is held under ($4, NULL if not held), its
-- watermark ($5) and whether it is still wanted ($6): record the watermark if the
-- lease is still ours under that epoch; give back what is no longer wanted; take or
-- renew what is wanted and free, expired or ours (a new epoch unless it was ours and
-- unexpired). With $7, heartbeat node $1 too and answer the other nodes alive. Every
-- part reads the rows as they were before the statement, as separate statements
-- would. A release, or a node joining, notifies channel $8 so others move at once.
WITH now AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms),
r AS (
    SELECT * FROM unnest($3::int[], $4::bigint[], $5::bigint[], $6::bool[])
        AS r (partition, epoch, mark, wanted)
),
changed AS (
    UPDATE partition_leases AS l
    SET watermark = CASE WHEN l.owner = $1 AND l.epoch = r.epoch AND l.expires_at >= now.ms
                         THEN GREATEST(l.watermark, r.mark) ELSE l.watermark END,
        epoch = CASE WHEN NOT r.wanted OR (l.owner = $1 AND l.expires_at >= now.ms)
                     THEN l.epoch ELSE l.epoch + 1 END,
        owner = CASE WHEN r.wanted THEN $1 END,
        expires_at = CASE WHEN r.wanted THEN now.ms + $2::bigint ELSE 0 END
    FROM r, now
    WHERE l.partition = r.partition
      AND CASE WHEN r.wanted THEN l.owner = $1 OR l.owner IS NULL OR l.expires_at < now.ms
               ELSE l.owner = $1 AND l.epoch = r.epoch END
    RETURNING l.partition, l.epoch, r.wanted
),
joins AS (
    SELECT $7::bool AND NOT EXISTS (
        SELECT 1 FROM scheduler_nodes, now WHERE node_id = $1 AND expires_at >= now.ms
    ) AS joining
),
beat AS (
    INSERT INTO scheduler_nodes (node_id, expires_at)
    SELECT $1, now.ms + $2::bigint FROM now WHERE $7::bool
    ON CONFLICT (node_id) DO UPDATE SET expires_at = excluded.expires_at
),
forgotten AS (
    DELETE FROM scheduler_nodes
    WHERE $7::bool AND node_id <> $1 AND expires_at < (SELECT ms FROM now) - 3600000
)
SELECT
    ARRAY(SELECT partition FROM changed WHERE wanted ORDER BY partition) AS partitions,
    ARRAY(SELECT epoch FROM changed WHERE wanted ORDER BY partition) AS epochs,
    ARRAY(
        SELECT node_id FROM scheduler_nodes, now
        WHERE $7::bool AND node_id <> $1 AND expires_at >= now.ms ORDER BY node_id
    ) AS others,
    (
        SELECT count(*) FROM (
            SELECT pg_notify($8, '') FROM joins
            WHERE joining OR EXISTS (SELECT 1 FROM changed WHERE NOT wanted)
        ) AS n
    ) AS notified;

-- name: count_by_status
-- Per stored status, then the pending tasks due by their partition's watermark (from
-- the partial index on pending tasks): the caller derives `ready` from those.
SELECT status, count(*) FROM tasks GROUP BY status
UNION ALL
SELECT 'ready', count(*) FROM partition_leases AS l
JOIN tasks AS t ON t.partition = l.partition AND t.status = 'pending'
  AND t.due_time <= l.watermark;

-- name: watermarks
SELECT partition, watermark FROM partition_leases;

-- name: holding_fences
SELECT l.owner, l.partition, l.epoch FROM partition_leases AS l
JOIN unnest($1::text[], $2::int[], $3::bigint[]) AS f (fowner, fpartition, fepoch)
  ON l.partition = f.fpartition AND l.owner = f.fowner AND l.epoch = f.fepoch
WHERE l.expires_at >= $4;

-- name: redrive
UPDATE tasks
SET status = 'pending', version = version + 1, attempts = 0, due_time = $3, mark = $4,
    triggered_at = NULL, started_at = NULL, completed_at = NULL, lease_expires_at = NULL,
    worker_id = NULL
WHERE seq = $1 AND version = $2 AND status = 'failed';

-- name: set_priority
UPDATE tasks SET priority = $3, version = version + 1, mark = $4
WHERE seq = $1 AND version = $2 AND (status = 'pending') IS TRUE;

-- name: create_token
INSERT INTO api_tokens (token_id, hash, name, scopes, created_at) VALUES ($1, $2, $3, $4, $5);

-- name: list_tokens
SELECT token_id, name, scopes, created_at, revoked_at FROM api_tokens ORDER BY created_at;

-- name: revoke_token
UPDATE api_tokens SET revoked_at = $2 WHERE token_id = $1 AND revoked_at IS NULL;

-- name: active_tokens
SELECT hash, scopes FROM api_tokens WHERE revoked_at IS NULL;

-- name: leave
DELETE FROM scheduler_nodes WHERE node_id = $1;

-- name: notify
SELECT pg_notify($1, '');

-- name: overdue
SELECT seq, partition, due_time, queue, priority, schedule_id IS NOT NULL AS is_cron, mark
FROM tasks
WHERE status = 'pending' AND partition = ANY($1::int[]) AND due_time < $2 AND held_by IS NULL
ORDER BY due_time
LIMIT $3;

-- name: lock_marks
SELECT value FROM cluster WHERE key = 'mark' FOR UPDATE;

-- name: estimated_tasks
SELECT GREATEST(reltuples, 0)::bigint FROM pg_class WHERE oid = 'tasks'::regclass;

-- name: roll_task_ranges
SELECT tickwheel_roll_task_ranges($1);

-- name: drop_expired_task_ranges
SELECT tickwheel_drop_expired_task_ranges($1);

-- name: first_seq_created
-- The first seq created at or after $1. Seqs are handed out in creation order, so the
-- seqs are bisected, each step a probe of the primary key (of one range): a created
-- range of tasks costs no index of its own. Invariant: every seq below lo was created
-- before $1, every seq from hi on at or after it.
WITH RECURSIVE b (lo, hi) AS (
    -- Each bound on its own, so that each is one end of the primary key.
    SELECT COALESCE((SELECT MIN(seq) FROM tasks), 0), COALESCE((SELECT MAX(seq) FROM tasks), 0) + 1
    UNION ALL
    SELECT
        CASE WHEN (SELECT created_at FROM tasks WHERE seq >= (lo + hi) / 2 AND seq < hi
                   ORDER BY seq LIMIT 1) < $1
             THEN (SELECT seq FROM tasks WHERE seq >= (lo + hi) / 2 ORDER BY seq LIMIT 1) + 1
             ELSE lo END,
        CASE WHEN (SELECT created_at FROM tasks WHERE seq >= (lo + hi) / 2 AND seq < hi
                   ORDER BY seq LIMIT 1) < $1
             THEN hi
             ELSE (lo + hi) / 2 END
    FROM b WHERE lo < hi
)
SELECT lo FROM b WHERE lo >= hi;

-- name: list_workflows
SELECT workflow_id, name, created_at, request_hash FROM workflows
WHERE (created_at, workflow_id) < ($1, $2)
ORDER BY created_at DESC, workflow_id DESC
LIMIT $3;

-- name: workflow_counts
SELECT workflow_id, status, COUNT(*) AS count FROM tasks
WHERE workflow_id = ANY($1::text[])
GROUP BY workflow_id, status;

-- name: list_schedules
SELECT {s.schedule_columns},
       c.task_id AS current_task_id, c.status AS current_status,
       c.due_time AS current_due_time, c.completed_at AS current_completed_at,
       p.task_id AS previous_task_id, p.status AS previous_status,
       p.due_time AS previous_due_time, p.completed_at AS previous_completed_at
FROM schedules AS s
LEFT JOIN tasks AS c ON c.seq = s.current_seq
LEFT JOIN tasks AS p ON p.seq = s.previous_seq
WHERE s.status = ANY($1::text[]) AND (s.created_at, s.schedule_id) < ($2, $3)
ORDER BY s.created_at DESC, s.schedule_id DESC
LIMIT $4;

-- name: scheduler_nodes
SELECT node_id, expires_at FROM scheduler_nodes
WHERE expires_at >= (extract(epoch FROM clock_timestamp()) * 1000)::bigint
ORDER BY node_id;

-- name: lease_holders
SELECT partition, owner, epoch, expires_at FROM partition_leases
WHERE owner IS NOT NULL AND expires_at >= (extract(epoch FROM clock_timestamp()) * 1000)::bigint
ORDER BY partition;

-- name: worker_seen
-- A worker that reports again after its report lapsed starts anew.
-- Its task types are said with its queues: a report without queues keeps both.
INSERT INTO workers (worker_id, kind, queues, task_types, concurrency, started_at, seen_at,
                     expires_at)
SELECT $1, $2, COALESCE($3::text, '[]'), $6::text, $4::int, n.now, n.now, n.now + $5::bigint
FROM (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now) AS n
ON CONFLICT (worker_id) DO UPDATE
SET kind = excluded.kind,
    queues = COALESCE($3::text, workers.queues),
    task_types = CASE WHEN $3::text IS NULL THEN workers.task_types ELSE $6::text END,
    concurrency = excluded.concurrency,
    started_at = CASE WHEN workers.expires_at < excluded.seen_at
                      THEN excluded.seen_at ELSE workers.started_at END,
    seen_at = excluded.seen_at,
    expires_at = excluded.expires_at;

-- name: forget_dead_workers
DELETE FROM workers
WHERE expires_at < (extract(epoch FROM clock_timestamp()) * 1000)::bigint - 3600000;

-- name: worker_left
DELETE FROM workers WHERE worker_id = $1;

-- name: live_workers
-- Their tasks running now, counted in one pass over the running tasks.
SELECT w.worker_id, w.kind, w.queues, w.concurrency, w.started_at, w.seen_at, w.expires_at,
       COALESCE(r.n, 0)::int AS inflight, w.task_types
FROM workers AS w
LEFT JOIN (
    SELECT worker_id, COUNT(*) AS n FROM tasks WHERE status = 'running' GROUP BY worker_id
) AS r ON r.worker_id = w.worker_id
WHERE w.expires_at >= (extract(epoch FROM clock_timestamp()) * 1000)::bigint
ORDER BY w.worker_id;

-- Limits (issue 17): see storage/plans/limits.py.

-- name: limited_candidates
SELECT seq, task_type, queue, limit_key, priority, due_time, ordering_key
FROM tasks JOIN unnest($1::bigint[], $2::bigint[]) AS c (cseq, triggered) ON tasks.seq = c.cseq
WHERE tasks.seq = ANY($1::bigint[]) AND (status = 'pending') IS TRUE
  AND due_time <= c.triggered
  AND (expires_at IS NULL OR expires_at > $3);

-- name: lock_limits
SELECT limit_id, scope, name, rate_count, rate_period_ms, concurrency, recent_claims
FROM limits WHERE limit_id = ANY($1::text[]) ORDER BY limit_id FOR UPDATE;

-- name: running_of_limits
-- Every running task is read (as many as the workers' slots): a cancelled one keeps its
-- slot until its attempt's lease ends.
SELECT l.lid, count(*), min(t.until) FROM (
    SELECT task_type, queue, limit_key, NULL::bigint AS until FROM tasks
    WHERE status = 'running'
    UNION ALL
    SELECT task_type, queue, limit_key, lease_expires_at FROM tasks
    WHERE status = 'cancelled' AND lease_expires_at > $2
) AS t
JOIN unnest($1::text[]) AS l (lid)
  ON l.lid IN ('task_type:' || t.task_type, 'queue:' || t.queue, 'key:' || t.limit_key)
GROUP BY l.lid;

-- name: held_heads
SELECT l.lid, h.priority, h.due_time, h.seq FROM unnest($1::text[]) AS l (lid)
CROSS JOIN LATERAL (
    SELECT priority, due_time, seq FROM tasks
    WHERE held_by = l.lid AND status = 'pending'
    ORDER BY priority DESC, due_time, seq LIMIT 1
) AS h;

-- name: hold_tasks
UPDATE tasks SET held_by = h.lid
FROM unnest($1::bigint[], $2::text[]) AS h (hseq, lid)
WHERE tasks.seq = ANY($1::bigint[]) AND tasks.seq = h.hseq
  AND (tasks.status = 'pending') IS TRUE;

-- name: write_windows
UPDATE limits SET recent_claims = w.claims
FROM unnest($1::text[], $2::text[]) AS w (lid, claims)
WHERE limits.limit_id = w.lid;

-- name: wake_later
INSERT INTO limit_wakes (limit_id, not_before) SELECT * FROM unnest($1::text[], $2::bigint[]);

-- name: due_wakes
-- Skipped while another resolver takes them: one wake lets a limit's tasks go once.
SELECT id, limit_id FROM limit_wakes WHERE not_before <= $1 ORDER BY id LIMIT $2
FOR UPDATE SKIP LOCKED;

-- name: forget_wakes
DELETE FROM limit_wakes WHERE id = ANY($1::bigint[]);

-- name: held_of
SELECT seq FROM tasks WHERE held_by = $1 AND status = 'pending'
ORDER BY priority DESC, due_time, seq LIMIT $2;

-- name: release_held
UPDATE tasks SET held_by = NULL, mark = r.mark
FROM unnest($1::bigint[], $2::bigint[]) AS r (rseq, mark)
WHERE tasks.seq = ANY($1::bigint[]) AND tasks.seq = r.rseq
  AND (tasks.status = 'pending') IS TRUE;

-- name: sweep_wakes
INSERT INTO limit_wakes (limit_id, not_before)
SELECT l.limit_id, $1 FROM limits AS l
WHERE EXISTS (SELECT 1 FROM tasks WHERE held_by = l.limit_id AND status = 'pending')
  AND NOT EXISTS (SELECT 1 FROM limit_wakes AS w WHERE w.limit_id = l.limit_id);

-- name: first_wake
SELECT min(not_before) FROM limit_wakes;

-- name: limited_names
SELECT scope, name FROM limits;

-- name: put_limit
INSERT INTO limits (limit_id, scope, name, rate_count, rate_period_ms, concurrency, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (limit_id) DO UPDATE
SET rate_count = excluded.rate_count, rate_period_ms = excluded.rate_period_ms,
    concurrency = excluded.concurrency, updated_at = excluded.updated_at;

-- name: mark_slot_holders
-- Tasks already running when a concurrency limit is set hold its slots: their ends wake it.
UPDATE tasks SET holds_slot = true
WHERE status = 'running' AND NOT holds_slot
  AND $1 IN ('task_type:' || task_type, 'queue:' || queue, 'key:' || limit_key);

-- name: delete_limit
DELETE FROM limits WHERE limit_id = $1;

-- name: limits_in_use
SELECT l.limit_id, l.scope, l.name, l.rate_count, l.rate_period_ms, l.concurrency,
       l.recent_claims, l.updated_at,
       (SELECT count(*) FROM tasks WHERE held_by = l.limit_id AND status = 'pending') AS held
FROM limits AS l
WHERE $1::text IS NULL OR l.limit_id = $1
ORDER BY l.limit_id;
