-- An end that its dependents or its ordering key must be told of also wakes the
-- resolvers of every scheduler node (a hint: they look every second anyway).
CREATE OR REPLACE FUNCTION tasks_final_to_propagate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO propagations (seq) VALUES (NEW.seq) ON CONFLICT DO NOTHING;
    PERFORM pg_notify('tickwheel_ended', '');
    RETURN NULL;
END;
$$;
