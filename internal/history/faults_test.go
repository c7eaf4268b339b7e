package history

import (
	v1 "taskactions/api/v1"

	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// waitUnhealthy waits until the store says it does not record, and
// returns why.
func waitUnhealthy(t *testing.T, s *Store) error {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err := s.Health(); err != nil {
			return err
		}
	}
	t.Fatal("the store stayed healthy")
	return nil
}

// recordAsync records a in the background; the channel has its error.
func recordAsync(s *Store, a Action) chan error {
	done := make(chan error, 1)
	go func() {
		_, _, err := s.Record(ctx, a)
		done <- err
	}()
	return done
}

// SQLite held by another process (BEGIN EXCLUSIVE): a write waits, and
// the store says so while it waits; reads go on (WAL); once the lock is
// gone the write goes through and the store is healthy again.
func TestSQLiteLockedByAnotherProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.db")
	s := openStore(t, path)
	record(t, s, act(rid, "a0", "", "u0", "RUNNING", 0, 0))
	other, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	done := recordAsync(s, act(rid, "a1", "a0", "u1", "QUEUED", 1, 1))
	if err := waitUnhealthy(t, s); !strings.Contains(err.Error(), "a write has waited") {
		t.Errorf("while locked: %v", err)
	}
	if len(done) > 0 {
		t.Fatalf("the write ended while the database was locked: %v", <-done)
	}
	if r := mustRun(t, s, rid); r.ActionCount != 1 {
		t.Errorf("a read while locked: %d actions, want 1", r.ActionCount)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the write once the lock is gone: %v", err)
	}
	if err := s.Health(); err != nil {
		t.Errorf("after the lock: %v", err)
	}
}

// SQLite full: a write fails as unavailable (not as anything a client
// did), the store says its writes fail until one goes through again.
func TestSQLiteFull(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "history.db"))
	record(t, s, act(rid, "a0", "", "u0", "RUNNING", 0, 0))
	var pages int
	if err := s.write.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := s.write.ExecContext(ctx, "PRAGMA max_page_count = "+strconv.Itoa(pages)); err != nil {
		t.Fatal(err)
	}
	big := act(rid, "a1", "a0", "u1", "QUEUED", 1, 1)
	big.View = []byte(`{"blob":"` + strings.Repeat("x", 1<<20) + `"}`)
	_, _, err := s.Record(ctx, big)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "full") {
		t.Fatalf("a write to a full store: %v, want ErrUnavailable saying it is full", err)
	}
	if err := s.Health(); err == nil || !strings.Contains(err.Error(), "writes fail") {
		t.Errorf("full: health %v", err)
	}
	if _, err := s.write.ExecContext(ctx, "PRAGMA max_page_count = 1073741823"); err != nil {
		t.Fatal(err)
	}
	record(t, s, big)
	if err := s.Health(); err != nil {
		t.Errorf("with room again: %v", err)
	}
}

// PostgreSQL with a table locked by another session: reads give up after
// ReadTimeout as unavailable, never as not found (the run is there);
// writes wait, and the store says so; the lock gone, all goes through.
func TestPostgresLockedTable(t *testing.T) {
	if pgErr != nil {
		t.Fatalf("PostgreSQL did not start: %v", pgErr)
	}
	var dsn string
	for _, c := range stores(t) {
		if c.name == "postgres" {
			dsn = c.dsn(t)
		}
	}
	s := openStore(t, dsn)
	record(t, s, act(rid, "a0", "", "u0", "RUNNING", 0, 0))
	other, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tx, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	if _, err := tx.ExecContext(ctx, "LOCK TABLE runs IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []v1.RunID{rid, {Project: "p", Domain: "d", Run: "none"}} {
		_, err := s.Run(ctx, id)
		if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrNotFound) {
			t.Errorf("read run %s while its table is locked: %v, want ErrUnavailable", id.Run, err)
		}
	}
	done := recordAsync(s, act(rid, "a1", "a0", "u1", "QUEUED", 1, 1))
	if err := waitUnhealthy(t, s); !strings.Contains(err.Error(), "a write has waited") {
		t.Errorf("while locked: %v", err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the write once the lock is gone: %v", err)
	}
	if r := mustRun(t, s, rid); r.ActionCount != 2 || s.Health() != nil {
		t.Errorf("after the lock: %d actions (want 2), health %v", r.ActionCount, s.Health())
	}
}

// A SQLite file that is not a database is set aside at open, not
// refused: renamed with its time, and a fresh store takes its place.
func TestDamagedSQLiteIsSetAside(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "history.db")
	garbage := []byte(strings.Repeat("not a database ", 1000))
	if err := os.WriteFile(path, garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, path)
	if s.SetAside == "" || !s.Created {
		t.Fatalf("set aside %q, created %v: want the damaged file set aside and a fresh store", s.SetAside, s.Created)
	}
	if b, err := os.ReadFile(s.SetAside); err != nil || string(b) != string(garbage) {
		t.Errorf("the damaged file at %s: %v (%d bytes)", s.SetAside, err, len(b))
	}
	if !strings.HasPrefix(filepath.Base(s.SetAside), "history.db.corrupt-") {
		t.Errorf("set aside as %s", s.SetAside)
	}
	record(t, s, act(rid, "a0", "", "u0", "RUNNING", 0, 0))
	if err := s.Health(); err != nil {
		t.Errorf("the fresh store: %v", err)
	}
}

// A store found damaged while it runs says so (readiness reports it) and
// leaves a marker: the next open sets the file aside, however well its
// header reads.
func TestDamageFoundWhileRunning(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "history.db")
	s, err := Open(ctx, path, dir)
	if err != nil {
		t.Fatal(err)
	}
	record(t, s, act(rid, "a0", "", "u0", "RUNNING", 0, 0))
	// A real error of SQLite's for a damaged file.
	bad := filepath.Join(dir, "bad.db")
	_ = os.WriteFile(bad, []byte(strings.Repeat("x", 4096)), 0o600)
	db, _ := sql.Open("sqlite", "file:"+bad)
	_, damaged := db.ExecContext(ctx, "SELECT * FROM sqlite_master")
	db.Close()
	if !corrupt(damaged) {
		t.Fatalf("not a damaged-database error: %v", damaged)
	}
	if err := s.fail("read run", damaged); !errors.Is(err, ErrUnavailable) {
		t.Errorf("%v, want ErrUnavailable", err)
	}
	if err := s.Health(); err == nil || !strings.Contains(err.Error(), "damaged") || !strings.Contains(err.Error(), "sets "+path+" aside") {
		t.Errorf("health: %v", err)
	}
	s.Close()
	again := openStore(t, path)
	if again.SetAside == "" || !again.Created {
		t.Errorf("the next open: set aside %q, created %v", again.SetAside, again.Created)
	}
	if _, err := os.Stat(corruptMarker(path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the marker is still there: %v", err)
	}
}

// Anything else that stops a SQLite store from opening is refused, with
// nothing renamed.
func TestUnopenableSQLiteIsRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "history.db")
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(ctx, path, dir); err == nil {
		s.Close()
		t.Fatal("opened a directory as the store")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the data dir has %d entries, want the directory alone", len(entries))
	}
}
