package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"taskactions/internal/app"
	"taskactions/pkg/client"
)

// readyz is the server's /readyz: its status and body.
func readyz(t *testing.T, s *server) (int, string) {
	t.Helper()
	resp, err := http.Get(s.URL() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return resp.StatusCode, readAll(t, resp.Body)
}

func getRun(t *testing.T, s *server, run client.RunIdentifier) *client.GetRunResponse {
	t.Helper()
	r, err := s.api.GetRunWithResponse(context.Background(), run.Project, run.Domain, run.Name)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// wantHistoryUnavailable: a 503 problem that says the history store, with
// Retry-After.
func wantHistoryUnavailable(t *testing.T, what string, r *client.GetRunResponse) {
	t.Helper()
	if r.StatusCode() != http.StatusServiceUnavailable || r.HTTPResponse.Header.Get("Retry-After") == "" ||
		r.ApplicationproblemJSONDefault == nil || !strings.Contains(value(r.ApplicationproblemJSONDefault.Detail), "history store") {
		t.Errorf("%s: HTTP %d, Retry-After %q, %s; want 503 naming the history store, with Retry-After",
			what, r.StatusCode(), r.HTTPResponse.Header.Get("Retry-After"), r.Body)
	}
}

// While another process holds the history store (SQLite, BEGIN
// EXCLUSIVE), the server does not lie: a run whose 100 actions were
// enqueued meanwhile is 503 with Retry-After, not 404 (history could not
// record it); /readyz is 503 naming the history store; the projects
// answer. Once the lock is gone, history catches up: the run has its 100
// actions and the server is ready.
func TestHistoryHeldByAnotherProcess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s, err := startServer(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	before := newRun()
	enqueue(t, s, before, "a0", "")
	eventually(t, 10*time.Second, "the first run in history", func() bool { return getRun(t, s, before).StatusCode() == http.StatusOK })
	if r, err := s.api.ListProjectsWithResponse(context.Background()); err != nil || r.StatusCode() != http.StatusOK {
		t.Fatalf("projects: %v %v", err, r)
	}

	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	locked := true
	defer func() {
		if locked {
			_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
		}
	}()

	run := newRun()
	enqueue(t, s, run, "a0", "")
	names := make([]string, 99)
	for i := range names {
		names[i] = fmt.Sprintf("c%d", i)
	}
	enqueueMany(t, s, run, names, "a0", "external")
	wantHistoryUnavailable(t, "a run history has not recorded", getRun(t, s, run))
	var reason string
	eventually(t, 30*time.Second, "/readyz to say the history store does not record", func() bool {
		code, body := readyz(t, s)
		reason = body
		return code == http.StatusServiceUnavailable && strings.Contains(body, "history store")
	})
	if r, err := s.api.ListProjectsWithResponse(context.Background()); err != nil || r.StatusCode() != http.StatusOK {
		t.Errorf("projects while history is held: %v %v", err, r)
	}
	if code, body := readyz(t, s); code != http.StatusServiceUnavailable {
		t.Errorf("the projects answered only once history recorded again (/readyz %d %s, before %s)", code, body, reason)
	}

	if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	locked = false
	eventually(t, time.Minute, "history to catch up", func() bool {
		r := getRun(t, s, run)
		return r.StatusCode() == http.StatusOK && r.JSON200.ActionCount == 100
	})
	eventually(t, 30*time.Second, "/readyz to be ready again", func() bool {
		code, _ := readyz(t, s)
		return code == http.StatusOK
	})
}

// PostgreSQL with the runs table locked by another session: a read of a
// run history has gives up after its timeout, 503 with Retry-After (not
// 404, not a hang, not a 500); a write waiting on the lock makes /readyz
// 503. Unlocked, both come back.
func TestHistoryTableLockedInPostgres(t *testing.T) {
	dsn, err := postgresDatabase()
	if err != nil {
		t.Fatal(err)
	}
	s, err := startServer(filepath.Join(t.TempDir(), "data"), func(c *app.Config) { c.HistoryDSN = dsn })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	run := newRun()
	enqueue(t, s, run, "a0", "")
	eventually(t, 10*time.Second, "the run in history", func() bool { return getRun(t, s, run).StatusCode() == http.StatusOK })

	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	if _, err := tx.ExecContext(context.Background(), "LOCK TABLE runs IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	wantHistoryUnavailable(t, "a run read while its table is locked", getRun(t, s, run))
	// A stream of the runs cannot have its snapshot: it ends before synced
	// (its EventSource comes back), rather than send none as the whole.
	st := openStream(t, s.http, fmt.Sprintf("%s/api/v1/projects/%s/domains/%s/events", s.URL(), run.Project, run.Domain), "")
	if evs := untilEnd(t, st, time.Minute); strings.Contains(eventTypes(evs), "synced") {
		t.Errorf("a runs stream while history is locked: %s, want it to end before synced", eventTypes(evs))
	}
	enqueue(t, s, run, "a1", "a0") // its record waits on the lock
	eventually(t, 30*time.Second, "/readyz to say the history store does not record", func() bool {
		code, body := readyz(t, s)
		return code == http.StatusServiceUnavailable && strings.Contains(body, "history store")
	})
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "history to catch up", func() bool {
		r := getRun(t, s, run)
		return r.StatusCode() == http.StatusOK && r.JSON200.ActionCount == 2
	})
	eventually(t, 30*time.Second, "/readyz to be ready again", func() bool {
		code, _ := readyz(t, s)
		return code == http.StatusOK
	})
}

// A history.db that is not a database does not keep the server from
// starting: it is set aside (renamed with the time), the server starts on
// a fresh store, which holds the actions the control plane still has.
func TestDamagedHistoryIsSetAside(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s, err := startServer(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	run := newRun()
	enqueue(t, s, run, "a0", "")
	enqueue(t, s, run, "a1", "a0")
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	garbage := []byte(strings.Repeat("this is not a database ", 2000))
	if err := os.WriteFile(filepath.Join(dir, "history.db"), garbage, 0o600); err != nil {
		t.Fatal(err)
	}

	s, err = startServer(dir, nil)
	if err != nil {
		t.Fatalf("start with a damaged history.db: %v", err)
	}
	defer s.Stop()
	aside, _ := filepath.Glob(filepath.Join(dir, "history.db.corrupt-*"))
	if len(aside) != 1 {
		t.Fatalf("set aside: %v, want one history.db.corrupt-<time>", aside)
	}
	if b, err := os.ReadFile(aside[0]); err != nil || string(b) != string(garbage) {
		t.Errorf("%s: %v, %d bytes; want the damaged file as it was", aside[0], err, len(b))
	}
	eventually(t, 30*time.Second, "the live run in the fresh store", func() bool {
		r := getRun(t, s, run)
		return r.StatusCode() == http.StatusOK && r.JSON200.ActionCount == 2
	})
	if code, body := readyz(t, s); code != http.StatusOK {
		t.Errorf("/readyz: %d %s", code, body)
	}
}

// untilEnd reads a stream's events (comments left out) until the server
// ends it, failing after d.
func untilEnd(t *testing.T, st *sseStream, d time.Duration) []client.Event {
	t.Helper()
	deadline := time.After(d)
	var evs []client.Event
	for {
		select {
		case ev, open := <-st.events:
			if !open {
				return evs
			}
			if ev.Comment == "" && ev.Type != "" {
				evs = append(evs, ev)
			}
		case <-deadline:
			t.Fatalf("the stream did not end within %v: %s", d, eventTypes(evs))
		}
	}
}
