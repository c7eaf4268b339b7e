package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	v1 "taskactions/api/v1"
	"taskactions/internal/testenv/pg"
)

// One PostgreSQL for the whole package; each test gets a fresh database
// in it. If it cannot start, pgErr says why and the PostgreSQL variants
// fail (make test installs PostgreSQL, so a missing one is a failure).
var (
	pgServer *pg.Postgres
	pgErr    error
	pgDBs    atomic.Int64
)

func TestMain(m *testing.M) {
	pgServer, pgErr = pg.StartPostgres()
	code := m.Run()
	if pgServer != nil {
		pgServer.Stop()
	}
	os.Exit(code)
}

// storeCase is one backend of the suite: dsn names a new, empty store
// (each call another one); open opens a new one, closed at the test's end.
type storeCase struct {
	name string
	dsn  func(t testing.TB) string
	open func(t testing.TB) *Store
}

// stores is the table every test runs against: the same suite for both
// databases.
func stores(t testing.TB) []storeCase {
	t.Helper()
	sqliteDSN := func(t testing.TB) string {
		return filepath.Join(t.TempDir(), "history.db")
	}
	postgresDSN := func(t testing.TB) string {
		t.Helper()
		if pgErr != nil {
			t.Fatalf("PostgreSQL did not start: %v", pgErr)
		}
		dsn, err := pgServer.CreateDatabase(fmt.Sprintf("history_test_%d", pgDBs.Add(1)))
		if err != nil {
			t.Fatal(err)
		}
		return dsn
	}
	cases := []storeCase{{name: "sqlite", dsn: sqliteDSN}, {name: "postgres", dsn: postgresDSN}}
	for i := range cases {
		dsn := cases[i].dsn
		cases[i].open = func(t testing.TB) *Store {
			t.Helper()
			return openStore(t, dsn(t))
		}
	}
	return cases
}

// openStore opens the store at dsn and closes it when the test ends.
func openStore(t testing.TB, dsn string) *Store {
	t.Helper()
	s, err := Open(context.Background(), dsn, t.TempDir())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var (
	ctx  = context.Background()
	base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rid  = v1.RunID{Project: "p", Domain: "d", Run: "r1"}
)

// at is base plus n seconds.
func at(n int) time.Time { return base.Add(time.Duration(n) * time.Second) }

// act is an action of run id: parent "" for a root; created and updated
// at the given offsets from base, in seconds.
func act(id v1.RunID, name, parent, uid, phase string, created, updated int) Action {
	return Action{
		Project: id.Project, Domain: id.Domain, Run: id.Run,
		Name: name, Parent: parent, UID: uid, Phase: phase,
		CreatedAt: at(created), UpdatedAt: at(updated),
		View: json.RawMessage(fmt.Sprintf(`{"name":%q,"phase":%q}`, name, phase)),
	}
}

func record(t *testing.T, s *Store, as ...Action) Run {
	t.Helper()
	var run Run
	for _, a := range as {
		var err error
		if run, _, err = s.Record(ctx, a); err != nil {
			t.Fatalf("Record(%s %s %s): %v", a.Name, a.UID, a.Phase, err)
		}
	}
	return run
}

func mustRun(t *testing.T, s *Store, id v1.RunID) Run {
	t.Helper()
	r, err := s.Run(ctx, id)
	if err != nil {
		t.Fatalf("Run(%v): %v", id, err)
	}
	return r
}

func allActions(t *testing.T, s *Store, q ActionQuery) []Action {
	t.Helper()
	as, err := s.Actions(ctx, q)
	if err != nil {
		t.Fatalf("Actions: %v", err)
	}
	return as
}

func names(as []Action) []string {
	out := []string{}
	for _, a := range as {
		out = append(out, a.Name)
	}
	return out
}

func runNames(rs []Run) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.ID.Run)
	}
	return out
}

// wantRun is what a test checks of a run summary; the action count is
// the sum of the counts.
type wantRun struct {
	phase   string
	counts  map[string]int
	started time.Time
	ended   *time.Time
}

func ptr(t time.Time) *time.Time { return &t }

func checkRun(t *testing.T, what string, got Run, id v1.RunID, w wantRun) {
	t.Helper()
	n := 0
	for _, c := range w.counts {
		n += c
	}
	endedOK := (got.EndedAt == nil) == (w.ended == nil) && (w.ended == nil || got.EndedAt.Equal(*w.ended))
	if got.ID != id || got.Phase != w.phase || got.ActionCount != n || !maps.Equal(got.PhaseCounts, w.counts) ||
		!got.StartedAt.Equal(w.started) || !endedOK {
		t.Errorf("%s:\n got  %s\n want %s", what, fmtRun(got),
			fmtRun(Run{ID: id, Phase: w.phase, ActionCount: n, PhaseCounts: w.counts, StartedAt: w.started, EndedAt: w.ended}))
	}
}

func fmtRun(r Run) string {
	ended := "nil"
	if r.EndedAt != nil {
		ended = r.EndedAt.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("{id %v phase %q count %d counts %v started %s ended %s}",
		r.ID, r.Phase, r.ActionCount, r.PhaseCounts, r.StartedAt.UTC().Format(time.RFC3339Nano), ended)
}

// pageActions reads q page by page (q.Limit a page), each page after the
// last item of the previous one, and checks no page is over the limit.
func pageActions(t *testing.T, s *Store, q ActionQuery) []Action {
	t.Helper()
	var out []Action
	for range 100 {
		page := allActions(t, s, q)
		if len(page) > q.Limit {
			t.Fatalf("limit %d: page of %d", q.Limit, len(page))
		}
		out = append(out, page...)
		if len(page) < q.Limit {
			return out
		}
		k := page[len(page)-1].Key()
		q.After = &k
	}
	t.Fatal("paging does not end")
	return nil
}

// pageRuns reads q page by page, as pageActions; between pages it calls
// between (when not nil).
func pageRuns(t *testing.T, s *Store, q RunQuery, between func()) []Run {
	t.Helper()
	var out []Run
	for range 100 {
		page, err := s.Runs(ctx, q)
		if err != nil {
			t.Fatalf("Runs: %v", err)
		}
		if len(page) > q.Limit {
			t.Fatalf("limit %d: page of %d", q.Limit, len(page))
		}
		out = append(out, page...)
		if len(page) < q.Limit {
			return out
		}
		if between != nil {
			between()
		}
		last := page[len(page)-1].Key()
		q.After = &last
	}
	t.Fatal("paging does not end")
	return nil
}

func wantNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("%s: error = %v, want ErrNotFound", what, err)
	}
}

// checkGone checks a deleted run is gone, for every read: its summary,
// its list, and each of the named actions.
func checkGone(t *testing.T, s *Store, id v1.RunID, when string, actions ...string) {
	t.Helper()
	_, err := s.Run(ctx, id)
	wantNotFound(t, when+": Run", err)
	if as := allActions(t, s, ActionQuery{Run: id}); len(as) != 0 {
		t.Errorf("%s: Actions = %v, want none", when, names(as))
	}
	for _, n := range actions {
		_, err := s.Action(ctx, id, n)
		wantNotFound(t, when+": Action "+n, err)
	}
}
