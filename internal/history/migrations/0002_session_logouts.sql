-- Logouts. ended_sessions: one row per session a logout ended, until its
-- cookie would have expired (Unix nanoseconds). session_logouts: a token
-- whose sessions opened before not_before are all over; a token that ends
-- many sessions has them folded into this row, so that no client can grow
-- the tables beyond a few rows per token.
CREATE TABLE ended_sessions (
  id         TEXT   NOT NULL PRIMARY KEY,
  token_hash TEXT   NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE INDEX ended_sessions_by_token ON ended_sessions (token_hash);
CREATE TABLE session_logouts (
  token_hash TEXT   NOT NULL PRIMARY KEY,
  not_before BIGINT NOT NULL
);
