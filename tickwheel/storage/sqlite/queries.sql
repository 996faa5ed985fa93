-- Named queries of the SQLite store, loaded by name (see tickwheel/storage/sqlite/queries.py).
-- Batches arrive as one JSON array bound to a single parameter and read with json_each,
-- so a batch of any size is one statement. A unary + on a column keeps the planner from
-- driving a batch update from an index over every pending task: the batch must be the
-- outer loop, each row found by its primary key.

-- name: insert_task
INSERT INTO tasks (
    seq, mark, task_id, partition, task_type, payload, schedule_type, schedule_id,
    queue, priority, max_retries, backoff_base, backoff_max, timeout_seconds,
    due_time, created_at, idempotency_key, workflow_id, node_name, ordering_key, status,
    completed_at, request_hash, triggered_at, expires_at, traceparent, limit_key
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);

-- name: statuses_of
SELECT task_id, seq, status FROM tasks WHERE task_id IN (SELECT value FROM json_each(?));

-- name: insert_dependency
INSERT INTO task_dependencies (task_seq, total_predecessors, satisfied_count) VALUES (?, ?, ?);

-- name: insert_edge
INSERT OR IGNORE INTO task_edges (predecessor_seq, dependent_seq, state) VALUES (?, ?, ?);

-- name: mark_has_dependents
UPDATE tasks SET has_dependents = 1
WHERE seq IN (SELECT value FROM json_each(?)) AND has_dependents = 0;

-- name: take_propagations
-- Tasks that reached a final state, their dependents and ordering key not yet told.
SELECT p.seq, t.task_id, t.status, t.ordering_key FROM propagations AS p JOIN tasks AS t ON t.seq = p.seq
WHERE p.not_before <= :now
ORDER BY p.seq LIMIT :limit;

-- name: settle_edges
-- Each edge changes once, so a propagation done twice counts nothing twice.
UPDATE task_edges SET state = :state
WHERE predecessor_seq IN (SELECT value FROM json_each(:seqs)) AND state = 'waiting'
RETURNING predecessor_seq, dependent_seq;

-- name: count_satisfied
-- The seed's bounded increment: never past the total. Returns the dependents now free.
UPDATE task_dependencies SET satisfied_count = satisfied_count + c.n
FROM (SELECT value ->> 0 AS dseq, value ->> 1 AS n FROM json_each(:counts)) AS c
WHERE task_seq = c.dseq AND satisfied_count + c.n <= total_predecessors
RETURNING task_seq, satisfied_count = total_predecessors;

-- name: unblock
-- Due now (or at its own later due time), with a new mark for the loader to find.
UPDATE tasks
SET status = 'pending', version = version + 1, mark = u.mark, due_time = MAX(due_time, :now)
FROM (SELECT value ->> 0 AS useq, value ->> 1 AS mark FROM json_each(:tasks)) AS u
WHERE tasks.seq = u.useq AND +tasks.status = 'blocked';

-- name: fail_upstream
UPDATE tasks
SET status = 'upstream_failed', version = version + 1, completed_at = :now,
    last_error = f.error
FROM (SELECT value ->> 0 AS fseq, value ->> 1 AS error FROM json_each(:tasks)) AS f
WHERE tasks.seq = f.fseq AND +tasks.status = 'blocked';

-- name: key_holder
SELECT o.holder_seq, t.status, t.lease_expires_at FROM ordering_keys AS o JOIN tasks AS t ON t.seq = o.holder_seq
WHERE o.ordering_key = ?;

-- name: next_of_key
-- The key's next task: the earliest due of those not yet run that are due (a waiting
-- task was, whatever this clock says).
SELECT seq, status FROM tasks INDEXED BY tasks_ordering
WHERE ordering_key = :key AND ordering_key IS NOT NULL AND status IN ('pending', 'waiting')
  AND (status = 'waiting' OR due_time <= :now)
ORDER BY due_time, seq
LIMIT 1;

-- name: hold_key
INSERT INTO ordering_keys (ordering_key, holder_seq) VALUES (?, ?)
ON CONFLICT (ordering_key) DO UPDATE SET holder_seq = excluded.holder_seq;

-- name: free_key
DELETE FROM ordering_keys WHERE ordering_key = ?;

-- name: take_turn
-- A waiting task's turn came: pending again, with a new mark for the loader to find.
UPDATE tasks SET status = 'pending', version = version + 1, mark = :mark
WHERE seq = :seq AND status = 'waiting';

-- name: keyed_claims
-- The claimed tasks that have an ordering key (only those the plain claim left).
SELECT seq, ordering_key FROM tasks
WHERE seq IN (SELECT value FROM json_each(:seqs))
  AND status = 'pending' AND due_time <= :latest AND ordering_key IS NOT NULL;

-- name: wait_for_turn
UPDATE tasks SET status = 'waiting', version = version + 1
WHERE seq IN (SELECT value FROM json_each(?)) AND +status = 'pending';

-- name: forget_propagations
DELETE FROM propagations WHERE seq IN (SELECT value FROM json_each(?));

-- name: insert_workflow
INSERT INTO workflows (workflow_id, name, created_at, request_hash) VALUES (?, ?, ?, ?)
ON CONFLICT (workflow_id) DO NOTHING;

-- name: get_workflow
SELECT workflow_id, name, created_at, request_hash FROM workflows WHERE workflow_id = ?;

-- name: workflow_tasks
SELECT {task_columns} FROM tasks WHERE workflow_id = ? ORDER BY seq;

-- name: active_workflows
SELECT DISTINCT workflow_id FROM tasks
WHERE workflow_id IN (SELECT value FROM json_each(?)) AND workflow_id IS NOT NULL
  AND status NOT IN ('succeeded', 'failed', 'cancelled', 'upstream_failed', 'expired');

-- name: edges_into
SELECT predecessor_seq, dependent_seq FROM task_edges
WHERE dependent_seq IN (SELECT value FROM json_each(?));

-- name: has_propagations
SELECT EXISTS (SELECT 1 FROM propagations WHERE not_before <= ?);

-- name: propagate_later
INSERT INTO propagations (seq, not_before) VALUES (?, ?)
ON CONFLICT (seq) DO UPDATE SET not_before = excluded.not_before;

-- name: take_idempotency_keys
-- Each key ([task type, key, task id, request hash, created], sorted) that is free, or
-- held since before :since (its window has passed), is taken; the keys taken are
-- returned. One writer at a time: no other insert races these.
INSERT INTO idempotency_keys (task_type, key, task_id, request_hash, created_at)
SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4
FROM json_each(:keys) WHERE true
ON CONFLICT (task_type, key) DO UPDATE
SET task_id = excluded.task_id, request_hash = excluded.request_hash,
    created_at = excluded.created_at
WHERE idempotency_keys.created_at < :since
RETURNING task_type, key;

-- name: idempotency_key_holders
SELECT k.task_type, k.key, k.task_id, k.request_hash
FROM json_each(?) AS wanted
JOIN idempotency_keys k ON k.task_type = wanted.value ->> 0 AND k.key = wanted.value ->> 1;

-- name: stored_requests
-- Tasks whose ids a client chose: a repeat must be the same request (request_hash).
SELECT task_id, request_hash FROM tasks WHERE task_id IN (SELECT value FROM json_each(?));

-- name: seqs_of
SELECT task_id, seq FROM tasks WHERE task_id IN (SELECT value FROM json_each(?));

-- name: max_seq
SELECT COALESCE(MAX(seq), 0) FROM tasks;

-- name: max_mark
SELECT CAST(value AS INTEGER) FROM cluster WHERE key = 'mark';

-- name: take_marks
UPDATE cluster SET value = CAST(value AS INTEGER) + :count WHERE key = 'mark'
RETURNING CAST(value AS INTEGER);

-- name: load_due_range
SELECT seq, partition, due_time, queue, priority, schedule_id IS NOT NULL AS is_cron, mark
FROM tasks INDEXED BY tasks_pending_due
WHERE status = 'pending'
  AND partition IN (SELECT value FROM json_each(:partitions))
  AND due_time > :due_after AND due_time <= :due_until AND held_by IS NULL;

-- name: load_new
SELECT seq, partition, due_time, queue, priority, schedule_id IS NOT NULL AS is_cron, mark
FROM tasks INDEXED BY tasks_pending_mark
WHERE mark > :mark_after AND status = 'pending' AND due_time <= :due_until
  AND partition IN (SELECT value FROM json_each(:partitions));

-- name: claim
-- Due by the stamp of the release, not by the claimer's clock: a worker whose clock is
-- a little behind the scheduler's must not refuse what was released on time, and an
-- item released before the task's current due time (it was retried since) is stale.
-- Tasks with an ordering key are left to a second pass (:keyed) that admits only the
-- task whose turn it is. A task past its expiry is never started: the expiry's scan
-- ends it. While limits exist, `claim_skipping` is added, and to the limited claim's,
-- `claim_marking` (see `claim_statement`).
UPDATE tasks
SET status = 'running', version = version + 1, attempts = attempts + 1,
    lease_expires_at = :lease_until, worker_id = :worker_id,
    started_at = :now, triggered_at = c.triggered, held_by = NULL
FROM (SELECT value ->> 0 AS cseq, value ->> 1 AS triggered FROM json_each(:claims)) AS c
WHERE tasks.seq = c.cseq AND +tasks.status = 'pending' AND tasks.due_time <= c.triggered
  AND (:keyed OR tasks.ordering_key IS NULL)
  AND (tasks.expires_at IS NULL OR tasks.expires_at > :now)
RETURNING seq, task_id, task_type, payload, attempts, version, due_time, lease_expires_at,
          queue, priority, max_retries, backoff_base, backoff_max, timeout_seconds, expires_at,
          traceparent;

-- name: claim_marking
-- A limited claim's: what it claims may hold a slot.
, holds_slot = :holds_slot

-- name: claim_skipping
-- Tasks of a limit (:skip_*: the task types, queues and keys that have one) are left to
-- the limited claim.
  AND NOT (tasks.task_type IN (SELECT value FROM json_each(:skip_types))
           OR tasks.queue IN (SELECT value FROM json_each(:skip_queues))
           OR (tasks.limit_key IS NOT NULL
               AND tasks.limit_key IN (SELECT value FROM json_each(:skip_keys))))

-- name: extend_leases
UPDATE tasks
SET lease_expires_at = :until
FROM (SELECT value ->> 0 AS fseq, value ->> 1 AS fence FROM json_each(:fences)) AS f
WHERE tasks.seq = f.fseq AND tasks.version = f.fence AND +tasks.status = 'running'
RETURNING tasks.seq;

-- name: finish
-- Ends of attempts, each [seq, fence, status, retry_at, ended, error, mark, expired_before];
-- a batch holds a seq at most once (the store splits repeats into a later round). A retry
-- gets a new mark; the reaper's ends also require the lease to have run out, so a
-- heartbeat that just extended it wins.
UPDATE tasks
SET status = f.status, version = version + 1, lease_expires_at = NULL,
    mark = COALESCE(f.mark, tasks.mark),
    due_time = COALESCE(f.retry_at, due_time),
    triggered_at = CASE WHEN f.retry_at IS NULL THEN triggered_at END,
    completed_at = CASE WHEN f.retry_at IS NULL THEN f.ended END,
    last_error = COALESCE(f.error, last_error)
FROM (
    SELECT value ->> 0 AS fseq, value ->> 1 AS fence, value ->> 2 AS status,
           value ->> 3 AS retry_at, value ->> 4 AS ended, value ->> 5 AS error,
           value ->> 6 AS mark, value ->> 7 AS expired_before
    FROM json_each(:finishes)
) AS f
WHERE tasks.seq = f.fseq AND tasks.version = f.fence AND +tasks.status = 'running'
  AND (f.expired_before IS NULL OR tasks.lease_expires_at < f.expired_before)
RETURNING tasks.seq, attempts, started_at, worker_id, schedule_id;

-- name: insert_execution
INSERT INTO executions
    (task_seq, schedule_id, attempt, fence, worker_id, started_at, ended_at, outcome, error, retry_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?);

-- name: expired_leases
SELECT {task_columns} FROM tasks INDEXED BY tasks_running_lease
WHERE status = 'running' AND lease_expires_at < :now
  AND partition IN (SELECT value FROM json_each(:partitions))
ORDER BY lease_expires_at
LIMIT :limit;

-- name: expire_unstarted
-- Tasks not started by their expiry end expired, a final status: the trigger queues
-- the news of those with dependents or an ordering key. A schedule's current instance
-- waits until it is released (which advances its schedule), or the schedule would
-- stop. Claims refuse them already.
UPDATE tasks
SET status = 'expired', version = version + 1, completed_at = :now,
    last_error = 'not started before it expired'
WHERE seq IN (
    SELECT seq FROM tasks AS t INDEXED BY tasks_unstarted_expiry
    WHERE expires_at IS NOT NULL AND status IN ('pending', 'waiting', 'blocked')
      AND expires_at <= :now AND partition IN (SELECT value FROM json_each(:partitions))
      AND NOT EXISTS (
          SELECT 1 FROM schedules AS s
          WHERE s.schedule_id = t.schedule_id AND s.current_seq = t.seq
      )
    ORDER BY expires_at
    LIMIT :limit
)
RETURNING {task_columns};

-- name: cancel
-- A running task keeps its lease's end: its attempt may run until then (its key waits).
-- Returned for the execution row of an attempt cancelled while it ran (a lease left).
UPDATE tasks
SET status = 'cancelled', version = version + 1, completed_at = :now,
    lease_expires_at = CASE WHEN status = 'running' THEN lease_expires_at END
WHERE seq = :seq AND version = :version
RETURNING seq, attempts, started_at, worker_id, schedule_id, lease_expires_at;

-- name: traceparents_of
SELECT seq, traceparent FROM tasks
WHERE seq IN (SELECT value FROM json_each(?)) AND traceparent IS NOT NULL;

-- name: get_task
SELECT {task_columns} FROM tasks WHERE task_id = ?;

-- name: get_tasks
SELECT {task_columns} FROM tasks WHERE seq IN (SELECT value FROM json_each(?));

-- name: predecessors_of
SELECT t.task_id, t.status FROM task_edges AS e JOIN tasks AS t ON t.seq = e.predecessor_seq
WHERE e.dependent_seq = ?
ORDER BY t.seq;

-- name: ordering_key_holder
SELECT t.task_id FROM ordering_keys AS k JOIN tasks AS t ON t.seq = k.holder_seq
WHERE k.ordering_key = ?;

-- name: history_of_task
SELECT e.id, t.task_id, e.attempt, e.fence, e.worker_id, e.started_at, e.ended_at, e.outcome, e.error,
       e.retry_at
FROM executions AS e JOIN tasks AS t ON t.seq = e.task_seq
WHERE e.task_seq = :task_seq AND e.id < :before
ORDER BY e.id DESC LIMIT :limit;

-- name: execution_at_fence
-- The end recorded for one attempt, found by its fence (one row at most: an end, or a
-- cancel while it ran, is a compare-and-set on that fence).
SELECT e.id, t.task_id, e.attempt, e.fence, e.worker_id, e.started_at, e.ended_at, e.outcome, e.error,
       e.retry_at
FROM executions AS e JOIN tasks AS t ON t.seq = e.task_seq
WHERE e.task_seq = :task_seq AND e.fence = :fence
ORDER BY e.id LIMIT 1;

-- name: history_of_schedule
SELECT e.id, t.task_id, e.attempt, e.fence, e.worker_id, e.started_at, e.ended_at, e.outcome, e.error,
       e.retry_at
FROM executions AS e JOIN tasks AS t ON t.seq = e.task_seq
WHERE e.schedule_id = :schedule_id AND e.id < :before
ORDER BY e.id DESC LIMIT :limit;

-- name: insert_schedule
INSERT INTO schedules (
    schedule_id, task_type, payload, queue, priority, max_retries, backoff_base, backoff_max,
    timeout_seconds, cron_expression, timezone, jitter_seconds, misfire_policy, overlap_policy,
    status, version, current_seq, previous_seq, created_at, expires_after_ms
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);

-- name: get_schedule
SELECT {schedule_columns} FROM schedules WHERE schedule_id = ?;

-- name: schedules_of
SELECT {schedule_columns} FROM schedules
WHERE status = 'active' AND current_seq IN (SELECT value FROM json_each(?));

-- name: advance_schedule
UPDATE schedules
SET version = version + 1, current_seq = :next_seq,
    -- A skipped instance never ran: the overlap check keeps watching the one before it.
    previous_seq = CASE WHEN :skipped THEN previous_seq ELSE current_seq END
WHERE schedule_id = :schedule_id AND version = :version AND status = 'active';

-- name: skip_instance
UPDATE tasks
SET status = 'cancelled', version = version + 1, completed_at = :now, last_error = :reason
WHERE seq = :seq AND status = 'pending';

-- name: set_schedule_status
UPDATE schedules SET status = :status, version = version + 1
WHERE schedule_id = :schedule_id
  AND (:only_from IS NULL OR status IN (SELECT value FROM json_each(:only_from)));

-- name: acquire_leases
UPDATE partition_leases
SET epoch = CASE WHEN owner = :node AND expires_at >= :now THEN epoch ELSE epoch + 1 END,
    owner = :node, expires_at = :now + :ttl
WHERE partition IN (SELECT value FROM json_each(:wanted))
  AND (owner = :node OR owner IS NULL OR expires_at < :now)
RETURNING partition, epoch;

-- name: release_lease
UPDATE partition_leases SET owner = NULL, expires_at = 0
WHERE partition = ? AND owner = ? AND epoch = ?;

-- name: release_dead_holder
-- Every lease of a node whose process is known to be gone (see holder.py).
UPDATE partition_leases SET owner = NULL, expires_at = 0 WHERE owner = ?;

-- name: set_watermark
UPDATE partition_leases SET watermark = MAX(watermark, :watermark)
WHERE partition = :partition AND owner = :node AND epoch = :epoch AND expires_at >= :now;

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

-- name: fence_holds
SELECT 1 FROM partition_leases
WHERE partition = :partition AND owner = :node_id AND epoch = :epoch AND expires_at >= :now;

-- name: redrive
-- A failed task back to pending, due now, with its attempts reset; a new mark so the
-- loader of its partition finds it.
UPDATE tasks
SET status = 'pending', version = version + 1, attempts = 0, due_time = :now, mark = :mark,
    triggered_at = NULL, started_at = NULL, completed_at = NULL, lease_expires_at = NULL,
    worker_id = NULL
WHERE seq = :seq AND version = :version AND status = 'failed';

-- name: set_priority
UPDATE tasks SET priority = :priority, version = version + 1, mark = :mark
WHERE seq = :seq AND version = :version AND status = 'pending';

-- name: create_token
INSERT INTO api_tokens (token_id, hash, name, scopes, created_at) VALUES (?, ?, ?, ?, ?);

-- name: list_tokens
SELECT token_id, name, scopes, created_at, revoked_at FROM api_tokens ORDER BY created_at;

-- name: revoke_token
UPDATE api_tokens SET revoked_at = :now WHERE token_id = :token_id AND revoked_at IS NULL;

-- name: active_tokens
SELECT hash, scopes FROM api_tokens WHERE revoked_at IS NULL;

-- name: node_heartbeat
INSERT INTO scheduler_nodes (node_id, expires_at) VALUES (:node, :now + :ttl)
ON CONFLICT (node_id) DO UPDATE SET expires_at = excluded.expires_at;

-- name: live_nodes
SELECT node_id FROM scheduler_nodes WHERE expires_at >= :now ORDER BY node_id;

-- name: forget_dead_nodes
DELETE FROM scheduler_nodes WHERE expires_at < :now - 3600000;

-- name: leave
DELETE FROM scheduler_nodes WHERE node_id = ?;

-- name: overdue
SELECT seq, partition, due_time, queue, priority, schedule_id IS NOT NULL AS is_cron, mark
FROM tasks INDEXED BY tasks_pending_due
WHERE status = 'pending'
  AND partition IN (SELECT value FROM json_each(:partitions)) AND due_time < :before
  AND held_by IS NULL
ORDER BY due_time
LIMIT :limit;

-- name: first_seq_created
-- The first seq created at or after :at. Seqs are handed out in creation order, so the
-- seqs are bisected, each step a probe of the primary key: a created range of tasks
-- costs no index of its own. Invariant: every seq below lo was created before :at,
-- every seq from hi on at or after it.
WITH RECURSIVE b (lo, hi) AS (
    -- Each bound on its own, so that each is one end of the primary key.
    SELECT COALESCE((SELECT MIN(seq) FROM tasks), 0), COALESCE((SELECT MAX(seq) FROM tasks), 0) + 1
    UNION ALL
    SELECT
        CASE WHEN (SELECT created_at FROM tasks WHERE seq >= (lo + hi) / 2 AND seq < hi
                   ORDER BY seq LIMIT 1) < :at
             THEN (SELECT seq FROM tasks WHERE seq >= (lo + hi) / 2 ORDER BY seq LIMIT 1) + 1
             ELSE lo END,
        CASE WHEN (SELECT created_at FROM tasks WHERE seq >= (lo + hi) / 2 AND seq < hi
                   ORDER BY seq LIMIT 1) < :at
             THEN hi
             ELSE (lo + hi) / 2 END
    FROM b WHERE lo < hi
)
SELECT lo FROM b WHERE lo >= hi;

-- name: list_workflows
SELECT workflow_id, name, created_at, request_hash FROM workflows
WHERE (created_at, workflow_id) < (:before_created, :before_id)
ORDER BY created_at DESC, workflow_id DESC
LIMIT :limit;

-- name: workflow_counts
SELECT workflow_id, status, COUNT(*) AS count FROM tasks
WHERE workflow_id IN (SELECT value FROM json_each(?)) AND workflow_id IS NOT NULL
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
WHERE s.status IN (SELECT value FROM json_each(:statuses))
  AND (s.created_at, s.schedule_id) < (:before_created, :before_id)
ORDER BY s.created_at DESC, s.schedule_id DESC
LIMIT :limit;

-- name: scheduler_nodes
SELECT node_id, expires_at FROM scheduler_nodes WHERE expires_at >= :now ORDER BY node_id;

-- name: lease_holders
SELECT partition, owner, epoch, expires_at FROM partition_leases
WHERE owner IS NOT NULL AND expires_at >= :now
ORDER BY partition;

-- name: worker_seen
-- A worker that reports again after its report lapsed starts anew.
-- Its task types are said with its queues: a report without queues keeps both.
INSERT INTO workers (worker_id, kind, queues, task_types, concurrency, started_at, seen_at,
                     expires_at)
VALUES (:worker_id, :kind, COALESCE(:queues, '[]'), :task_types, :concurrency, :now, :now,
        :now + :ttl)
ON CONFLICT (worker_id) DO UPDATE
SET kind = excluded.kind,
    queues = COALESCE(:queues, workers.queues),
    task_types = CASE WHEN :queues IS NULL THEN workers.task_types ELSE :task_types END,
    concurrency = excluded.concurrency,
    started_at = CASE WHEN workers.expires_at < :now THEN :now ELSE workers.started_at END,
    seen_at = :now,
    expires_at = excluded.expires_at;

-- name: forget_dead_workers
DELETE FROM workers WHERE expires_at < :now - 3600000;

-- name: worker_left
DELETE FROM workers WHERE worker_id = ?;

-- name: live_workers
-- Their tasks running now, counted in one pass over the running tasks.
SELECT w.worker_id, w.kind, w.queues, w.concurrency, w.started_at, w.seen_at, w.expires_at,
       COALESCE(r.n, 0) AS inflight, w.task_types
FROM workers AS w
LEFT JOIN (
    SELECT worker_id, COUNT(*) AS n FROM tasks WHERE status = 'running' GROUP BY worker_id
) AS r ON r.worker_id = w.worker_id
WHERE w.expires_at >= :now
ORDER BY w.worker_id;

-- Retention (see retention.py): ended tasks deleted in batches of a window of seqs.

-- name: retention_window
-- The last seq and the count of the next :batch tasks after :after, below :below.
SELECT MAX(seq), COUNT(*) FROM (
    SELECT seq FROM tasks WHERE seq > :after AND seq < :below ORDER BY seq LIMIT :batch
);

-- name: ended_tasks_in_window
-- Tasks of the window that ended before :before and that nothing still needs. The
-- newest task stays (seqs are MAX + 1: a deleted newest seq would be handed out again).
-- PostgreSQL applies the same rule to whole ranges (tickwheel_drop_expired_task_ranges),
-- except that a schedule's instances do not hold a range: a range is too much to keep
-- for what a list of schedules shows.
SELECT seq, workflow_id FROM tasks AS t
WHERE seq > :after AND seq <= :last
  AND status IN ('succeeded', 'failed', 'cancelled', 'upstream_failed', 'expired')
  AND completed_at < :before
  AND seq < (SELECT MAX(seq) FROM tasks)
  AND seq NOT IN (SELECT seq FROM propagations)
  AND seq NOT IN (SELECT holder_seq FROM ordering_keys)
  AND seq NOT IN (
      SELECT current_seq FROM schedules WHERE current_seq IS NOT NULL
      UNION ALL
      SELECT previous_seq FROM schedules WHERE previous_seq IS NOT NULL
  )
  AND NOT EXISTS (
      SELECT 1 FROM task_edges AS e JOIN tasks AS d ON d.seq = e.dependent_seq
      WHERE e.predecessor_seq = t.seq
        AND d.status NOT IN ('succeeded', 'failed', 'cancelled', 'upstream_failed', 'expired')
  );

-- name: workflows_kept
-- Of these workflows, those with a task that has not ended, or ended at or after
-- :before: a workflow goes whole.
SELECT w.value FROM json_each(:ids) AS w
WHERE EXISTS (
    SELECT 1 FROM tasks
    WHERE workflow_id = w.value AND workflow_id IS NOT NULL
      AND (status NOT IN ('succeeded', 'failed', 'cancelled', 'upstream_failed', 'expired')
           OR completed_at >= :before)
);

-- name: delete_tasks
DELETE FROM tasks WHERE seq IN (SELECT value FROM json_each(?))
RETURNING task_type, idempotency_key, task_id;

-- name: delete_executions
DELETE FROM executions WHERE task_seq IN (SELECT value FROM json_each(?));

-- name: delete_edges_from
DELETE FROM task_edges WHERE predecessor_seq IN (SELECT value FROM json_each(?));

-- name: delete_edges_into
DELETE FROM task_edges WHERE dependent_seq IN (SELECT value FROM json_each(?));

-- name: delete_dependencies
DELETE FROM task_dependencies WHERE task_seq IN (SELECT value FROM json_each(?));

-- name: delete_idempotency_keys
-- Each [task type, key, task id]: the key, if that task still holds it (after its
-- window a key may have been taken by a newer task).
DELETE FROM idempotency_keys
WHERE (task_type, key, task_id) IN (
    SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(?)
);

-- name: delete_empty_workflows
DELETE FROM workflows
WHERE workflow_id IN (SELECT value FROM json_each(?))
  AND NOT EXISTS (SELECT 1 FROM tasks WHERE tasks.workflow_id = workflows.workflow_id);

-- Limits (issue 17): see storage/plans/limits.py.

-- name: limited_candidates
SELECT seq, task_type, queue, limit_key, priority, due_time, ordering_key
FROM tasks JOIN (SELECT value ->> 0 AS cseq, value ->> 1 AS triggered FROM json_each(:claims)) AS c
  ON tasks.seq = c.cseq
WHERE +tasks.status = 'pending' AND tasks.due_time <= c.triggered
  AND (tasks.expires_at IS NULL OR tasks.expires_at > :now);

-- name: lock_limits
SELECT limit_id, scope, name, rate_count, rate_period_ms, concurrency, recent_claims
FROM limits WHERE limit_id IN (SELECT value FROM json_each(:ids)) ORDER BY limit_id;

-- name: running_of_limits
-- Every running task is read (as many as the workers' slots): a cancelled one keeps its
-- slot until its attempt's lease ends.
SELECT l.value, count(*), min(t.until) FROM (
    SELECT task_type, queue, limit_key, NULL AS until FROM tasks INDEXED BY tasks_running_lease
    WHERE status = 'running'
    UNION ALL
    SELECT task_type, queue, limit_key, lease_expires_at FROM tasks
    INDEXED BY tasks_cancelled_lease
    WHERE status = 'cancelled' AND lease_expires_at IS NOT NULL AND lease_expires_at > :now
) AS t
JOIN json_each(:ids) AS l
  ON l.value IN ('task_type:' || t.task_type, 'queue:' || t.queue, 'key:' || t.limit_key)
GROUP BY l.value;

-- name: held_head
SELECT priority, due_time, seq FROM tasks INDEXED BY tasks_held
WHERE held_by = :limit_id AND status = 'pending'
ORDER BY priority DESC, due_time, seq LIMIT 1;

-- name: hold_tasks
UPDATE tasks SET held_by = h.value ->> 1
FROM json_each(:rows) AS h
WHERE tasks.seq = h.value ->> 0 AND +tasks.status = 'pending';

-- name: write_windows
UPDATE limits SET recent_claims = w.value ->> 1
FROM json_each(:rows) AS w
WHERE limits.limit_id = w.value ->> 0;

-- name: wake_later
INSERT INTO limit_wakes (limit_id, not_before)
SELECT value ->> 0, value ->> 1 FROM json_each(:rows);

-- name: due_wakes
SELECT id, limit_id FROM limit_wakes WHERE not_before <= :now ORDER BY id LIMIT :limit;

-- name: forget_wakes
DELETE FROM limit_wakes WHERE id IN (SELECT value FROM json_each(:ids));

-- name: held_of
SELECT seq FROM tasks INDEXED BY tasks_held
WHERE held_by = :limit_id AND status = 'pending'
ORDER BY priority DESC, due_time, seq LIMIT :count;

-- name: release_held
UPDATE tasks SET held_by = NULL, mark = r.value ->> 1
FROM json_each(:rows) AS r
WHERE tasks.seq = r.value ->> 0 AND +tasks.status = 'pending';

-- name: sweep_wakes
INSERT INTO limit_wakes (limit_id, not_before)
SELECT l.limit_id, :now FROM limits AS l
WHERE EXISTS (SELECT 1 FROM tasks WHERE held_by = l.limit_id AND status = 'pending')
  AND NOT EXISTS (SELECT 1 FROM limit_wakes AS w WHERE w.limit_id = l.limit_id);

-- name: first_wake
SELECT min(not_before) FROM limit_wakes;

-- name: limited_names
SELECT scope, name FROM limits;

-- name: put_limit
INSERT INTO limits (limit_id, scope, name, rate_count, rate_period_ms, concurrency, updated_at)
VALUES (:limit_id, :scope, :name, :rate_count, :rate_period_ms, :concurrency, :now)
ON CONFLICT (limit_id) DO UPDATE
SET rate_count = excluded.rate_count, rate_period_ms = excluded.rate_period_ms,
    concurrency = excluded.concurrency, updated_at = excluded.updated_at;

-- name: mark_slot_holders
-- Tasks already running when a concurrency limit is set hold its slots: their ends wake it.
UPDATE tasks SET holds_slot = 1
WHERE status = 'running' AND holds_slot = 0
  AND :limit_id IN ('task_type:' || task_type, 'queue:' || queue, 'key:' || limit_key);

-- name: delete_limit
DELETE FROM limits WHERE limit_id = :limit_id;

-- name: limits_in_use
SELECT l.limit_id, l.scope, l.name, l.rate_count, l.rate_period_ms, l.concurrency,
       l.recent_claims, l.updated_at,
       (SELECT count(*) FROM tasks WHERE held_by = l.limit_id AND status = 'pending') AS held
FROM limits AS l
WHERE :limit_id IS NULL OR l.limit_id = :limit_id
ORDER BY l.limit_id;
