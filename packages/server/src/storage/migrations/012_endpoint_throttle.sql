-- What the scheduler needs to know of each endpoint besides its address.
--
-- origin: scheme, host and port, as the URL standard writes an origin
-- (lower case, default port left out). Endpoints that share an origin share
-- its connections, so in-flight requests are capped per origin as well as
-- per endpoint. Herald sets it whenever it writes the URL; the rows already
-- there get it here.
--
-- rate_limit: the most requests per second Herald sends to the endpoint,
-- set by its owner (NULL: no limit but the in-flight caps). rate_tat is the
-- limiter's state (the "theoretical arrival time" of the generic cell rate
-- algorithm): the time at which the endpoint's budget is fully spent.
--
-- throttled_until and throttle_limit are the automatic slow-down: after a
-- 429 or 503 answer no new request starts before throttled_until (the
-- answer's Retry-After, or a default), and at most throttle_limit requests
-- are in flight to the endpoint until it answers 2xx again (NULL: not
-- slowed down).
ALTER TABLE endpoints ADD COLUMN origin text;
UPDATE endpoints
   SET origin = regexp_replace(lower(substring(url FROM '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*')), '^(https://[^/]*):443$', '\1');
ALTER TABLE endpoints ALTER COLUMN origin SET NOT NULL;
ALTER TABLE endpoints ADD COLUMN rate_limit integer CHECK (rate_limit > 0);
ALTER TABLE endpoints ADD COLUMN rate_tat timestamptz;
ALTER TABLE endpoints ADD COLUMN throttled_until timestamptz;
ALTER TABLE endpoints ADD COLUMN throttle_limit integer CHECK (throttle_limit > 0);
