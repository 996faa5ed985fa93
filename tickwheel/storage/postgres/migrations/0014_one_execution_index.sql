-- executions_task indexed (task_seq, id), which is also the primary key since 0004: a
-- second index written on every end of every task, read by nothing the key does not
-- serve. Dropping the partitioned index drops the ranges' copies attached to it; the
-- first range's own copy (from before 0004) goes too, if it was left unattached.
DROP INDEX IF EXISTS executions_task;
DROP INDEX IF EXISTS executions_r0_task;
