-- How an endpoint's requests are signed, and a rotated secret that stays
-- valid for a while.
--
-- signature_scheme: 'herald' (the X-Service-* headers) or
-- 'standard-webhooks' (webhook-id, webhook-timestamp, webhook-signature).
-- The secret's form follows the scheme, so changing the scheme replaces the
-- secret.
--
-- previous_secret_encrypted: after a rotation with an overlap, the secret
-- that was replaced, encrypted like secret_encrypted (AES-256-GCM under the
-- operator key, bound to the endpoint's id). Every request signs with it
-- too until previous_secret_until; after that it is erased (set to NULL) by
-- the first attempt that finds it expired, and by the maintainer's sweep.
-- Both are NULL, or neither.
ALTER TABLE endpoints ADD COLUMN signature_scheme text NOT NULL DEFAULT 'herald'
  CONSTRAINT endpoints_signature_scheme_known CHECK (signature_scheme IN ('herald', 'standard-webhooks'));
ALTER TABLE endpoints ADD COLUMN previous_secret_encrypted bytea;
ALTER TABLE endpoints ADD COLUMN previous_secret_until timestamptz;
ALTER TABLE endpoints ADD CONSTRAINT endpoints_previous_secret_whole
  CHECK ((previous_secret_encrypted IS NULL) = (previous_secret_until IS NULL));

-- The maintainer's sweep finds expired ones without reading every endpoint.
CREATE INDEX endpoints_previous_secret_until ON endpoints (previous_secret_until) WHERE previous_secret_until IS NOT NULL;
