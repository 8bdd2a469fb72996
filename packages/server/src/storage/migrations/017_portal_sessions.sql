-- Portal sessions: the control panel embedded in another site's page, for
-- one account, opened by a one-time link.
--
-- A row starts as a link: link_hash is the SHA-256 of the token in the link
-- (the token itself is never stored), valid until link_expires_at. Opening
-- the link sets token_hash (the SHA-256 of the session's own token, which
-- the panel holds in memory), opened_at and the session's expires_at, in one
-- statement that matches only an unopened link: a link opens once.
-- Before the link is opened, expires_at is the link's expiry.
CREATE TABLE portal_sessions (
  id               uuid PRIMARY KEY,
  account_id       uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  link_hash        bytea NOT NULL UNIQUE,
  token_hash       bytea UNIQUE,
  read_only        boolean NOT NULL,
  -- The origins allowed to frame the panel: each exactly scheme://host[:port].
  allowed_origins  text[] NOT NULL,
  accent_color     text,
  logo_url         text,
  hide_sign_out    boolean NOT NULL,
  session_seconds  integer NOT NULL,
  created_at       timestamptz NOT NULL,
  link_expires_at  timestamptz NOT NULL,
  opened_at        timestamptz,
  expires_at       timestamptz NOT NULL
);
CREATE INDEX portal_sessions_expires ON portal_sessions (expires_at);
CREATE INDEX portal_sessions_account ON portal_sessions (account_id);
