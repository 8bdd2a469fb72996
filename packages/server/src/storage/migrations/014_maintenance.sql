-- The endpoints whose attempt log grew, for the maintainer to trim to the
-- newest 100 attempts each. Whichever process logs an attempt, the insert
-- adds its endpoint here (in the same transaction), and the maintainer
-- takes the rows away when it prunes: it prunes exactly the endpoints that
-- got attempts, with no scan of every endpoint, no margin for attempts
-- written late, and no memory of its own that a restart would lose.
--
-- One row per endpoint per inserting statement (a recorded batch), not per
-- attempt: the trigger runs once per statement. No unique key on purpose:
-- two workers recording for the same endpoint at once must not wait for
-- each other on it; the maintainer removes the duplicates when it reads.
CREATE TABLE attempt_log_grown (
  endpoint_id  uuid NOT NULL
);

CREATE FUNCTION herald_attempt_log_grown() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  INSERT INTO attempt_log_grown (endpoint_id) SELECT DISTINCT endpoint_id FROM new_attempts;
  RETURN NULL;
END
$$;

CREATE TRIGGER attempts_log_grown AFTER INSERT ON attempts
  REFERENCING NEW TABLE AS new_attempts
  FOR EACH STATEMENT EXECUTE FUNCTION herald_attempt_log_grown();
