package history

import (
	v1 "taskactions/api/v1"

	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Action is one action as history keeps it: the columns it is found and
// ordered by, and its public view, as JSON.
type Action struct {
	Project, Domain, Run, Name string
	Parent                     string // empty for a root
	UID                        string // tells incarnations of one name apart
	Phase                      string
	CreatedAt, UpdatedAt       time.Time
	View                       json.RawMessage
	// Retired: the object is gone from the control plane (retention, or
	// a deletion by another client): lists read it from here.
	Retired bool
}

// Run is the summary of a run.
type Run struct {
	ID          v1.RunID
	Phase       string // the root action's; "" until it is seen
	ActionCount int
	PhaseCounts map[string]int
	StartedAt   time.Time
	EndedAt     *time.Time
}

// Record writes what is known of an action now, and keeps its run's
// summary in step, in one transaction. It is idempotent and tolerates
// reordering, so an event seen again after a crash changes nothing:
//   - a terminal phase is never replaced by another phase (its view may
//     still be refined, as long as the phase stays);
//   - an older update never replaces a newer one;
//   - another incarnation of the name replaces the row only when newer;
//   - a tombstone (the action was deleted through the API) stays one.
//
// It returns the run's summary and whether the summary changed.
func (s *Store) Record(ctx context.Context, a Action) (Run, bool, error) {
	rs, err := s.RecordAll(ctx, []Action{a})
	if err != nil {
		return Run{}, false, err
	}
	return rs[0].Run, rs[0].Changed, nil
}

// Recorded is what Record returns for one action of RecordAll.
type Recorded struct {
	Run     Run
	Changed bool
	// Created: the run was not in history before this action.
	Created bool
}

// RecordAll records actions in order, in one transaction: a commit costs
// more than the statements, so the run service hands over every change
// its workers have at once.
func (s *Store) RecordAll(ctx context.Context, as []Action) ([]Recorded, error) {
	out := make([]Recorded, len(as))
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := s.lockRunKeys(ctx, tx, as); err != nil {
			return err
		}
		for i, a := range as {
			var err error
			if out[i], err = s.record(ctx, tx, a); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

func (s *Store) record(ctx context.Context, tx *sql.Tx, a Action) (Recorded, error) {
	old, found, err := s.lockAction(ctx, tx, a)
	if err != nil {
		return Recorded{}, err
	}
	if found && !replaces(a, old) {
		run, _, err := s.lockRun(ctx, tx, v1.RunID{Project: a.Project, Domain: a.Domain, Run: a.Run})
		return Recorded{Run: run}, err
	}
	if err := s.upsertAction(ctx, tx, a); err != nil {
		return Recorded{}, err
	}
	return s.adjustRun(ctx, tx, a, old, found)
}

// row is the part of a stored action that decides what a write does.
type row struct {
	uid, phase, parent   string
	terminal, tombstone  bool
	retired              bool
	createdAt, updatedAt int64
	view                 string
}

func replaces(a Action, old row) bool {
	switch {
	case old.uid != a.UID:
		return nanos(a.CreatedAt) >= old.createdAt
	case old.tombstone:
		return false
	case old.retired && a.Retired && a.Phase == old.phase:
		return false // the object's last event: history has its final view
	case old.terminal && a.Phase != old.phase:
		return false
	case nanos(a.UpdatedAt) < old.updatedAt:
		return false
	}
	return a.Phase != old.phase || string(a.View) != old.view || (a.Retired && !old.retired)
}

func (s *Store) lockAction(ctx context.Context, tx *sql.Tx, a Action) (row, bool, error) {
	var r row
	var view sql.NullString
	var deleted sql.NullInt64
	err := s.stmt(ctx, tx, stmtLockAction).QueryRowContext(ctx,
		a.Project, a.Domain, a.Run, a.Name).Scan(&r.uid, &r.phase, &r.parent, &r.createdAt, &r.updatedAt, &view, &r.retired, &deleted)
	if errors.Is(err, sql.ErrNoRows) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("history: read action: %w", err)
	}
	r.view, r.tombstone = view.String, deleted.Valid
	r.terminal = terminalPhases[r.phase]
	return r, true, nil
}

// terminalPhases are the final phases, by their API names. history keeps
// phases as strings and so names them here.
var terminalPhases = map[string]bool{"SUCCEEDED": true, "FAILED": true, "ABORTED": true, "TIMED_OUT": true, "RECOVERED": true}

func (s *Store) upsertAction(ctx context.Context, tx *sql.Tx, a Action) error {
	_, err := s.stmt(ctx, tx, stmtUpsertAction).ExecContext(ctx,
		a.Project, a.Domain, a.Run, a.Name, a.Parent, a.UID, a.Phase, nanos(a.CreatedAt), nanos(a.UpdatedAt), string(a.View), a.Retired)
	if err != nil {
		return fmt.Errorf("history: write action: %w", err)
	}
	return nil
}

// adjustRun moves the action from its old phase's count to its new one
// and updates the root's part of the summary.
func (s *Store) adjustRun(ctx context.Context, tx *sql.Tx, a Action, old row, found bool) (Recorded, error) {
	id := v1.RunID{Project: a.Project, Domain: a.Domain, Run: a.Run}
	run, exists, err := s.lockRun(ctx, tx, id)
	if err != nil {
		return Recorded{}, err
	}
	before := run.clone()
	if !exists {
		run = Run{ID: id, PhaseCounts: map[string]int{}}
	}
	if found && !old.tombstone {
		run.count(old.phase, -1)
		if old.parent == "" {
			run.Phase, run.EndedAt = "", nil
		}
	}
	run.add(a.Parent, a.Phase, a.CreatedAt, a.UpdatedAt)
	if exists && run.equal(before) {
		return Recorded{Run: run}, nil
	}
	return Recorded{Run: run, Changed: true, Created: !exists}, s.writeRun(ctx, tx, run)
}

// add counts an action in the run. The root gives the run its phase, its
// start and, once finished, its end; until the root is seen, the run
// started with its oldest action.
func (r *Run) add(parent, phase string, created, updated time.Time) {
	r.count(phase, +1)
	switch {
	case parent == "":
		r.Phase, r.StartedAt, r.EndedAt = phase, created, nil
		if terminalPhases[phase] {
			t := updated.UTC()
			r.EndedAt = &t
		}
	case r.Phase == "" && (r.StartedAt.IsZero() || created.Before(r.StartedAt)):
		r.StartedAt = created
	}
}

func (r *Run) count(phase string, d int) {
	r.ActionCount += d
	r.PhaseCounts[phase] += d
	if r.PhaseCounts[phase] <= 0 {
		delete(r.PhaseCounts, phase)
	}
}

func (r Run) clone() Run {
	c := r
	c.PhaseCounts = make(map[string]int, len(r.PhaseCounts))
	for k, v := range r.PhaseCounts {
		c.PhaseCounts[k] = v
	}
	return c
}

func (r Run) equal(o Run) bool {
	if r.Phase != o.Phase || r.ActionCount != o.ActionCount || !r.StartedAt.Equal(o.StartedAt) ||
		(r.EndedAt == nil) != (o.EndedAt == nil) || (r.EndedAt != nil && !r.EndedAt.Equal(*o.EndedAt)) ||
		len(r.PhaseCounts) != len(o.PhaseCounts) {
		return false
	}
	for k, v := range r.PhaseCounts {
		if o.PhaseCounts[k] != v {
			return false
		}
	}
	return true
}

func (s *Store) lockRun(ctx context.Context, tx *sql.Tx, id v1.RunID) (Run, bool, error) {
	r, err := scanRun(s.stmt(ctx, tx, stmtLockRun).QueryRowContext(ctx, id.Project, id.Domain, id.Run))
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, false, nil
	}
	if err != nil {
		return Run{}, false, fmt.Errorf("history: read run: %w", err)
	}
	return r, true, nil
}

func (s *Store) writeRun(ctx context.Context, tx *sql.Tx, r Run) error {
	counts, _ := json.Marshal(r.PhaseCounts)
	var ended sql.NullInt64
	if r.EndedAt != nil {
		ended = sql.NullInt64{Int64: nanos(*r.EndedAt), Valid: true}
	}
	_, err := s.stmt(ctx, tx, stmtWriteRun).ExecContext(ctx,
		r.ID.Project, r.ID.Domain, r.ID.Run, r.Phase, r.ActionCount, string(counts), nanos(r.StartedAt), ended)
	if err != nil {
		return fmt.Errorf("history: write run: %w", err)
	}
	return nil
}

const runColumns = `project, domain, run, phase, action_count, phase_counts, started_at, ended_at`

type scanner interface{ Scan(...any) error }

func scanRun(sc scanner) (Run, error) {
	var r Run
	var counts string
	var started int64
	var ended sql.NullInt64
	if err := sc.Scan(&r.ID.Project, &r.ID.Domain, &r.ID.Run, &r.Phase, &r.ActionCount, &counts, &started, &ended); err != nil {
		return Run{}, err
	}
	r.PhaseCounts = map[string]int{}
	if err := json.Unmarshal([]byte(counts), &r.PhaseCounts); err != nil {
		return Run{}, fmt.Errorf("history: run %s/%s/%s: phase counts: %w", r.ID.Project, r.ID.Domain, r.ID.Run, err)
	}
	r.StartedAt = fromNanos(started)
	if ended.Valid {
		t := fromNanos(ended.Int64)
		r.EndedAt = &t
	}
	return r, nil
}

// lockRunKey serializes the writers of one run in PostgreSQL, where
// several replicas write: a row lock cannot cover a row that does not
// exist yet (the first action of a run, a new run summary). SQLite has one
// writer already.
func (s *Store) lockRunKey(ctx context.Context, tx *sql.Tx, id v1.RunID) error {
	if s.dialect != postgres {
		return nil
	}
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, id.Project+"/"+id.Domain+"/"+id.Run)
	if err != nil {
		return fmt.Errorf("history: lock run: %w", err)
	}
	return nil
}

// lockRunKeys locks the runs of a batch, in one order, so that two
// batches never wait for each other's locks.
func (s *Store) lockRunKeys(ctx context.Context, tx *sql.Tx, as []Action) error {
	if s.dialect != postgres {
		return nil
	}
	ids := make([]v1.RunID, 0, len(as))
	for _, a := range as {
		ids = append(ids, v1.RunID{Project: a.Project, Domain: a.Domain, Run: a.Run})
	}
	slices.SortFunc(ids, func(a, b v1.RunID) int {
		return cmp.Or(cmp.Compare(a.Project, b.Project), cmp.Compare(a.Domain, b.Domain), cmp.Compare(a.Run, b.Run))
	})
	for _, id := range slices.Compact(ids) {
		if err := s.lockRunKey(ctx, tx, id); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) inTx(ctx context.Context, f func(*sql.Tx) error) (err error) {
	ctx, done := s.writing(ctx)
	defer func() { done(err) }()
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return s.fail("begin", err)
	}
	if err := f(tx); err != nil {
		tx.Rollback() //nolint:errcheck
		return s.fail("", err)
	}
	if err := tx.Commit(); err != nil {
		return s.fail("commit", err)
	}
	return nil
}

// MarkRetired notes that actions' objects are about to leave the control
// plane (retention), before they go: a crash after the mark leaves an
// object live, and live reads win over history; the mark is idempotent.
// It reports, for each, whether history has that incarnation recorded as
// terminal: retention deletes nothing else.
func (s *Store) MarkRetired(ctx context.Context, as []Action) ([]bool, error) {
	out := make([]bool, len(as))
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		for i, a := range as {
			res, err := s.stmt(ctx, tx, stmtMarkRetired).ExecContext(ctx, true, a.Project, a.Domain, a.Run, a.Name, a.UID)
			if err != nil {
				return fmt.Errorf("history: mark retired: %w", err)
			}
			n, _ := res.RowsAffected()
			out[i] = n > 0
		}
		return nil
	})
	return out, err
}
