-- A claim that writes no index entry.
--
-- The claim marked a lease by moving next_attempt_at to the lease's end.
-- next_attempt_at is indexed (deliveries_due, deliveries_pending_by_endpoint),
-- so every claim was a non-HOT update: a new entry in each of the table's
-- five indexes, and three of them (the key, the event's, the endpoint's)
-- then held two versions of the same key, which bottom-up deletion had to
-- clear. Together that was 6 % of the whole machine in the benchmark's burst.
--
-- The lease now has a column of its own, lease_until, which no index covers:
-- a leased delivery keeps the next_attempt_at it was claimed at, and a claim
-- passes over rows whose lease has not run out. The claim changes only
-- columns no index covers, so PostgreSQL can write the new version on the
-- same page without index entries (a HOT update) when the page has room;
-- fillfactor 80 leaves that room on the pages written from now on (pages
-- already written keep theirs until a VACUUM FULL or a rewrite).
--
-- What reads see is unchanged: the due time of a leased delivery is the end
-- of its lease, GREATEST(next_attempt_at, lease_until), as before. Rows
-- leased before this migration have next_attempt_at at their lease's end and
-- no lease_until, which reads the same and comes due at the same time.
ALTER TABLE deliveries ADD COLUMN lease_until timestamptz;
ALTER TABLE deliveries SET (fillfactor = 80);

-- herald_claim as in migration 006 (the notes on how it is written are
-- there), but for the lease: head and behind leave out rows whose lease has
-- not run out (a filter on the row, after the index; the rows passed over
-- are at most those in flight), chosen checks it again on the locked
-- version, and claimed sets lease_until instead of next_attempt_at.
-- The check in chosen must stay: it alone stops a double claim when another
-- worker's claim commits between this claim's reading of the head and its
-- lock (next_attempt_at no longer moves, so the due check would pass). No
-- test can put a second claim inside the first statement, so none shows it.
CREATE OR REPLACE FUNCTION herald_claim(
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
     WHERE d.state = 'pending' AND d.next_attempt_at <= p_now AND (d.lease_until IS NULL OR d.lease_until <= p_now)
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
           AND d.state = 'pending' AND d.next_attempt_at <= p_now AND (d.lease_until IS NULL OR d.lease_until <= p_now)
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
       SELECT d.id, d.attempts, d.state, d.next_attempt_at, d.lease_until FROM deliveries d WHERE d.id = r.id
       OFFSET 0 FOR UPDATE SKIP LOCKED
     ) l
     WHERE l.state = 'pending' AND l.next_attempt_at <= p_now AND (l.lease_until IS NULL OR l.lease_until <= p_now)
     LIMIT p_limit
  ), claimed AS (
    UPDATE deliveries d
       SET attempts = LEAST(d.attempts + 1, p_max_attempts), lease_token = nextval('delivery_lease_token'),
           lease_until = p_lease_until, updated_at = p_now
      FROM chosen, events e, endpoints ep
     WHERE d.id = chosen.id AND e.account_id = d.account_id AND e.id = d.event_id AND ep.id = d.endpoint_id
     RETURNING d.id, d.account_id, d.event_id, d.endpoint_id, d.attempts, chosen.attempts_before, d.lease_token,
               e.type, convert_from(e.body, 'UTF8') AS body, ep.url, ep.secret_encrypted, ep.enabled
  )
  SELECT * FROM claimed;
END
$$;
