-- Who disabled an endpoint by hand, so that the panel and the API can say it
-- instead of blaming Herald.
--
-- disabled_by is NULL while the endpoint is enabled and when Herald disabled
-- it by itself after too many consecutive failed deliveries (the dispatcher's
-- hot path leaves it alone). A disable by hand sets it to 'user' (a panel
-- user) or 'api_key', with disabled_by_id and disabled_by_name naming which
-- one as it was then (the user or key may be gone later). Endpoints disabled
-- by hand before this migration get 'manual': by hand, by someone unknown.
ALTER TABLE endpoints ADD COLUMN disabled_by text CHECK (disabled_by IN ('user', 'api_key', 'portal', 'manual'));
ALTER TABLE endpoints ADD COLUMN disabled_by_id uuid;
ALTER TABLE endpoints ADD COLUMN disabled_by_name text;
UPDATE endpoints SET disabled_by = 'manual'
 WHERE NOT enabled AND disabled_reason IS NOT NULL AND disabled_reason NOT LIKE '% consecutive failed deliveries;%';
