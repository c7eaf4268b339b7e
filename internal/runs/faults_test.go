package runs

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"taskactions/internal/journal"
)

// The projects are listed while a commit waits for the store (another
// process holds SQLite's lock; the commit holds the service's lock while
// it waits): from memory, not once the commit is over. The store still
// has the write waiting when the list comes back.
func TestProjectsAnswerWhileACommitWaits(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	s := New(st, journal.Config{}, zerolog.Nop())
	ctx := context.Background()
	notify(t, s, rec(act("a0", running, 10)))
	if ps, err := s.Projects(ctx); err != nil || len(ps) != 1 {
		t.Fatalf("projects: %v %v", ps, err)
	}

	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.RecordAction(ctx, rootOf(proj, "other", "r9", queued, 30)) }()
	for st.Health() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	ps, err := s.Projects(ctx)
	if err != nil || len(ps) != 1 {
		t.Errorf("projects while a commit waits: %v %v", ps, err)
	}
	if h := st.Health(); h == nil || !strings.Contains(h.Error(), "a write has waited") {
		t.Errorf("the projects came once the commit was over (store: %v)", h)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
