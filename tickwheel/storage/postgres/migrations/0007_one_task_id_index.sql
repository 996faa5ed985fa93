-- The first range kept the UNIQUE constraint its table had before 0004 made tasks
-- partitioned, beside the partitioned index tasks_task_id: two indexes on task_id, each
-- written on every insert and every update of the range's rows. Inserts are serialised
-- by the mark counter's row lock and look a chosen id up before writing it (see
-- `_repeats`), which is what keeps task ids unique in every range; the copy goes.
ALTER TABLE tasks_r0 DROP CONSTRAINT IF EXISTS tasks_task_id_key;
