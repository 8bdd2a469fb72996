-- Recording a batch of results becomes one call of herald_record, where it
-- was a transaction of four to six statements sent one at a time. Each
-- statement cost a round trip: a write to the database's socket and a wait
-- for its answer, on the worker and on PostgreSQL alike, and in the
-- benchmark those round trips, not the rows written, were most of what
-- recording cost. The steps and their order are the same as before; so are
-- the locks.

-- One result of the batch, as recordResults sends it (storage/queries/record-results.ts).
CREATE TYPE herald_result AS (
  ord             int,          -- completion order within the batch
  delivery_id     uuid,
  lease_token     bigint,
  endpoint_id     uuid,
  outcome         text,         -- succeeded, retry, failed, skipped, given_back
  retry_in_ms     bigint,       -- retry only: due this long after now
  status          int,          -- the receiver's status code, if it answered
  error           text,
  throttle_ms     bigint,       -- a 429/503 answer: no new request for this long
  -- The attempt row, when a request was sent (attempt_id NULL: none was).
  attempt_id      uuid,
  event_type      text,
  attempt_number  int,
  started_at      timestamptz,
  duration_ms     int,
  attempt_status  int,
  attempt_outcome text,
  attempt_error   text,
  signature       text,
  response_excerpt text,        -- base64
  url             text
);

-- p_now is NULL in production (the database's clock); tests pass their own.
-- Returns the deliveries whose lease still held (the others' results were
-- late, and changed nothing) and the endpoints this batch disabled.
CREATE FUNCTION herald_record(p_results jsonb, p_now timestamptz, p_disable_after int, p_endpoint_cap int,
                              OUT applied uuid[], OUT disabled uuid[])
LANGUAGE plpgsql VOLATILE
AS $$
#variable_conflict use_column
DECLARE
  v_now timestamptz := COALESCE(p_now, now());
  v_results herald_result[];
  ep record;
  r herald_result;
  v_streak int;
  v_limit int;
  v_throttle_ms bigint;
  v_halved boolean;
  v_last_error text;
  v_disable boolean;
BEGIN
  SELECT array_agg(x ORDER BY x.ord) INTO v_results FROM jsonb_populate_recordset(NULL::herald_result, p_results) x;
  disabled := '{}';

  -- 1. The batch's endpoints, locked first and in one order in every worker,
  -- as disabling and deleting an endpoint lock it before its deliveries
  -- (locked after them, a recording and a disable by hand each held what
  -- the other waited for). NO KEY UPDATE, the lock an UPDATE of these
  -- columns takes anyway: a publish holds its endpoints FOR KEY SHARE until
  -- it commits, which FOR UPDATE would wait for.
  PERFORM 1 FROM endpoints e
    WHERE e.id IN (SELECT x.endpoint_id FROM unnest(v_results) x)
    ORDER BY e.id
    FOR NO KEY UPDATE;

  -- 2. The fence: only results whose in_flight row still carries their lease
  -- token apply. A lease that ran out (reaped, or claimed again by another
  -- worker) changes nothing.
  WITH fenced AS (
    DELETE FROM in_flight f USING unnest(v_results) x
     WHERE f.delivery_id = x.delivery_id AND f.lease_token = x.lease_token
    RETURNING f.delivery_id
  )
  SELECT COALESCE(array_agg(fenced.delivery_id), '{}') INTO applied FROM fenced;

  -- 3. The deliveries' new states. An answer (or a failure in transport)
  -- spends one attempt; a given-back delivery is due again at once, with
  -- nothing spent and its last answer kept.
  UPDATE deliveries d
     SET state = CASE x.outcome WHEN 'retry' THEN 'pending' WHEN 'given_back' THEN 'pending' ELSE x.outcome END,
         attempts = d.attempts + CASE WHEN x.outcome IN ('succeeded', 'retry', 'failed') THEN 1 ELSE 0 END,
         next_attempt_at = v_now + COALESCE(x.retry_in_ms, 0) * interval '1 millisecond',
         last_status = CASE WHEN x.outcome = 'given_back' THEN d.last_status ELSE x.status END,
         last_error = CASE WHEN x.outcome = 'given_back' THEN d.last_error ELSE x.error END,
         updated_at = v_now
    FROM unnest(v_results) x
   WHERE d.id = x.delivery_id AND x.delivery_id = ANY (applied);

  -- 4. The attempt rows of every request sent, fenced out or not (a late one
  -- was sent all the same). The account, endpoint and event come from the
  -- delivery, held FOR KEY SHARE as a foreign key would (docs/decisions/0008):
  -- a delivery being deleted with its endpoint is waited for, then left out.
  INSERT INTO attempts (id, account_id, endpoint_id, delivery_id, event_id, event_type, attempt_number, is_test,
                        started_at, duration_ms, status_code, outcome, error, signature, response_excerpt, url)
  SELECT x.attempt_id, d.account_id, d.endpoint_id, d.id, d.event_id, x.event_type, x.attempt_number, false,
         x.started_at, x.duration_ms, x.attempt_status, x.attempt_outcome, x.attempt_error, x.signature, decode(x.response_excerpt, 'base64'), x.url
    FROM unnest(v_results) x
    JOIN deliveries d ON d.id = x.delivery_id
   WHERE x.attempt_id IS NOT NULL
     FOR KEY SHARE OF d
  ON CONFLICT (id) DO NOTHING;

  -- 5. Each endpoint with applied results, from them in completion order:
  -- the failure streak (a success restarts it, a failed delivery adds one),
  -- disabling at p_disable_after, and the slow-down after 429/503 answers.
  -- An endpoint with no streak and no slow-down whose results all
  -- succeeded stays as it is: the usual case is passed over at once.
  FOR ep IN
    SELECT e.id, e.enabled, e.failure_streak, e.throttle_limit FROM endpoints e
     WHERE e.id IN (SELECT x.endpoint_id FROM unnest(v_results) x
                     WHERE x.delivery_id = ANY (applied)
                       AND (x.outcome = 'failed' OR x.throttle_ms IS NOT NULL OR e.failure_streak > 0 OR e.throttle_limit IS NOT NULL))
     ORDER BY e.id
  LOOP
    v_streak := ep.failure_streak;
    v_limit := ep.throttle_limit;
    v_throttle_ms := NULL;
    v_halved := false;
    v_last_error := NULL;
    FOR r IN SELECT x.* FROM unnest(v_results) x WHERE x.endpoint_id = ep.id AND x.delivery_id = ANY (applied) ORDER BY x.ord LOOP
      -- Only receivers' answers count: a given-back or skipped delivery, or a
      -- retry still to come, leaves the streak as it is.
      IF r.outcome = 'succeeded' THEN
        v_streak := 0;
      ELSIF r.outcome = 'failed' THEN
        v_streak := v_streak + 1;
        v_last_error := r.error;
      END IF;
      IF r.throttle_ms IS NOT NULL THEN
        -- One batch's 429/503 answers are one congestion event (as in AIMD):
        -- the in-flight limit halves once for them, not once per answer.
        v_throttle_ms := r.throttle_ms;
        IF NOT v_halved THEN
          v_limit := GREATEST(1, COALESCE(v_limit, p_endpoint_cap) / 2);
          v_halved := true;
        END IF;
      ELSIF r.status BETWEEN 200 AND 299 AND v_limit IS NOT NULL THEN
        -- A slowed-down endpoint that answers 2xx gets one more request in
        -- flight, and is back to normal at the cap.
        v_limit := CASE WHEN v_limit + 1 >= p_endpoint_cap THEN NULL ELSE v_limit + 1 END;
      END IF;
    END LOOP;
    v_disable := ep.enabled AND v_streak >= p_disable_after;
    CONTINUE WHEN v_streak = ep.failure_streak AND NOT v_disable AND v_throttle_ms IS NULL
                  AND v_limit IS NOT DISTINCT FROM ep.throttle_limit;
    UPDATE endpoints e
       SET failure_streak = v_streak,
           enabled = e.enabled AND NOT v_disable,
           disabled_at = CASE WHEN v_disable THEN v_now ELSE e.disabled_at END,
           disabled_reason = CASE WHEN v_disable
             THEN v_streak || ' consecutive failed deliveries; the last: ' || COALESCE(v_last_error, 'unknown error')
             ELSE e.disabled_reason END,
           throttled_until = CASE WHEN v_throttle_ms IS NULL THEN e.throttled_until
                                  ELSE v_now + v_throttle_ms * interval '1 millisecond' END,
           throttle_limit = v_limit,
           updated_at = CASE WHEN v_streak = ep.failure_streak AND NOT v_disable THEN e.updated_at ELSE v_now END
     WHERE e.id = ep.id;
    IF v_disable THEN
      disabled := disabled || ep.id;
    END IF;
  END LOOP;

  -- 6. A disabled endpoint receives nothing: its pending deliveries become
  -- skipped (kept for recovery), and those in flight leave in_flight, so
  -- their results are fenced out (skipPendingDeliveries does the same for
  -- a disable by hand).
  IF cardinality(disabled) > 0 THEN
    UPDATE deliveries SET state = 'skipped', updated_at = v_now
     WHERE endpoint_id = ANY (disabled) AND state = 'pending';
    DELETE FROM in_flight WHERE endpoint_id = ANY (disabled);
  END IF;
END
$$;
