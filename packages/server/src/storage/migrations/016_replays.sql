-- Replays: sending a selection of past events again, as new deliveries, in
-- the background. A replay stores what it selects (filter, a JSON object
-- as the API took it, with its time range closed at creation) and how far it
-- has got (after_created_at, after_id: the last event done, walking oldest
-- first), so any process can take it up where another stopped. Each batch
-- inserts its deliveries and moves the position in one short transaction.
--
-- turn orders the running replays for the next batch (a sequence, so that
-- replays take turns whatever the clocks say).
CREATE SEQUENCE replay_turn;
CREATE TABLE replays (
  id                    uuid PRIMARY KEY,
  account_id            uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  state                 text NOT NULL CHECK (state IN ('running', 'completed', 'canceled')),
  filter                jsonb NOT NULL,
  endpoint_id           uuid,
  total                 integer NOT NULL,
  done                  integer NOT NULL DEFAULT 0,
  deliveries            integer NOT NULL DEFAULT 0,
  skipped_disabled      integer NOT NULL DEFAULT 0,
  skipped_unsubscribed  integer NOT NULL DEFAULT 0,
  after_created_at      timestamptz,
  after_id              uuid,
  turn                  bigint NOT NULL DEFAULT nextval('replay_turn'),
  created_by_key_id     uuid,
  created_by_user_id    uuid,
  created_at            timestamptz NOT NULL,
  updated_at            timestamptz NOT NULL,
  finished_at           timestamptz
);
CREATE INDEX replays_account ON replays (account_id, created_at DESC, id DESC);
CREATE INDEX replays_running ON replays (turn) WHERE state = 'running';

-- Searching events needs no index on deliveries: a search walks an account's
-- events newest first (events_account_created, or events_account_type_created
-- for a type) and looks at each one's deliveries through deliveries_event
-- (account, event). The delivery queue's table, written by every claim and
-- result, gets no index for it.
