// Package history is the durable record of runs and actions: what the
// control plane no longer holds once an action is retired, and what a
// restart must not lose. It is one SQL schema served by SQLite (embedded,
// the default: a file in the data dir, through a pure-Go driver) or by
// PostgreSQL (for several replicas and for clusters), behind one Store.
package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"
	_ "modernc.org/sqlite"             // driver "sqlite"
)

// ErrNotFound: no such action or run in history.
var ErrNotFound = errors.New("not found in history")

// Store is safe for concurrent use. Writes go through one connection in
// SQLite (it has one writer anyway) and a pool in PostgreSQL.
type Store struct {
	write, read *sql.DB
	dialect     dialect
	// Created: the store was empty when opened (no schema yet), so the
	// owner may fill it from what the control plane still holds.
	Created bool
	// SetAside is where a damaged SQLite file was moved at open ("" when
	// none was): the owner says so, loudly.
	SetAside string
	where    string // for logs: a path or host, never a password
	prepared [stmtCount]*sql.Stmt
	health   health
}

// Open opens the store named by dsn: "postgres://..." or "postgresql://..."
// for PostgreSQL; empty for SQLite in dataDir/history.db; else a path of a
// SQLite file. It runs the schema migrations that are missing. A SQLite
// file found damaged is set aside for a fresh one (see corrupt.go).
func Open(ctx context.Context, dsn, dataDir string) (*Store, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		s, err := openPostgres(dsn)
		if err != nil {
			return nil, err
		}
		return s, s.setUp(ctx)
	}
	if dsn == "" {
		dsn = filepath.Join(dataDir, "history.db")
	}
	var aside string
	_, err := os.Stat(corruptMarker(dsn))
	if err == nil {
		if aside, err = setAside(dsn, time.Now()); err != nil {
			return nil, err
		}
	}
	s, err := openSQLite(dsn)
	if err == nil {
		err = s.setUp(ctx)
	}
	if corrupt(err) {
		if aside, err = setAside(dsn, time.Now()); err != nil {
			return nil, err
		}
		if s, err = openSQLite(dsn); err == nil {
			err = s.setUp(ctx)
		}
	}
	if err != nil {
		return nil, err
	}
	s.SetAside = aside
	return s, nil
}

// setUp migrates and prepares an open store, closing it on failure.
func (s *Store) setUp(ctx context.Context) error {
	err := s.migrate(ctx)
	if err == nil {
		err = s.prepare(ctx)
	}
	if err != nil {
		s.Close()
	}
	return err
}

func openSQLite(path string) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	// WAL lets readers go on while the writer writes; synchronous=NORMAL
	// in WAL mode loses no committed transaction on a process crash (only
	// on a power cut, the last ones). The writer takes its lock at BEGIN,
	// so two writers never deadlock upgrading.
	pragmas := "_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(10000)"
	write, err := sql.Open("sqlite", "file:"+path+"?"+pragmas+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("history: open %s: %w", path, err)
	}
	write.SetMaxOpenConns(1)
	read, err := sql.Open("sqlite", "file:"+path+"?"+pragmas+"&_pragma=query_only(1)")
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("history: open %s: %w", path, err)
	}
	read.SetMaxOpenConns(4)
	if err := os.Chmod(path, 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("history: %w", err)
	}
	return &Store{write: write, read: read, dialect: sqlite, where: path}, nil
}

func openPostgres(dsn string) (*Store, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("history: open postgres: %w", err)
	}
	db.SetMaxOpenConns(8)
	where := "postgres"
	if u, err := url.Parse(dsn); err == nil {
		where = "postgres://" + u.Host + u.Path // no user or password
	}
	return &Store{write: db, read: db, dialect: postgres, where: where}, nil
}

// Close closes the store.
func (s *Store) Close() error {
	for _, st := range s.prepared {
		if st != nil {
			st.Close()
		}
	}
	err := s.write.Close()
	if s.read != s.write {
		err = errors.Join(err, s.read.Close())
	}
	return err
}

// String names the store for logs, without credentials.
func (s *Store) String() string { return s.dialect.name + " " + s.where }

// Ping checks the store answers a read, in time (for readiness).
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := reading(ctx)
	defer cancel()
	var v sql.NullInt64
	if err := s.read.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&v); err != nil {
		return s.fail("read", err)
	}
	return nil
}

// dialect is what differs between the two databases in this schema.
type dialect struct {
	name string
	// forUpdate locks the rows a transaction reads before it writes them;
	// SQLite needs none (its writer holds the database).
	forUpdate string
	// numbered placeholders ($1, $2) in place of ?.
	numbered bool
}

var (
	sqlite   = dialect{name: "sqlite"}
	postgres = dialect{name: "postgres", forUpdate: " FOR UPDATE", numbered: true}
)

// q rewrites a query written with ? placeholders for the dialect. The
// queries of this package have no ? in literals.
func (d dialect) q(query string) string {
	if !d.numbered {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func nanos(t time.Time) int64 { return t.UnixNano() }

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }
