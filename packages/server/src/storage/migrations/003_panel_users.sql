-- Panel sign-in: the people of an account and their sessions.

-- A user signs in with an email address (unique across Herald, compared in
-- lower case) and a password, stored only as a scrypt hash with its
-- parameters: scrypt$<log2 N>$<r>$<p>$<salt>$<hash>, base64url.
CREATE TABLE users (
  id             uuid PRIMARY KEY,
  account_id     uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  email          text NOT NULL,
  name           text NOT NULL,
  password_hash  text NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_email ON users (lower(email));
CREATE INDEX users_account ON users (account_id, created_at, id);

-- A signed-in browser. The cookie holds a random token; only its SHA-256 is
-- stored, so a copy of the database signs no one in. A session ends when
-- idle too long (last_seen_at), at expires_at whatever happens, on sign-out,
-- or when its user is deleted or given a new password.
CREATE TABLE sessions (
  id            uuid PRIMARY KEY,
  user_id       uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  token_hash    bytea NOT NULL UNIQUE,
  created_at    timestamptz NOT NULL,
  last_seen_at  timestamptz NOT NULL,
  expires_at    timestamptz NOT NULL
);
CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX sessions_expires ON sessions (expires_at);
