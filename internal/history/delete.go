package history

import (
	v1 "taskactions/api/v1"

	"context"
	"database/sql"
	"fmt"
	"time"
)

// Deleting through the API removes actions from history. The objects go
// after, in the background, and their late events must not bring them
// back: so a deleted action leaves a tombstone (its name and uid, no
// view) that Record refuses to overwrite with the same incarnation. The
// tombstones of actions the control plane knew but history had not seen
// yet are passed in. Purge removes old tombstones.

// DeleteRun deletes a run and every action of it. It returns the run's
// last summary, and whether history had the run.
func (s *Store) DeleteRun(ctx context.Context, id v1.RunID, live []Action) (Run, bool, error) {
	var last Run
	var existed bool
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := s.lockRunKey(ctx, tx, id); err != nil {
			return err
		}
		var err error
		if last, existed, err = s.lockRun(ctx, tx, id); err != nil {
			return err
		}
		now := time.Now().UnixNano()
		if _, err := tx.ExecContext(ctx, s.dialect.q(`DELETE FROM runs WHERE project = ? AND domain = ? AND run = ?`),
			id.Project, id.Domain, id.Run); err != nil {
			return fmt.Errorf("history: delete run: %w", err)
		}
		if _, err := tx.ExecContext(ctx, s.dialect.q(`UPDATE actions SET view = NULL, deleted_at = ?
			WHERE project = ? AND domain = ? AND run = ? AND deleted_at IS NULL`), now, id.Project, id.Domain, id.Run); err != nil {
			return fmt.Errorf("history: delete run: %w", err)
		}
		if err := s.deleteRunLogs(ctx, tx, id); err != nil {
			return err
		}
		return s.tombstones(ctx, tx, live, now)
	})
	return last, existed, err
}

// DeleteActions deletes an action and its descendants (by parent name,
// within the run). It returns the run's summary after, and whether the
// run is gone; a run that is gone returns its last summary.
func (s *Store) DeleteActions(ctx context.Context, run v1.RunID, name string, live []Action) (Run, bool, error) {
	var out Run
	var gone bool
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := s.lockRunKey(ctx, tx, run); err != nil {
			return err
		}
		now := time.Now().UnixNano()
		if _, err := tx.ExecContext(ctx, s.dialect.q(`WITH RECURSIVE subtree(name) AS (
				SELECT name FROM actions WHERE project = ? AND domain = ? AND run = ? AND name = ?
				UNION SELECT a.name FROM actions a JOIN subtree t ON a.parent = t.name
				WHERE a.project = ? AND a.domain = ? AND a.run = ?)
			UPDATE actions SET view = NULL, deleted_at = ?
			WHERE project = ? AND domain = ? AND run = ? AND deleted_at IS NULL AND name IN (SELECT name FROM subtree)`),
			run.Project, run.Domain, run.Run, name, run.Project, run.Domain, run.Run, now, run.Project, run.Domain, run.Run); err != nil {
			return fmt.Errorf("history: delete actions: %w", err)
		}
		if err := s.tombstones(ctx, tx, live, now); err != nil {
			return err
		}
		if err := s.deleteActionLogs(ctx, tx, run, now); err != nil {
			return err
		}
		var err error
		out, gone, err = s.recount(ctx, tx, run)
		return err
	})
	return out, gone, err
}

// tombstones marks the given incarnations deleted, whether or not history
// had them.
func (s *Store) tombstones(ctx context.Context, tx *sql.Tx, live []Action, now int64) error {
	for _, a := range live {
		if _, err := tx.ExecContext(ctx, s.dialect.q(`INSERT INTO actions
			(project, domain, run, name, parent, uid, phase, created_at, updated_at, view, deleted_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?)
			ON CONFLICT (project, domain, run, name) DO UPDATE SET
			parent = excluded.parent, uid = excluded.uid, phase = excluded.phase, created_at = excluded.created_at,
			updated_at = excluded.updated_at, view = NULL, deleted_at = excluded.deleted_at
			WHERE actions.uid = excluded.uid OR actions.created_at <= excluded.created_at`),
			a.Project, a.Domain, a.Run, a.Name, a.Parent, a.UID, a.Phase, nanos(a.CreatedAt), nanos(a.UpdatedAt), now); err != nil {
			return fmt.Errorf("history: tombstone: %w", err)
		}
	}
	return nil
}

// recount computes a run's summary from its actions, after a deletion
// took an unknown number of them; when it took them all, the run goes and
// its last summary is returned.
func (s *Store) recount(ctx context.Context, tx *sql.Tx, id v1.RunID) (Run, bool, error) {
	rows, err := tx.QueryContext(ctx, s.dialect.q(`SELECT parent, phase, created_at, updated_at FROM actions
		WHERE project = ? AND domain = ? AND run = ? AND deleted_at IS NULL`), id.Project, id.Domain, id.Run)
	if err != nil {
		return Run{}, false, fmt.Errorf("history: recount: %w", err)
	}
	defer rows.Close()
	r := Run{ID: id, PhaseCounts: map[string]int{}}
	for rows.Next() {
		var parent, phase string
		var created, updated int64
		if err := rows.Scan(&parent, &phase, &created, &updated); err != nil {
			return Run{}, false, fmt.Errorf("history: recount: %w", err)
		}
		r.add(parent, phase, fromNanos(created), fromNanos(updated))
	}
	if err := rows.Err(); err != nil {
		return Run{}, false, err
	}
	rows.Close()
	if r.ActionCount == 0 {
		if last, found, err := s.lockRun(ctx, tx, id); err != nil {
			return Run{}, false, err
		} else if found {
			r = last
		}
		_, err := tx.ExecContext(ctx, s.dialect.q(`DELETE FROM runs WHERE project = ? AND domain = ? AND run = ?`), id.Project, id.Domain, id.Run)
		return r, true, err
	}
	return r, false, s.writeRun(ctx, tx, r)
}

// Purge removes the tombstones of deletions older than before, and their
// logs: by then the deleted objects are long gone from the control plane.
func (s *Store) Purge(ctx context.Context, before time.Time) (n int64, err error) {
	ctx, done := s.writing(ctx)
	defer func() { done(err) }()
	if err := s.purgeLogs(ctx, nanos(before)); err != nil {
		return 0, s.fail("purge logs", err)
	}
	res, err := s.write.ExecContext(ctx, s.dialect.q(`DELETE FROM actions WHERE deleted_at IS NOT NULL AND deleted_at < ?`), nanos(before))
	if err != nil {
		return 0, s.fail("purge", err)
	}
	return res.RowsAffected()
}
