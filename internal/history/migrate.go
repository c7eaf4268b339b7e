package history

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The schema is a sequence of numbered files, migrations/NNNN_name.sql,
// each applied once, in order, in its own transaction, and noted in
// schema_migrations. A new version of the schema is a new file; a file
// that has been released is never edited.
//
//go:embed migrations/*.sql
var migrations embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations() ([]migration, error) {
	entries, err := migrations.ReadDir("migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("history: migration %s is not named NNNN_name.sql", e.Name())
		}
		b, err := migrations.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// migrate applies the migrations the database has not seen. In
// PostgreSQL an advisory lock keeps replicas starting together from
// applying one twice.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	conn, err := s.write.Conn(ctx)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	defer conn.Close()
	if s.dialect == postgres {
		if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock(7262031)"); err != nil {
			return fmt.Errorf("history: lock for migrations: %w", err)
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(7262031)") //nolint:errcheck
	}
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	var current sql.NullInt64
	if err := conn.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	s.Created = !current.Valid
	for _, m := range ms {
		if current.Valid && int64(m.version) <= current.Int64 {
			continue
		}
		if err := s.apply(ctx, conn, m); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) apply(ctx context.Context, conn *sql.Conn, m migration) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("history: migration %s: %w", m.name, err)
	}
	defer tx.Rollback() //nolint:errcheck
	for _, stmt := range strings.Split(s.dialect.expand(stripComments(m.sql)), ";") {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("history: migration %s: %w", m.name, err)
		}
	}
	if _, err := tx.ExecContext(ctx, s.dialect.q(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`),
		m.version, m.name, time.Now().UnixNano()); err != nil {
		return fmt.Errorf("history: migration %s: %w", m.name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("history: migration %s: %w", m.name, err)
	}
	return nil
}

// expand fills in what the schema spells differently per database.
func (d dialect) expand(sql string) string {
	binary, blob := "", "BLOB" // SQLite compares text as bytes (BINARY) by default
	if d == postgres {
		binary, blob = `COLLATE "C"`, "BYTEA"
	}
	return strings.NewReplacer("{{binary}}", binary, "{{blob}}", blob).Replace(sql)
}

func stripComments(stmt string) string {
	var b strings.Builder
	for _, line := range strings.Split(stmt, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// Version is the schema version the database is at.
func (s *Store) Version(ctx context.Context) (int, error) {
	var v sql.NullInt64
	err := s.read.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&v)
	return int(v.Int64), err
}
