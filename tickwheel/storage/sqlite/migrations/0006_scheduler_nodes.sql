-- 0006: scheduler nodes, which share the partitions among those alive.

CREATE TABLE scheduler_nodes (
    node_id     TEXT PRIMARY KEY,
    expires_at  INTEGER NOT NULL
) WITHOUT ROWID;
