-- Herald's first schema. PostgreSQL 15 features only: PGlite runs a newer
-- server, production PostgreSQL may be 15.

CREATE TABLE accounts (
  id          uuid PRIMARY KEY,
  name        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

-- An API key is shown once. Only its SHA-256 is stored, beside a visible
-- prefix used to find the row and to let people tell keys apart.
CREATE TABLE api_keys (
  id            uuid PRIMARY KEY,
  account_id    uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  name          text NOT NULL,
  prefix        text NOT NULL UNIQUE,
  secret_hash   bytea NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  revoked_at    timestamptz
);
CREATE INDEX api_keys_account ON api_keys (account_id, created_at);

-- The catalog of event types, shared by all accounts; operators add types.
CREATE TABLE event_types (
  name         text PRIMARY KEY,
  description  text NOT NULL DEFAULT '',
  schema       jsonb NOT NULL,
  example      jsonb,
  builtin      boolean NOT NULL DEFAULT false,
  created_at   timestamptz NOT NULL DEFAULT now()
);

-- The signing secret is stored encrypted (AES-256-GCM under the operator key,
-- the endpoint id as associated data); secret_hint is the masked form shown
-- after the one reveal.
CREATE TABLE endpoints (
  id                uuid PRIMARY KEY,
  account_id        uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  url               text NOT NULL,
  description       text NOT NULL DEFAULT '',
  event_types       text[] NOT NULL,
  enabled           boolean NOT NULL DEFAULT true,
  disabled_reason   text,
  disabled_at       timestamptz,
  failure_streak    integer NOT NULL DEFAULT 0,
  secret_encrypted  bytea NOT NULL,
  secret_hint       text NOT NULL,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX endpoints_account ON endpoints (account_id, created_at, id);

-- body holds the envelope bytes exactly as every endpoint receives them;
-- request_hash identifies the producer's (type, data) for idempotent ingest.
CREATE TABLE events (
  account_id    uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  id            uuid NOT NULL,
  type          text NOT NULL REFERENCES event_types (name),
  created_at    timestamptz NOT NULL,
  body          bytea NOT NULL,
  request_hash  bytea NOT NULL,
  PRIMARY KEY (account_id, id)
);
CREATE INDEX events_account_created ON events (account_id, created_at DESC, id DESC);

-- The delivery queue: one event to one endpoint, with all its attempts.
-- A claimed delivery stays 'pending' with next_attempt_at pushed out by the
-- lease (a visibility timeout) and a fresh lease_token (the fencing token):
-- a crashed worker's deliveries come due again when the lease runs out, and
-- a late worker's result is ignored because its token no longer matches.
CREATE SEQUENCE delivery_lease_token;
CREATE TABLE deliveries (
  id               uuid PRIMARY KEY,
  account_id       uuid NOT NULL,
  event_id         uuid NOT NULL,
  endpoint_id      uuid NOT NULL REFERENCES endpoints (id) ON DELETE CASCADE,
  state            text NOT NULL CHECK (state IN ('pending', 'succeeded', 'failed', 'skipped')),
  attempts         integer NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz NOT NULL,
  lease_token      bigint,
  last_status      integer,
  last_error       text,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL,
  FOREIGN KEY (account_id, event_id) REFERENCES events (account_id, id) ON DELETE CASCADE
);
CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX deliveries_endpoint ON deliveries (endpoint_id, created_at);
CREATE INDEX deliveries_event ON deliveries (account_id, event_id);

-- One HTTP request. id is the X-Service-Delivery-ID that was sent. Test
-- sends have no delivery and keep their own body.
CREATE TABLE attempts (
  id                uuid PRIMARY KEY,
  account_id        uuid NOT NULL,
  endpoint_id       uuid NOT NULL REFERENCES endpoints (id) ON DELETE CASCADE,
  delivery_id       uuid REFERENCES deliveries (id) ON DELETE CASCADE,
  event_id          uuid NOT NULL,
  event_type        text NOT NULL,
  attempt_number    integer NOT NULL,
  is_test           boolean NOT NULL DEFAULT false,
  started_at        timestamptz NOT NULL,
  duration_ms       integer NOT NULL,
  status_code       integer,
  outcome           text NOT NULL CHECK (outcome IN ('succeeded', 'retrying', 'failed')),
  error             text,
  request_headers   jsonb NOT NULL,
  response_excerpt  bytea,
  test_body         bytea
);
CREATE INDEX attempts_endpoint_recent ON attempts (endpoint_id, started_at DESC);
CREATE INDEX attempts_delivery ON attempts (delivery_id);
