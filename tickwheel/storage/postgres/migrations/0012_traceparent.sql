-- 0012: traces (issue 17). With tracing on, a task carries the W3C trace context of
-- the request that submitted it, so that its trigger, claim and run join that trace.
ALTER TABLE tasks ADD COLUMN traceparent text;
