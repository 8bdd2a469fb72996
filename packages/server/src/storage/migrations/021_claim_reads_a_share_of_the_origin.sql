-- Each endpoint reads no more than twice its share of its origin's room.
--
-- Migration 020 bounded an endpoint's candidates by its origin's room, but
-- every endpoint behind the origin read that much: ten endpoints on one
-- origin with room for 48 requests read 480 rows, which the claim then
-- sorted twice to hand the room out in turns. That sorting was half of what
-- a claim cost when many endpoints share one origin (a Zapier, a Slack).
-- Now an endpoint reads at most twice its share (the origin's room divided
-- among its endpoints that have room and a due row not yet in flight): the
-- turns need no more while the endpoints have due rows alike, and the margin
-- lets one with more take up what another lacks. When they are very uneven
-- a claim may take less than the origin's room; the next claim, in which the
-- endpoints with nothing more to send take no share, takes the rest.

DROP FUNCTION herald_claim(timestamptz, int, int, int, int, uuid);

CREATE FUNCTION herald_claim(p_now timestamptz, p_limit int, p_lease_ms int, p_endpoint_cap int, p_origin_cap int, p_claim_id uuid DEFAULT NULL)
RETURNS TABLE (id uuid, account_id uuid, event_id uuid, endpoint_id uuid, attempt int, lease_token bigint, type text,
               body text, url text, origin text, secret_encrypted bytea, enabled boolean, headers text,
               signature_scheme text, previous_secret_encrypted bytea, previous_secret_until timestamptz)
LANGUAGE plpgsql VOLATILE ROWS 64
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
  v_now timestamptz := COALESCE(p_now, now());
BEGIN
  -- One claim at a time, from every worker (the number is Herald's own:
  -- "herald" in ASCII). The counts of in_flight below are then exact, and
  -- held until this transaction commits the rows it adds.
  PERFORM pg_advisory_xact_lock(104101114097108100);

  -- Given back before the server ran it: its worker has moved on.
  IF EXISTS (SELECT 1 FROM claims_given_back g WHERE g.claim_id = p_claim_id) THEN
    RETURN;
  END IF;

  -- Leases that ran out are reaped, when there are any: most claims find
  -- none, and a look at in_flight (a few hundred rows at most) costs less
  -- than running the reap's delete and update for nothing.
  IF EXISTS (SELECT 1 FROM in_flight f WHERE f.lease_until <= v_now) THEN
    PERFORM herald_reap_leases(v_now, false);
  END IF;

  RETURN QUERY
  WITH RECURSIVE waiting (endpoint_id) AS (
    -- Every endpoint with pending work, one index probe each (a loose index
    -- scan over deliveries_pending_by_endpoint): an endpoint at its cap with
    -- a long backlog costs one probe, and cannot hide the others' due rows.
    -- The order names next_attempt_at so that only that partial index serves
    -- it: through deliveries_endpoint_state a probe would walk past every
    -- finished delivery of an endpoint with nothing pending.
    (SELECT d.endpoint_id FROM deliveries d WHERE d.state = 'pending' ORDER BY d.endpoint_id, d.next_attempt_at LIMIT 1)
    UNION ALL
    SELECT n.endpoint_id
      FROM waiting w CROSS JOIN LATERAL (
        SELECT d.endpoint_id FROM deliveries d
         WHERE d.state = 'pending' AND d.endpoint_id > w.endpoint_id
         ORDER BY d.endpoint_id, d.next_attempt_at LIMIT 1
      ) n
  ), busy AS (
    -- What each endpoint has in flight, counted and listed (at most its cap).
    SELECT f.endpoint_id, count(*)::int AS n, array_agg(f.delivery_id) AS ids FROM in_flight f GROUP BY f.endpoint_id
  ), origin_busy AS (
    SELECT f.origin, count(*)::int AS n FROM in_flight f GROUP BY f.origin
  ), endpoint_room AS MATERIALIZED (
    -- What each endpoint may take now: its cap (the smaller of the endpoint
    -- and origin caps, lowered while it is slowed down) less what is in
    -- flight to it, and no more than its origin has room for; nothing while
    -- a 429/503 answer's Retry-After runs; and no more than its rate limit
    -- allows (GCRA: one second's worth of burst).
    SELECT ep.id AS endpoint_id, ep.origin, ep.rate_limit, rt.tat AS rate_tat, COALESCE(b.ids, '{}') AS in_flight_ids,
           p_origin_cap - COALESCE(ob.n, 0) AS origin_room,
           CASE WHEN ep.throttled_until > v_now THEN 0
                ELSE GREATEST(0, LEAST(
                  LEAST(p_endpoint_cap, p_origin_cap, COALESCE(ep.throttle_limit, p_endpoint_cap)) - COALESCE(b.n, 0),
                  p_origin_cap - COALESCE(ob.n, 0),
                  CASE WHEN ep.rate_limit IS NULL THEN p_limit
                       ELSE floor(extract(epoch FROM v_now + interval '1 second' - GREATEST(rt.tat, v_now)) * ep.rate_limit)::int
                  END))
           END AS room
      FROM waiting w
      JOIN endpoints ep ON ep.id = w.endpoint_id
      LEFT JOIN endpoint_rates rt ON rt.endpoint_id = ep.id
      LEFT JOIN busy b ON b.endpoint_id = ep.id
      LEFT JOIN origin_busy ob ON ob.origin = ep.origin
  ), endpoint_reads AS MATERIALIZED (
    -- How many due rows each endpoint reads: its room, and no more than
    -- twice its share of its origin's room, shared among the origin's
    -- endpoints that have room and a due row not in flight (one index probe
    -- each): an endpoint whose every due row is in flight already takes no
    -- share, so one with a backlog behind an origin of many quiet endpoints
    -- still fills the origin's room.
    SELECT er.*, LEAST(er.room, 2 * ceil(er.origin_room::numeric / count(*) OVER (PARTITION BY er.origin))::int) AS reads
      FROM endpoint_room er
     WHERE er.room > 0
       AND EXISTS (
         SELECT 1 FROM deliveries d
          WHERE d.endpoint_id >= er.endpoint_id AND d.endpoint_id <= er.endpoint_id
            AND d.state = 'pending' AND d.next_attempt_at <= v_now
            AND d.id <> ALL (er.in_flight_ids)
       )
  ), candidates AS (
    -- Each endpoint's oldest due rows, up to what it reads, through
    -- deliveries_pending_by_endpoint, passing over those in flight: at most
    -- its cap of them, checked against its own short list, so the cost does
    -- not depend on how the planner judged in_flight's size when it made the
    -- generic plan (a join with in_flight, planned while the table was
    -- empty, scanned all of it once per row: a second per claim at 3,000 in
    -- flight). The endpoint is matched as a range, and the order
    -- names it, so that no plan can read deliveries_due instead and filter
    -- it by endpoint: that reads every due row ahead of the endpoint's, a
    -- whole backlog of another endpoint included. Read without locks: only
    -- the rows chosen below are locked.
    SELECT c.id, c.next_attempt_at, er.endpoint_id, er.origin, er.origin_room,
           row_number() OVER (PARTITION BY er.endpoint_id ORDER BY c.next_attempt_at, c.id) AS nth_of_endpoint
      FROM endpoint_reads er
     CROSS JOIN LATERAL (
       SELECT d.id, d.next_attempt_at FROM deliveries d
        WHERE d.endpoint_id >= er.endpoint_id AND d.endpoint_id <= er.endpoint_id
          AND d.state = 'pending' AND d.next_attempt_at <= v_now
          AND d.id <> ALL (er.in_flight_ids)
        ORDER BY d.endpoint_id, d.next_attempt_at
        LIMIT er.reads
     ) c
  ), within_origin AS (
    -- An origin's room goes to its endpoints in turns (each one's oldest due
    -- row, then each one's second, …), each turn oldest first: strictly by
    -- due time, an endpoint with an old backlog took all of the origin's room
    -- at every claim, and the others behind the same origin waited for the
    -- whole backlog to clear.
    SELECT c.*, row_number() OVER (PARTITION BY c.origin ORDER BY c.nth_of_endpoint, c.next_attempt_at, c.id) AS nth_of_origin
      FROM candidates c
  ), chosen AS MATERIALIZED (
    -- Across endpoints, in turns: every endpoint's first row, then every
    -- second row, …, each turn oldest first, up to the claim's limit.
    SELECT o.id, o.endpoint_id, o.origin
      FROM within_origin o
     WHERE o.nth_of_origin <= o.origin_room
     ORDER BY o.nth_of_endpoint, o.next_attempt_at, o.id
     LIMIT p_limit
  ), taken AS MATERIALIZED (
    -- The chosen rows, locked: the lock keeps a concurrent change of state
    -- (an endpoint being disabled skips its pending deliveries) from
    -- crossing the claim. A row locked by such a change is passed over, and
    -- one it changed is no longer pending.
    SELECT ch.id, ch.endpoint_id, ch.origin
      FROM chosen ch JOIN deliveries d ON d.id = ch.id
     WHERE d.state = 'pending'
       FOR NO KEY UPDATE OF d SKIP LOCKED
  ), rated AS (
    -- The rate limiter's state moves on by what was taken (in its own
    -- table: the endpoint's row is not locked, see migration 013).
    INSERT INTO endpoint_rates AS rt (endpoint_id, tat)
    SELECT er.endpoint_id, GREATEST(er.rate_tat, v_now) + t.n * interval '1 second' / er.rate_limit
      FROM (SELECT tk.endpoint_id, count(*)::int AS n FROM taken tk GROUP BY tk.endpoint_id) t
      JOIN endpoint_room er ON er.endpoint_id = t.endpoint_id
     WHERE er.rate_limit IS NOT NULL
    ON CONFLICT (endpoint_id) DO UPDATE SET tat = EXCLUDED.tat
    RETURNING rt.endpoint_id
  ), leased AS (
    INSERT INTO in_flight (delivery_id, endpoint_id, origin, claim_id, lease_token, lease_until)
    SELECT ch.id, ch.endpoint_id, ch.origin, COALESCE(p_claim_id, gen_random_uuid()), nextval('delivery_lease_token'), v_now + p_lease_ms * interval '1 millisecond'
      FROM taken ch
    RETURNING in_flight.delivery_id, in_flight.lease_token
  ), numbered AS (
    SELECT d.id, d.account_id, d.event_id, d.endpoint_id, d.attempts + 1 AS attempt, l.lease_token,
           row_number() OVER (PARTITION BY d.account_id, d.event_id) AS nth_of_event
      FROM leased l JOIN deliveries d ON d.id = l.delivery_id
  )
  -- Each event's body once per claim, on its first delivery (migration 011).
  SELECT n.id, n.account_id, n.event_id, n.endpoint_id, n.attempt, n.lease_token, e.type,
         CASE WHEN n.nth_of_event = 1 THEN convert_from(e.body, 'UTF8') END,
         ep.url, ep.origin, ep.secret_encrypted, ep.enabled, ep.headers::text,
         ep.signature_scheme, ep.previous_secret_encrypted, ep.previous_secret_until
    FROM numbered n
    JOIN events e ON e.account_id = n.account_id AND e.id = n.event_id
    JOIN endpoints ep ON ep.id = n.endpoint_id;
END
$$;
