package history

import (
	v1 "taskactions/api/v1"

	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ActionKey is a position in a list of actions, which runs oldest first
// and then by name: a page continues after it.
type ActionKey struct {
	CreatedAt time.Time
	Name      string
}

// Less orders actions as lists show them.
func (k ActionKey) Less(o ActionKey) bool {
	if c := k.CreatedAt.Compare(o.CreatedAt); c != 0 {
		return c < 0
	}
	return k.Name < o.Name
}

// ActionQuery selects actions of one run, oldest first.
type ActionQuery struct {
	Run     v1.RunID
	Retired bool       // only the retired ones (the rest are live)
	Parent  *string    // only the children of this action
	After   *ActionKey // continue after this one
	Limit   int
}

// Action returns one action that is not deleted.
func (s *Store) Action(ctx context.Context, run v1.RunID, name string) (Action, error) {
	ctx, cancel := reading(ctx)
	defer cancel()
	a, err := scanAction(s.read.QueryRowContext(ctx, s.dialect.q(`SELECT `+actionColumns+` FROM actions
		WHERE project = ? AND domain = ? AND run = ? AND name = ? AND deleted_at IS NULL`),
		run.Project, run.Domain, run.Run, name))
	if errors.Is(err, sql.ErrNoRows) {
		return Action{}, fmt.Errorf("action %s/%s/%s/%s: %w", run.Project, run.Domain, run.Run, name, ErrNotFound)
	}
	if err != nil {
		return Action{}, s.fail("read action", err)
	}
	return a, nil
}

// Actions returns a page of a run's actions (or of one action's children).
func (s *Store) Actions(ctx context.Context, q ActionQuery) ([]Action, error) {
	ctx, cancel := reading(ctx)
	defer cancel()
	where := []string{"project = ?", "domain = ?", "run = ?", "deleted_at IS NULL"}
	args := []any{q.Run.Project, q.Run.Domain, q.Run.Run}
	if q.Parent != nil {
		where, args = append(where, "parent = ?"), append(args, *q.Parent)
	}
	if q.Retired {
		where, args = append(where, "retired = ?"), append(args, true)
	}
	if k := q.After; k != nil {
		// The first bound lets the index seek to the key; the OR alone
		// would scan from the start.
		c := nanos(k.CreatedAt)
		where, args = append(where, "created_at >= ? AND (created_at > ? OR name > ?)"), append(args, c, c, k.Name)
	}
	rows, err := s.read.QueryContext(ctx, s.dialect.q(`SELECT `+actionColumns+` FROM actions WHERE `+
		strings.Join(where, " AND ")+` ORDER BY created_at, name LIMIT ?`), append(args, limitOf(q.Limit))...)
	if err != nil {
		return nil, s.fail("list actions", err)
	}
	defer rows.Close()
	var out []Action
	for rows.Next() {
		a, err := scanAction(rows)
		if err != nil {
			return nil, s.fail("list actions", err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("list actions", err)
	}
	return out, nil
}

const actionColumns = `project, domain, run, name, parent, uid, phase, created_at, updated_at, view, retired`

func scanAction(sc scanner) (Action, error) {
	var a Action
	var created, updated int64
	var view sql.NullString
	if err := sc.Scan(&a.Project, &a.Domain, &a.Run, &a.Name, &a.Parent, &a.UID, &a.Phase, &created, &updated, &view, &a.Retired); err != nil {
		return Action{}, err
	}
	a.CreatedAt, a.UpdatedAt, a.View = fromNanos(created), fromNanos(updated), []byte(view.String)
	return a, nil
}

// RunKey is a position in a list of runs, which runs newest first and
// then by name.
type RunKey struct {
	StartedAt time.Time
	Run       string
}

// RunQuery selects runs of a project and domain, newest first.
type RunQuery struct {
	Project, Domain string
	Phases          []string  // any of these (none: all)
	StartedAfter    time.Time // inclusive; zero: no bound
	StartedBefore   time.Time // exclusive; zero: no bound
	After           *RunKey
	Limit           int
}

// Run returns one run's summary.
func (s *Store) Run(ctx context.Context, id v1.RunID) (Run, error) {
	ctx, cancel := reading(ctx)
	defer cancel()
	r, err := scanRun(s.read.QueryRowContext(ctx, s.dialect.q(`SELECT `+runColumns+` FROM runs
		WHERE project = ? AND domain = ? AND run = ?`), id.Project, id.Domain, id.Run))
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, fmt.Errorf("run %s/%s/%s: %w", id.Project, id.Domain, id.Run, ErrNotFound)
	}
	if err != nil {
		return Run{}, s.fail("read run", err)
	}
	return r, nil
}

// Runs returns a page of run summaries.
func (s *Store) Runs(ctx context.Context, q RunQuery) ([]Run, error) {
	ctx, cancel := reading(ctx)
	defer cancel()
	where := []string{"project = ?", "domain = ?"}
	args := []any{q.Project, q.Domain}
	if len(q.Phases) > 0 {
		where = append(where, "phase IN (?"+strings.Repeat(", ?", len(q.Phases)-1)+")")
		for _, p := range q.Phases {
			args = append(args, p)
		}
	}
	if !q.StartedAfter.IsZero() {
		where, args = append(where, "started_at >= ?"), append(args, nanos(q.StartedAfter))
	}
	if !q.StartedBefore.IsZero() {
		where, args = append(where, "started_at < ?"), append(args, nanos(q.StartedBefore))
	}
	if k := q.After; k != nil {
		st := nanos(k.StartedAt)
		where, args = append(where, "started_at <= ? AND (started_at < ? OR run > ?)"), append(args, st, st, k.Run)
	}
	rows, err := s.read.QueryContext(ctx, s.dialect.q(`SELECT `+runColumns+` FROM runs WHERE `+
		strings.Join(where, " AND ")+` ORDER BY started_at DESC, run LIMIT ?`), append(args, limitOf(q.Limit))...)
	if err != nil {
		return nil, s.fail("list runs", err)
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, s.fail("list runs", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("list runs", err)
	}
	return out, nil
}

// MaxLimit bounds one page. A query may ask for one more, to learn
// whether there is a next page.
const MaxLimit = 10000

// PageSize is the size of a page asked for n items: MaxLimit for 0, or
// for more than MaxLimit.
func PageSize(n int) int {
	if n <= 0 || n > MaxLimit {
		return MaxLimit
	}
	return n
}

func limitOf(n int) int {
	if n <= 0 || n > MaxLimit+1 {
		return MaxLimit + 1
	}
	return n
}
