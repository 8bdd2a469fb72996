-- In-flight work is a table of its own, and the claim caps it across all
-- workers.
--
-- A delivery is in flight iff it has a row in in_flight, which holds the
-- endpoint and origin it goes to, its fencing token and the end of its lease
-- on the database's clock. The table holds at most the sum of the
-- workers' concurrency, so counting it per endpoint and per origin is cheap,
-- and because one claim runs at a time (an advisory lock) the counts a claim
-- reads are exact: the per-endpoint and per-origin caps hold across every
-- worker, not per process.
--
-- deliveries.lease_token and lease_until go: a claim no longer writes the
-- delivery row at all, and a delivery's due time is just next_attempt_at.
-- Attempts are counted when an answer is recorded, not at claim time, so a
-- worker that dies mid-send spends none of the delivery's attempts and adds
-- nothing to its endpoint's failure streak. lost_attempts counts those lost
-- sends instead: after three the delivery fails, so a delivery that kills
-- every worker that sends it cannot kill them forever.
--
-- claim_id names the claim that added the row: a worker whose claim failed
-- on its side (a timeout) cannot know whether the claim committed on the
-- server (a frozen database that resumes runs it all the same), so once the
-- database answers again it gives that claim back: its rows go, with no loss
-- counted, instead of waiting out their lease and being reaped as lost sends
-- that no worker ever made. claims_given_back remembers the claims given
-- back, so that one the server has not yet run when the give-back comes
-- takes nothing when it does.
CREATE TABLE in_flight (
  delivery_id  uuid PRIMARY KEY,
  endpoint_id  uuid NOT NULL,
  origin       text NOT NULL,
  claim_id     uuid NOT NULL DEFAULT gen_random_uuid(),
  lease_token  bigint NOT NULL,
  lease_until  timestamptz NOT NULL
);

CREATE TABLE claims_given_back (
  claim_id       uuid PRIMARY KEY,
  given_back_at  timestamptz NOT NULL
);

ALTER TABLE deliveries ADD COLUMN lost_attempts integer NOT NULL DEFAULT 0;

-- The rate limiter's state (GCRA's theoretical arrival time) moves to a
-- table of its own, which only claims write. Kept on the endpoint's row, the
-- claim had to lock that row after locking the deliveries it took, while
-- disabling an endpoint (by hand, or by its failure streak) locks the row
-- first and then its pending deliveries: each held what the other waited
-- for. Claims take turns, so nothing else waits on these rows.
CREATE TABLE endpoint_rates (
  endpoint_id  uuid PRIMARY KEY,
  tat          timestamptz NOT NULL
);
INSERT INTO endpoint_rates (endpoint_id, tat) SELECT id, rate_tat FROM endpoints WHERE rate_tat IS NOT NULL;
ALTER TABLE endpoints DROP COLUMN rate_tat;

-- Deliveries leased by an older Herald come due when their lease would have
-- ended, as they read before.
UPDATE deliveries SET next_attempt_at = lease_until WHERE state = 'pending' AND lease_until > next_attempt_at;
ALTER TABLE deliveries DROP COLUMN lease_token;
ALTER TABLE deliveries DROP COLUMN lease_until;

DROP FUNCTION herald_claim(timestamptz, uuid[], int, int, uuid[], int[], int, int, timestamptz);

-- Ends leases that ran out (all of them with p_all: the embedded engine at
-- start-up, when no other process can hold one). Their worker is presumed
-- dead: the delivery stays pending, one more lost attempt is noted, and it
-- comes due 30 s, 60 s later (so a crash loop does not send the same oldest
-- deliveries again at once); the third loss fails it. None of this counts
-- as one of the delivery's attempts or toward the endpoint's failure streak:
-- no receiver answered. Returns the number of leases ended.
CREATE FUNCTION herald_reap_leases(p_now timestamptz, p_all boolean)
RETURNS integer
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
  v_now timestamptz := COALESCE(p_now, now());
  v_reaped integer;
BEGIN
  WITH lost AS (
    DELETE FROM in_flight f WHERE p_all OR f.lease_until <= v_now
    RETURNING f.delivery_id
  ), noted AS (
    UPDATE deliveries d
       SET lost_attempts = d.lost_attempts + 1,
           state = CASE WHEN d.lost_attempts + 1 >= 3 THEN 'failed' ELSE 'pending' END,
           next_attempt_at = CASE WHEN d.lost_attempts + 1 >= 3 THEN d.next_attempt_at
                                  ELSE v_now + interval '30 seconds' * 2 ^ d.lost_attempts END,
           last_error = CASE WHEN d.lost_attempts + 1 >= 3
             THEN 'stopped after 3 attempts that never finished: each time, the worker sending it stopped (crashed, was killed or lost the database) before the receiver answered'
             ELSE d.last_error END,
           updated_at = v_now
      FROM lost
     WHERE d.id = lost.delivery_id AND d.state = 'pending'
    RETURNING d.id
  )
  SELECT count(*) INTO v_reaped FROM lost;
  RETURN v_reaped;
END
$$;

-- Gives back a claim the worker never saw the answer to: deletes its
-- in_flight rows (the deliveries are due again as they were, with no loss
-- counted) and notes the claim, so that if the server runs it only now, it
-- takes nothing. Under the claims' lock: a claim still running is waited
-- for. Notes older than a day go: no claim waits that long to run.
CREATE FUNCTION herald_give_back_claim(p_claim_id uuid)
RETURNS integer
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
  v_given_back integer;
BEGIN
  PERFORM pg_advisory_xact_lock(104101114097108100);
  DELETE FROM claims_given_back WHERE given_back_at < now() - interval '1 day';
  INSERT INTO claims_given_back (claim_id, given_back_at) VALUES (p_claim_id, now()) ON CONFLICT (claim_id) DO NOTHING;
  DELETE FROM in_flight f WHERE f.claim_id = p_claim_id;
  GET DIAGNOSTICS v_given_back = ROW_COUNT;
  RETURN v_given_back;
END
$$;

-- The claim. p_now is NULL in production (the database's clock; tests pass
-- their own), p_lease_ms the lease, p_endpoint_cap and p_origin_cap the most
-- deliveries in flight to one endpoint and to one origin across all workers,
-- p_claim_id the claim's name (see claims_given_back above).
-- It always uses its generic plan, as the claim of migration 006 did (the
-- notes there say why): every access below is by key or in index order, so
-- the plan's shape does not depend on the values.
CREATE FUNCTION herald_claim(p_now timestamptz, p_limit int, p_lease_ms int, p_endpoint_cap int, p_origin_cap int, p_claim_id uuid DEFAULT NULL)
RETURNS TABLE (id uuid, account_id uuid, event_id uuid, endpoint_id uuid, attempt int, lease_token bigint, type text,
               body text, url text, origin text, secret_encrypted bytea, enabled boolean)
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

  PERFORM herald_reap_leases(v_now, false);

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
    -- flight to it; nothing while a 429/503 answer's Retry-After runs; and
    -- no more than its rate limit allows (GCRA: one second's worth of burst).
    SELECT ep.id AS endpoint_id, ep.origin, ep.rate_limit, rt.tat AS rate_tat, COALESCE(b.ids, '{}') AS in_flight_ids,
           CASE WHEN ep.throttled_until > v_now THEN 0
                ELSE GREATEST(0, LEAST(
                  LEAST(p_endpoint_cap, p_origin_cap, COALESCE(ep.throttle_limit, p_endpoint_cap)) - COALESCE(b.n, 0),
                  CASE WHEN ep.rate_limit IS NULL THEN p_limit
                       ELSE floor(extract(epoch FROM v_now + interval '1 second' - GREATEST(rt.tat, v_now)) * ep.rate_limit)::int
                  END))
           END AS room
      FROM waiting w
      JOIN endpoints ep ON ep.id = w.endpoint_id
      LEFT JOIN endpoint_rates rt ON rt.endpoint_id = ep.id
      LEFT JOIN busy b ON b.endpoint_id = ep.id
  ), origin_room AS (
    SELECT r.origin, p_origin_cap - COALESCE(ob.n, 0) AS room
      FROM (SELECT DISTINCT er.origin FROM endpoint_room er WHERE er.room > 0) r
      LEFT JOIN origin_busy ob ON ob.origin = r.origin
  ), candidates AS (
    -- Each endpoint's oldest due rows, up to its room, through
    -- deliveries_pending_by_endpoint, passing over those in flight: at most
    -- its cap of them, checked against its own short list, so the cost does
    -- not depend on how the planner judged in_flight's size when it made the
    -- generic plan (a join with in_flight, planned while the table was
    -- empty, scanned all of it once per row: a second per claim at 3,000 in
    -- flight). The endpoint is matched as a range, and the order
    -- names it, so that no plan can read deliveries_due instead and filter
    -- it by endpoint: that reads every due row ahead of the endpoint's, a
    -- whole backlog of another endpoint included. The row lock keeps a
    -- concurrent change of state (an endpoint being disabled skips its
    -- pending deliveries) from crossing the claim.
    SELECT c.id, c.next_attempt_at, er.endpoint_id, er.origin,
           row_number() OVER (PARTITION BY er.endpoint_id ORDER BY c.next_attempt_at, c.id) AS nth_of_endpoint
      FROM endpoint_room er
     CROSS JOIN LATERAL (
       SELECT d.id, d.next_attempt_at FROM deliveries d
        WHERE d.endpoint_id >= er.endpoint_id AND d.endpoint_id <= er.endpoint_id
          AND d.state = 'pending' AND d.next_attempt_at <= v_now
          AND d.id <> ALL (er.in_flight_ids)
        ORDER BY d.endpoint_id, d.next_attempt_at
        LIMIT er.room
        FOR NO KEY UPDATE SKIP LOCKED
     ) c
     WHERE er.room > 0
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
      FROM within_origin o JOIN origin_room r ON r.origin = o.origin
     WHERE o.nth_of_origin <= r.room
     ORDER BY o.nth_of_endpoint, o.next_attempt_at, o.id
     LIMIT p_limit
  ), rated AS (
    -- The rate limiter's state moves on by what was taken (in its own
    -- table: the endpoint's row is not locked, see endpoint_rates above).
    INSERT INTO endpoint_rates AS rt (endpoint_id, tat)
    SELECT er.endpoint_id, GREATEST(er.rate_tat, v_now) + t.n * interval '1 second' / er.rate_limit
      FROM (SELECT ch.endpoint_id, count(*)::int AS n FROM chosen ch GROUP BY ch.endpoint_id) t
      JOIN endpoint_room er ON er.endpoint_id = t.endpoint_id
     WHERE er.rate_limit IS NOT NULL
    ON CONFLICT (endpoint_id) DO UPDATE SET tat = EXCLUDED.tat
    RETURNING rt.endpoint_id
  ), leased AS (
    INSERT INTO in_flight (delivery_id, endpoint_id, origin, claim_id, lease_token, lease_until)
    SELECT ch.id, ch.endpoint_id, ch.origin, COALESCE(p_claim_id, gen_random_uuid()), nextval('delivery_lease_token'), v_now + p_lease_ms * interval '1 millisecond'
      FROM chosen ch
    RETURNING in_flight.delivery_id, in_flight.lease_token
  ), numbered AS (
    SELECT d.id, d.account_id, d.event_id, d.endpoint_id, d.attempts + 1 AS attempt, l.lease_token,
           row_number() OVER (PARTITION BY d.account_id, d.event_id) AS nth_of_event
      FROM leased l JOIN deliveries d ON d.id = l.delivery_id
  )
  -- Each event's body once per claim, on its first delivery (migration 011).
  SELECT n.id, n.account_id, n.event_id, n.endpoint_id, n.attempt, n.lease_token, e.type,
         CASE WHEN n.nth_of_event = 1 THEN convert_from(e.body, 'UTF8') END,
         ep.url, ep.origin, ep.secret_encrypted, ep.enabled
    FROM numbered n
    JOIN events e ON e.account_id = n.account_id AND e.id = n.event_id
    JOIN endpoints ep ON ep.id = n.endpoint_id;
END
$$;
