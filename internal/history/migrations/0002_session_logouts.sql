-- Logouts: a browser session opened with a token before not_before (Unix
-- nanoseconds) was ended by a logout, on every replica. One row per token
-- that ever logged out, so the table is as small as the set of tokens.
CREATE TABLE session_logouts (
  token_hash TEXT   NOT NULL PRIMARY KEY,
  not_before BIGINT NOT NULL
);
