package history

import (
	"errors"
	"fmt"
	"os"
	"time"

	sqlitedriver "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// A SQLite file that SQLite cannot read (not a database, or a malformed
// one) is set aside, not refused: the server would otherwise never start
// again, restarted into the same error by whatever supervises it. The
// file (with its -wal and -shm) is renamed <path>.corrupt-<UTC time>,
// where it can be salvaged (sqlite3's .recover), and a fresh store takes
// its place, which the owner fills from what the control plane holds
// (Store.Created). One found damaged while the server runs makes it
// unhealthy, and leaves a marker so that the next start sets it aside
// even if its header reads well. PostgreSQL is never set aside: its
// failures are the start's errors.

// corrupt: SQLite says the database is damaged.
func corrupt(err error) bool {
	var se *sqlitedriver.Error
	if !errors.As(err, &se) {
		return false
	}
	code := se.Code() & 0xff
	return code == sqlite3.SQLITE_CORRUPT || code == sqlite3.SQLITE_NOTADB
}

// corruptMarker is left beside a SQLite file found damaged while running.
func corruptMarker(path string) string { return path + ".corrupt" }

func (s *Store) markCorrupt(err error) {
	h := &s.health
	h.mu.Lock()
	first := h.corrupt == nil
	if first {
		h.corrupt = fmt.Errorf("the database is damaged (%w): stop the server; its next start sets %s aside and starts a fresh one", err, s.where)
	}
	h.mu.Unlock()
	if first && s.dialect == sqlite {
		_ = os.WriteFile(corruptMarker(s.where), []byte(err.Error()+"\n"), 0o600)
	}
}

// setAside renames a damaged SQLite file and its companions, and returns
// the new name of the file.
func setAside(path string, now time.Time) (string, error) {
	aside := path + ".corrupt-" + now.UTC().Format("20060102T150405Z")
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Rename(path+suffix, aside+suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("history: set the damaged %s aside: %w", path+suffix, err)
		}
	}
	if err := os.Remove(corruptMarker(path)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("history: %w", err)
	}
	return aside, nil
}
