-- 0004: task dependencies and workflows.

ALTER TABLE tasks ADD COLUMN workflow_id TEXT;
ALTER TABLE tasks ADD COLUMN node_name TEXT;
ALTER TABLE tasks ADD COLUMN has_dependents INTEGER NOT NULL DEFAULT 0;

CREATE INDEX tasks_workflow ON tasks (workflow_id, seq) WHERE workflow_id IS NOT NULL;

CREATE TABLE workflows (
    workflow_id  TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    created_at   INTEGER NOT NULL
);

CREATE TABLE task_dependencies (
    task_seq            INTEGER PRIMARY KEY REFERENCES tasks (seq),
    total_predecessors  INTEGER NOT NULL,
    satisfied_count     INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE task_edges (
    predecessor_seq  INTEGER NOT NULL,
    dependent_seq    INTEGER NOT NULL,
    state            TEXT NOT NULL DEFAULT 'waiting',
    PRIMARY KEY (predecessor_seq, dependent_seq)
) WITHOUT ROWID;

CREATE INDEX task_edges_dependent ON task_edges (dependent_seq);

CREATE TABLE propagations (
    seq  INTEGER PRIMARY KEY
);

CREATE TRIGGER tasks_final_with_dependents AFTER UPDATE OF status ON tasks
WHEN NEW.has_dependents = 1
    AND NEW.status IN ('succeeded', 'failed', 'cancelled', 'upstream_failed')
    AND OLD.status NOT IN ('succeeded', 'failed', 'cancelled', 'upstream_failed')
BEGIN
    INSERT OR IGNORE INTO propagations (seq) VALUES (NEW.seq);
END;
