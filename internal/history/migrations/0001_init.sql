-- Actions: one row per action name of a run, the current incarnation.
-- view is the action's public view as JSON (as REST shows it). retired:
-- the object is gone from the control plane, so reads come here. A row
-- whose deleted_at is set is a tombstone left by a deletion through the
-- API, so that late events of the deleted objects do not bring them back.
-- Times are Unix nanoseconds: exact, and the same in SQLite and PostgreSQL.
-- Names compare byte by byte in both ({{binary}} is COLLATE "C" in
-- PostgreSQL, whose default collation depends on the locale), so pages
-- and their continue keys mean the same everywhere.
CREATE TABLE actions (
  project    TEXT {{binary}}   NOT NULL,
  domain     TEXT {{binary}}   NOT NULL,
  run        TEXT {{binary}}   NOT NULL,
  name       TEXT {{binary}}   NOT NULL,
  parent     TEXT {{binary}}   NOT NULL,
  uid        TEXT   NOT NULL,
  phase      TEXT   NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  view       TEXT,
  retired    BOOLEAN NOT NULL DEFAULT FALSE,
  deleted_at BIGINT,
  PRIMARY KEY (project, domain, run, name)
);
CREATE INDEX actions_by_age ON actions (project, domain, run, retired, created_at, name);
CREATE INDEX actions_by_parent ON actions (project, domain, run, parent, retired, created_at, name);
CREATE INDEX actions_tombstones ON actions (deleted_at);

-- Runs: the summary of each run, kept in step with its actions in the
-- same transaction.
CREATE TABLE runs (
  project      TEXT {{binary}}   NOT NULL,
  domain       TEXT {{binary}}   NOT NULL,
  run          TEXT {{binary}}   NOT NULL,
  phase        TEXT   NOT NULL,
  action_count BIGINT NOT NULL,
  phase_counts TEXT   NOT NULL,
  started_at   BIGINT NOT NULL,
  ended_at     BIGINT,
  PRIMARY KEY (project, domain, run)
);
CREATE INDEX runs_newest ON runs (project, domain, started_at DESC, run);
CREATE INDEX runs_by_phase ON runs (project, domain, phase, started_at DESC, run);
