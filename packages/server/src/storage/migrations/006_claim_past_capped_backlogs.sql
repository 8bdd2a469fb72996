-- Each endpoint's pending deliveries in due order. A claim reads the oldest
-- due rows through deliveries_due and leaves out endpoints already at their
-- concurrency cap. When such an endpoint has a large backlog (it hangs, and
-- events keep coming), the oldest rows are all its own: the claim used to
-- read the whole backlog to find another endpoint's rows behind it (8 ms per
-- claim at 100,000 rows, growing with the backlog). With this index it reads
-- a bounded head, then finds the other endpoints' due rows by key: one index
-- descent per endpoint with pending work, and each endpoint's rows in order.
-- It costs an index entry per insert and per claim.
-- Building it holds writes to deliveries until it is done (seconds per
-- million rows). On a large table, build it beforehand without that pause:
--   CREATE INDEX CONCURRENTLY IF NOT EXISTS deliveries_pending_by_endpoint
--     ON deliveries (endpoint_id, next_attempt_at) WHERE state = 'pending';
CREATE INDEX IF NOT EXISTS deliveries_pending_by_endpoint ON deliveries (endpoint_id, next_attempt_at) WHERE state = 'pending';

-- The claim (storage/queries/claim-deliveries.ts calls it; the comments
-- there say what it does). A function for one reason: SET plan_cache_mode.
-- PostgreSQL plans a prepared statement five times with its parameters,
-- then keeps a generic plan if that looks no dearer. After a burst this
-- statement's generic plan looked dearer than the custom ones, so it was
-- planned anew on every call: half a millisecond each, a third of the
-- database's time per event at a steady 1,000 events/s. The plan's shape
-- is set by how the statement is written (every access is by key or in
-- index order), and the generic plan is what the claim ran on before this
-- migration too, once PostgreSQL had settled on it.
--
-- Notes on the statement:
-- - head: the oldest due rows, whatever their endpoint; open: those of
--   endpoints with room.
-- - waiting and behind run only when the head was full and can give fewer
--   rows than asked for, counting each endpoint's rows up to its room
--   (endpoints at or near their cap held most of it): the conditions on the
--   head are a one-time filter, checked before either starts, and the
--   second is computed only when the first holds. waiting is a skip scan
--   over deliveries_pending_by_endpoint (PostgreSQL has none of its own): one index descent per endpoint with
--   pending deliveries, which also yields its earliest next_attempt_at.
--   behind takes each other endpoint's due rows from the head's last due
--   time on (the head may end partway through the rows of one due time;
--   UNION drops those found twice). The endpoint is matched as a range,
--   not with =, and the order names it: only deliveries_pending_by_endpoint
--   gives that order. With = the order reduces to next_attempt_at, and the
--   planner, which assumes each endpoint's rows are spread evenly, read
--   deliveries_due in order instead, filtering out the whole capped backlog
--   (100,000 rows to find 10) before it reached this endpoint's rows.
-- - chosen walks the candidates in order and locks each by its key,
--   skipping rows another worker holds; the walk stops at the limit, so it
--   locks the rows taken, plus any it finds claimed meanwhile (held until
--   the statement ends). The conditions are checked on the version locked,
--   which is the newest. A lateral key lookup, not a join: a generic plan
--   costed on a table that was small when it was made joined the
--   candidates to an index scan of every due row, in a nested loop that
--   grew with the square of the backlog (88 ms per claim at 620 due).
-- - The body comes as text (it is UTF-8 JSON): half the bytes of bytea's
--   hex form on the wire, and no hex to decode on either side.
CREATE FUNCTION herald_claim(
  p_now timestamptz, p_busy uuid[], p_scan int, p_cap int, p_in_flight_ids uuid[], p_in_flight_counts int[],
  p_limit int, p_max_attempts int, p_lease_until timestamptz)
RETURNS TABLE (id uuid, account_id uuid, event_id uuid, endpoint_id uuid, attempts int, attempts_before int,
               lease_token bigint, type text, body text, url text, secret_encrypted bytea, enabled boolean)
LANGUAGE plpgsql VOLATILE ROWS 64
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  WITH RECURSIVE head AS MATERIALIZED (
    SELECT d.id, d.endpoint_id, d.next_attempt_at FROM deliveries d
     WHERE d.state = 'pending' AND d.next_attempt_at <= p_now
     ORDER BY d.next_attempt_at
     LIMIT p_scan
  ), open AS MATERIALIZED (
    SELECT h.id, h.endpoint_id, h.next_attempt_at FROM head h WHERE NOT (h.endpoint_id = ANY (p_busy))
  ), waiting (endpoint_id, first_due) AS (
    (SELECT d.endpoint_id, d.next_attempt_at FROM deliveries d WHERE d.state = 'pending' ORDER BY d.endpoint_id, d.next_attempt_at LIMIT 1)
    UNION ALL
    SELECT n.endpoint_id, n.next_attempt_at
      FROM waiting w CROSS JOIN LATERAL (
        SELECT d.endpoint_id, d.next_attempt_at FROM deliveries d
         WHERE d.state = 'pending' AND d.endpoint_id > w.endpoint_id
         ORDER BY d.endpoint_id, d.next_attempt_at LIMIT 1
      ) n
  ), behind AS (
    SELECT b.id, b.endpoint_id, b.next_attempt_at
      FROM waiting w CROSS JOIN LATERAL (
        SELECT d.id, d.endpoint_id, d.next_attempt_at FROM deliveries d
         WHERE d.endpoint_id >= w.endpoint_id AND d.endpoint_id <= w.endpoint_id
           AND d.state = 'pending' AND d.next_attempt_at <= p_now
           AND d.next_attempt_at >= (SELECT max(h.next_attempt_at) FROM head h)
         ORDER BY d.endpoint_id, d.next_attempt_at
         LIMIT LEAST(p_cap, p_limit)
      ) b
     WHERE w.first_due <= p_now AND NOT (w.endpoint_id = ANY (p_busy))
       AND (SELECT count(*) FROM head) >= p_scan
       AND (SELECT COALESCE(sum(LEAST(g.n, p_cap - COALESCE(f.n, 0))), 0)
              FROM (SELECT o.endpoint_id, count(*) AS n FROM open o GROUP BY o.endpoint_id) g
              LEFT JOIN unnest(p_in_flight_ids, p_in_flight_counts) AS f (endpoint_id, n) ON f.endpoint_id = g.endpoint_id) < p_limit
  ), due AS (
    SELECT o.id, o.endpoint_id, o.next_attempt_at FROM open o
    UNION
    SELECT b.id, b.endpoint_id, b.next_attempt_at FROM behind b
  ), ranked AS (
    SELECT due.id, due.next_attempt_at,
           row_number() OVER (PARTITION BY due.endpoint_id ORDER BY due.next_attempt_at) AS rn,
           p_cap - COALESCE(busy.n, 0) AS room
      FROM due LEFT JOIN unnest(p_in_flight_ids, p_in_flight_counts) AS busy (endpoint_id, n) ON busy.endpoint_id = due.endpoint_id
  ), chosen AS MATERIALIZED (
    SELECT l.id, l.attempts AS attempts_before
      FROM (SELECT r.id, r.rn, r.next_attempt_at FROM ranked r WHERE r.rn <= r.room ORDER BY r.rn, r.next_attempt_at) r
     CROSS JOIN LATERAL (
       SELECT d.id, d.attempts, d.state, d.next_attempt_at FROM deliveries d WHERE d.id = r.id
       OFFSET 0 FOR UPDATE SKIP LOCKED
     ) l
     WHERE l.state = 'pending' AND l.next_attempt_at <= p_now
     LIMIT p_limit
  ), claimed AS (
    UPDATE deliveries d
       SET attempts = LEAST(d.attempts + 1, p_max_attempts), lease_token = nextval('delivery_lease_token'),
           next_attempt_at = p_lease_until, updated_at = p_now
      FROM chosen, events e, endpoints ep
     WHERE d.id = chosen.id AND e.account_id = d.account_id AND e.id = d.event_id AND ep.id = d.endpoint_id
     RETURNING d.id, d.account_id, d.event_id, d.endpoint_id, d.attempts, chosen.attempts_before, d.lease_token,
               e.type, convert_from(e.body, 'UTF8') AS body, ep.url, ep.secret_encrypted, ep.enabled
  )
  SELECT * FROM claimed;
END
$$;
