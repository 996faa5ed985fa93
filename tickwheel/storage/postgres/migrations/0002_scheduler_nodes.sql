-- Scheduler nodes alive until their heartbeat lapses: they share the partitions.
CREATE TABLE scheduler_nodes (
    node_id     text PRIMARY KEY,
    expires_at  bigint NOT NULL
);
