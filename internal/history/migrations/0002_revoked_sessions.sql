-- Sessions a logout ended before their cookie expired: every replica
-- refuses them until expires_at, when the row may go. Times are Unix
-- nanoseconds, as in 0001.
CREATE TABLE revoked_sessions (
  id         TEXT   NOT NULL PRIMARY KEY,
  revoked_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE INDEX revoked_sessions_by_time ON revoked_sessions (revoked_at);
CREATE INDEX revoked_sessions_by_expiry ON revoked_sessions (expires_at);
