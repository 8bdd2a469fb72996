-- Recording a batch of results becomes one call of herald_record, one round
-- trip and one transaction, where it was a transaction of six statements sent
-- one at a time: BEGIN, lock the endpoints, the fence, the deliveries, the
-- attempts, COMMIT. Skipping a disabled endpoint's deliveries becomes a
-- function too, shared with a disable by hand. A batch at a steady rate holds a dozen results, and each
-- round trip (a write to a socket, a wake-up of the other side, its answer)
-- cost the worker and PostgreSQL more than the rows written.
--
-- The steps, their order and their locks are those of the statements it
-- replaces. The arrays are the ones those statements took, one element per
-- result in completion order; the attempt arrays hold one element per
-- request sent.

-- A disabled endpoint receives nothing: its pending deliveries become
-- skipped (kept for recovery), and those in flight leave in_flight, so their
-- results are fenced out. For a disable by hand (skipPendingDeliveries in
-- storage/queries/record-results.ts) and by herald_record below. The delete
-- comes after the update, not before: a claim that held some of these rows
-- locked has committed by then, and the delete sees its in_flight rows.
CREATE FUNCTION herald_skip_pending(p_endpoint_ids uuid[], p_now timestamptz) RETURNS int
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
  v_skipped int;
BEGIN
  UPDATE deliveries SET state = 'skipped', updated_at = COALESCE(p_now, now())
   WHERE endpoint_id = ANY (p_endpoint_ids) AND state = 'pending';
  GET DIAGNOSTICS v_skipped = ROW_COUNT;
  DELETE FROM in_flight WHERE endpoint_id = ANY (p_endpoint_ids);
  RETURN v_skipped;
END
$$;

CREATE FUNCTION herald_record(
  -- One element per result, in completion order.
  p_delivery_ids uuid[], p_lease_tokens int8[], p_endpoint_ids uuid[], p_outcomes text[], p_retry_in_ms int8[],
  p_statuses int[], p_errors text[], p_throttle_ms int8[],
  -- One element per request sent.
  p_attempt_ids uuid[], p_attempt_deliveries uuid[], p_event_types text[], p_attempt_numbers int[], p_started_ms int8[],
  p_duration_ms int[], p_status_codes int[], p_attempt_outcomes text[], p_attempt_errors text[], p_signatures text[],
  p_response_excerpts text[], p_urls text[],
  p_now timestamptz, p_disable_after int, p_endpoint_cap int,
  OUT applied uuid[], OUT disabled uuid[])
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
  v_now timestamptz := COALESCE(p_now, now());
  v_applied_at int[];   -- the positions of the results whose lease held, in order
  ep record;
  i int;
  v_streak int;
  v_limit int;
  v_throttle_ms int8;
  v_halved boolean;
  v_last_error text;
  v_disable boolean;
BEGIN
  disabled := '{}';

  -- 1. The endpoints first, locked in one order in every worker, as disabling
  -- and deleting an endpoint lock it before its deliveries: locked after the
  -- deliveries, a recording and a disable by hand each held what the other
  -- waited for. NO KEY UPDATE, the lock an UPDATE of these columns takes
  -- anyway, not FOR UPDATE: a publish holds its endpoints FOR KEY SHARE until
  -- it commits, which FOR UPDATE would wait for.
  PERFORM 1 FROM endpoints e
   WHERE e.id = ANY (p_endpoint_ids)
   ORDER BY e.id
     FOR NO KEY UPDATE;

  -- 2. The fence and the deliveries' new states. Only the results whose
  -- in_flight row still carries their lease token apply: a lease that ran out
  -- (reaped, or claimed again by another worker) changes nothing. An answer,
  -- or a failure in transport, spends one attempt; a retry is due
  -- retry_in_ms after now; a given-back delivery is due at once, with
  -- nothing spent and its last answer kept.
  WITH fenced AS (
    DELETE FROM in_flight f
     USING unnest(p_delivery_ids, p_lease_tokens, p_outcomes, p_retry_in_ms, p_statuses, p_errors) WITH ORDINALITY
           AS v (delivery_id, lease_token, outcome, retry_in_ms, status, error, at)
     WHERE f.delivery_id = v.delivery_id AND f.lease_token = v.lease_token
    RETURNING v.*
  ), updated AS (
    UPDATE deliveries d
       SET state = CASE x.outcome WHEN 'retry' THEN 'pending' WHEN 'given_back' THEN 'pending' ELSE x.outcome END,
           attempts = d.attempts + CASE WHEN x.outcome IN ('succeeded', 'retry', 'failed') THEN 1 ELSE 0 END,
           next_attempt_at = v_now + COALESCE(x.retry_in_ms, 0) * interval '1 millisecond',
           last_status = CASE WHEN x.outcome = 'given_back' THEN d.last_status ELSE x.status END,
           last_error = CASE WHEN x.outcome = 'given_back' THEN d.last_error ELSE x.error END,
           updated_at = v_now
      FROM fenced x
     WHERE d.id = x.delivery_id
  )
  SELECT COALESCE(array_agg(x.delivery_id ORDER BY x.at), '{}'), COALESCE(array_agg(x.at ORDER BY x.at), '{}')
    INTO applied, v_applied_at
    FROM fenced x;

  -- 3. The attempt rows of every request sent, fenced out or not (a late one
  -- was sent all the same). The account, endpoint and event come from the
  -- delivery. FOR KEY SHARE does what a foreign key would
  -- (docs/decisions/0008): a delivery being deleted with its endpoint is
  -- waited for, then left out.
  INSERT INTO attempts (id, account_id, endpoint_id, delivery_id, event_id, event_type, attempt_number, is_test,
                        started_at, duration_ms, status_code, outcome, error, signature, response_excerpt, url)
  SELECT v.id, d.account_id, d.endpoint_id, d.id, d.event_id, v.event_type, v.attempt_number, false,
         timestamptz 'epoch' + v.started_ms * interval '1 millisecond', v.duration_ms, v.status_code, v.outcome, v.error,
         v.signature, decode(v.response_excerpt, 'base64'), v.url
    FROM unnest(p_attempt_ids, p_attempt_deliveries, p_event_types, p_attempt_numbers, p_started_ms, p_duration_ms,
                p_status_codes, p_attempt_outcomes, p_attempt_errors, p_signatures, p_response_excerpts, p_urls)
         AS v (id, delivery_id, event_type, attempt_number, started_ms, duration_ms, status_code, outcome, error, signature, response_excerpt, url)
    JOIN deliveries d ON d.id = v.delivery_id
     FOR KEY SHARE OF d
  ON CONFLICT (id) DO NOTHING;

  -- 4. Each endpoint, from its applied results in completion order: the
  -- failure streak (a success restarts it, a failed delivery adds one),
  -- disabling at p_disable_after, and the slow-down after 429/503 answers.
  -- Only an endpoint with a failed or slowed-down result, or with a streak or
  -- a slow-down to undo, can change: the usual batch, all successes to
  -- healthy endpoints, loops over none.
  FOR ep IN
    SELECT e.id, e.enabled, e.failure_streak, e.throttle_limit FROM endpoints e
     WHERE e.id = ANY (ARRAY(SELECT p_endpoint_ids[a] FROM unnest(v_applied_at) a))
       AND (e.failure_streak > 0 OR e.throttle_limit IS NOT NULL
            OR EXISTS (SELECT 1 FROM unnest(v_applied_at) a
                        WHERE p_endpoint_ids[a] = e.id AND (p_outcomes[a] = 'failed' OR p_throttle_ms[a] IS NOT NULL)))
     ORDER BY e.id
  LOOP
    v_streak := ep.failure_streak;
    v_limit := ep.throttle_limit;
    v_throttle_ms := NULL;
    v_halved := false;
    v_last_error := NULL;
    FOR i IN SELECT a FROM unnest(v_applied_at) a WHERE p_endpoint_ids[a] = ep.id ORDER BY a LOOP
      -- Only receivers' answers count: a given-back or skipped delivery, or a
      -- retry still to come, leaves the streak as it is.
      IF p_outcomes[i] = 'succeeded' THEN
        v_streak := 0;
      ELSIF p_outcomes[i] = 'failed' THEN
        v_streak := v_streak + 1;
        v_last_error := p_errors[i];
      END IF;
      IF p_throttle_ms[i] IS NOT NULL THEN
        -- One batch's 429/503 answers are one congestion event (as in AIMD):
        -- the limit halves once for them, not once per answer (ten 429s from
        -- requests that were all in flight together would otherwise cut it
        -- 1,024-fold).
        v_throttle_ms := p_throttle_ms[i];
        IF NOT v_halved THEN
          v_limit := GREATEST(1, COALESCE(v_limit, p_endpoint_cap) / 2);
          v_halved := true;
        END IF;
      ELSIF p_statuses[i] BETWEEN 200 AND 299 AND v_limit IS NOT NULL THEN
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

  -- 5. A disabled endpoint receives nothing (herald_skip_pending above).
  IF cardinality(disabled) > 0 THEN
    PERFORM herald_skip_pending(disabled, v_now);
  END IF;
END
$$;
