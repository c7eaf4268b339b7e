package history

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
)

// The statements of recording, prepared once: parsing and planning them
// again for every change cost more than running them.
const (
	stmtLockAction = iota
	stmtUpsertAction
	stmtLockRun
	stmtWriteRun
	stmtMarkRetired
	stmtCount
)

func (d dialect) statements() [stmtCount]string {
	return [stmtCount]string{
		stmtLockAction: `SELECT uid, phase, parent, created_at, updated_at, view, retired, deleted_at
			FROM actions WHERE project = ? AND domain = ? AND run = ? AND name = ?` + d.forUpdate,
		stmtUpsertAction: `INSERT INTO actions
			(project, domain, run, name, parent, uid, phase, created_at, updated_at, view, retired, deleted_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)
			ON CONFLICT (project, domain, run, name) DO UPDATE SET
			parent = excluded.parent, uid = excluded.uid, phase = excluded.phase, created_at = excluded.created_at,
			updated_at = excluded.updated_at, view = excluded.view, retired = excluded.retired, deleted_at = NULL`,
		stmtLockRun: `SELECT ` + runColumns + ` FROM runs WHERE project = ? AND domain = ? AND run = ?` + d.forUpdate,
		stmtWriteRun: `INSERT INTO runs
			(project, domain, run, phase, action_count, phase_counts, started_at, ended_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (project, domain, run) DO UPDATE SET
			phase = excluded.phase, action_count = excluded.action_count, phase_counts = excluded.phase_counts,
			started_at = excluded.started_at, ended_at = excluded.ended_at`,
		stmtMarkRetired: `UPDATE actions SET retired = ?
			WHERE project = ? AND domain = ? AND run = ? AND name = ? AND uid = ? AND deleted_at IS NULL
			AND phase IN (` + terminalPhaseList() + `)`,
	}
}

// terminalPhaseList is terminalPhases as an SQL list.
func terminalPhaseList() string {
	var quoted []string
	for p := range terminalPhases {
		quoted = append(quoted, "'"+p+"'")
	}
	slices.Sort(quoted)
	return strings.Join(quoted, ", ")
}

// prepare prepares the statements on the writer, before any transaction
// holds its connection.
func (s *Store) prepare(ctx context.Context) error {
	for i, q := range s.dialect.statements() {
		st, err := s.write.PrepareContext(ctx, s.dialect.q(q))
		if err != nil {
			return fmt.Errorf("history: prepare: %w", err)
		}
		s.prepared[i] = st
	}
	return nil
}

// stmt is a prepared statement in tx (on SQLite's one writer connection,
// the same prepared statement each time).
func (s *Store) stmt(ctx context.Context, tx *sql.Tx, i int) *sql.Stmt {
	return tx.StmtContext(ctx, s.prepared[i])
}
