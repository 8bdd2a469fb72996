-- The claim returns each event's body once, not once per delivery.
--
-- One 1 MiB event to 2,000 endpoints came back from each claim of 500
-- deliveries as 500 copies of its body: PostgreSQL read it from TOAST and
-- sent it 500 times, and the worker parsed 500 strings and made 500 Buffers
-- of them (from 182 MiB to 1.16 GiB, with the event loop busy for seconds).
-- Now the first row of each event in a claim carries the body and the
-- others carry NULL; the worker gives every delivery of the event the same
-- Buffer (storage/queries/claim-deliveries.ts). What a claim holds is its
-- distinct events' bodies, whatever their fan-out.
--
-- herald_claim is as in migration 008 but for its last step: the update no
-- longer returns the body, and the rows it returns are numbered per event;
-- the first of each reads its event's body. The result's columns are the
-- same, so callers of the old version still read a body, or NULL.
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
               e.type, ep.url, ep.secret_encrypted, ep.enabled
  ), numbered AS (
    SELECT c.*, row_number() OVER (PARTITION BY c.account_id, c.event_id) AS nth FROM claimed c
  )
  SELECT n.id, n.account_id, n.event_id, n.endpoint_id, n.attempts, n.attempts_before, n.lease_token, n.type,
         CASE WHEN n.nth = 1 THEN
           (SELECT convert_from(e.body, 'UTF8') FROM events e WHERE e.account_id = n.account_id AND e.id = n.event_id)
         END,
         n.url, n.secret_encrypted, n.enabled
    FROM numbered n;
END
$$;
