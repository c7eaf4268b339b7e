-- Task logs, for every replica to read (internal/logs): each attempt's
-- stdout and stderr, as chunks of bytes at their offsets in the log
-- (log_chunks; end_pos is pos plus the chunk's length), and one row per
-- stream with its size, what --log-max-bytes dropped of it, and whether
-- it ends inside a line (log_streams). The replica that runs a task
-- ships what its local file gains; the API's appends come straight here.
-- They go with their run or action (a deletion through the API, and the
-- purge of its tombstones).
CREATE TABLE log_streams (
  project  TEXT {{binary}} NOT NULL,
  domain   TEXT {{binary}} NOT NULL,
  run      TEXT {{binary}} NOT NULL,
  name     TEXT {{binary}} NOT NULL,
  attempt  BIGINT  NOT NULL,
  stream   TEXT    NOT NULL,
  size     BIGINT  NOT NULL,
  dropped  BIGINT  NOT NULL,
  mid_line BOOLEAN NOT NULL,
  PRIMARY KEY (project, domain, run, name, attempt, stream)
);
CREATE TABLE log_chunks (
  project TEXT {{binary}} NOT NULL,
  domain  TEXT {{binary}} NOT NULL,
  run     TEXT {{binary}} NOT NULL,
  name    TEXT {{binary}} NOT NULL,
  attempt BIGINT NOT NULL,
  stream  TEXT   NOT NULL,
  pos     BIGINT NOT NULL,
  end_pos BIGINT NOT NULL,
  data    {{blob}} NOT NULL,
  PRIMARY KEY (project, domain, run, name, attempt, stream, pos)
);
