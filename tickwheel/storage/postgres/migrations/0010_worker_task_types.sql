-- 0010: a worker says which task types it handles along with its queues (issue 16), so
-- that a task no live worker can run is told apart from one merely waiting: a JSON
-- array, or NULL for a worker that takes any type (one over HTTP that names none).
ALTER TABLE workers ADD COLUMN task_types text;
