-- The management API.

-- Idempotency-Key: the first response to a mutating request, replayed for
-- the same key. The response is stored encrypted (AES-256-GCM under the
-- operator key), because some carry a secret shown once (a new endpoint's
-- signing secret, a new API key). request_hash covers method, path and body,
-- so a key reused for another request is refused. Rows older than a day are
-- pruned.
CREATE TABLE idempotency_keys (
  account_id          uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  key                 text NOT NULL,
  request_hash        bytea NOT NULL,
  status_code         integer,
  response_encrypted  bytea,
  created_at          timestamptz NOT NULL,
  PRIMARY KEY (account_id, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

-- Listing events by type, newest first.
CREATE INDEX events_account_type_created ON events (account_id, type, created_at DESC, id DESC);

-- Recovery selects an endpoint's skipped and failed deliveries since a time.
CREATE INDEX deliveries_endpoint_state ON deliveries (endpoint_id, state, created_at);

-- The address an attempt went to, so its detail stays true after the
-- endpoint's address changes (null for attempts recorded before this).
ALTER TABLE attempts ADD COLUMN url text;
