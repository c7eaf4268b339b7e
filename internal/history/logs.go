package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	v1 "taskactions/api/v1"
	"taskactions/internal/logs"
)

// Task logs live here too, so that every replica reads them and they
// outlive the replica that wrote them (internal/logs decides what is
// written; this is how it is kept): log_chunks holds each stream's bytes
// at their offsets, log_streams its size, what the bound dropped, and
// whether it ends inside a line. A stream's chunks are contiguous from 0:
// a write goes at its stored size, in the transaction that moves it.

var _ logs.Shared = (*Store)(nil)

// logKey is the WHERE of one stream; logArgs its arguments.
const logKey = `project = ? AND domain = ? AND run = ? AND name = ? AND attempt = ? AND stream = ?`

func logArgs(k logs.Key) []any {
	return []any{k.Project, k.Domain, k.Run, k.Action, k.Attempt, string(k.Stream)}
}

// LogStat is a stream's size and dropped bytes; 0 and 0 when not written.
func (s *Store) LogStat(ctx context.Context, k logs.Key) (size, dropped int64, err error) {
	ctx, cancel := reading(ctx)
	defer cancel()
	err = s.read.QueryRowContext(ctx, s.dialect.q(`SELECT size, dropped FROM log_streams WHERE `+logKey), logArgs(k)...).Scan(&size, &dropped)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, s.fail("read a log", err)
	}
	return size, dropped, nil
}

// LogChunks returns the chunks of a stream that hold bytes of
// [off, off+n), in order. The index finds the chunk that holds off (the
// last one to begin at or before it), and reads on from there.
func (s *Store) LogChunks(ctx context.Context, k logs.Key, off int64, n int) ([]logs.Chunk, error) {
	ctx, cancel := reading(ctx)
	defer cancel()
	args := append(append(logArgs(k), logArgs(k)...), off, off+int64(n), off)
	rows, err := s.read.QueryContext(ctx, s.dialect.q(`SELECT pos, data FROM log_chunks WHERE `+logKey+`
		AND pos >= COALESCE((SELECT MAX(pos) FROM log_chunks WHERE `+logKey+` AND pos <= ?), 0)
		AND pos < ? AND end_pos > ? ORDER BY pos`), args...)
	if err != nil {
		return nil, s.fail("read a log", err)
	}
	defer rows.Close()
	var out []logs.Chunk
	for rows.Next() {
		var c logs.Chunk
		if err := rows.Scan(&c.Off, &c.Data); err != nil {
			return nil, s.fail("read a log", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("read a log", err)
	}
	return out, nil
}

// logStream is a stream's row, locked for the transaction's write.
type logStream struct {
	size, dropped int64
	midLine       bool
}

// lockLog serializes the writers of an attempt's logs in PostgreSQL
// (SQLite has one writer already): the bound is the attempt's, over both
// streams, and the rows may not exist yet.
func (s *Store) lockLog(ctx context.Context, tx *sql.Tx, k logs.Key) error {
	if s.dialect != postgres {
		return nil
	}
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`,
		fmt.Sprintf("logs/%s/%s/%s/%s/%d", k.Project, k.Domain, k.Run, k.Action, k.Attempt))
	if err != nil {
		return fmt.Errorf("history: lock a log: %w", err)
	}
	return nil
}

func (s *Store) readLogStream(ctx context.Context, tx *sql.Tx, k logs.Key) (logStream, error) {
	var st logStream
	err := tx.QueryRowContext(ctx, s.dialect.q(`SELECT size, dropped, mid_line FROM log_streams WHERE `+logKey), logArgs(k)...).
		Scan(&st.size, &st.dropped, &st.midLine)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return st, fmt.Errorf("history: read a log: %w", err)
	}
	return st, nil
}

// writeLog appends p at the stream's size and stores its row.
func (s *Store) writeLog(ctx context.Context, tx *sql.Tx, k logs.Key, st logStream, p []byte) error {
	if len(p) > 0 {
		if _, err := tx.ExecContext(ctx, s.dialect.q(`INSERT INTO log_chunks
			(project, domain, run, name, attempt, stream, pos, end_pos, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			append(logArgs(k), st.size, st.size+int64(len(p)), p)...); err != nil {
			return fmt.Errorf("history: write a log: %w", err)
		}
	}
	_, err := tx.ExecContext(ctx, s.dialect.q(`INSERT INTO log_streams
		(project, domain, run, name, attempt, stream, size, dropped, mid_line) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (project, domain, run, name, attempt, stream) DO UPDATE SET
		size = excluded.size, dropped = excluded.dropped, mid_line = excluded.mid_line`),
		append(logArgs(k), st.size+int64(len(p)), st.dropped, st.midLine)...)
	if err != nil {
		return fmt.Errorf("history: write a log: %w", err)
	}
	return nil
}

// LogWrite stores p at off (a shipper's copy of a local file), skipping
// what is stored already; off past the stored size is logs.ErrGap (the
// log was deleted: bytes would be missing), which writes nothing and is
// no failure of the store.
func (s *Store) LogWrite(ctx context.Context, k logs.Key, off int64, p []byte, dropped int64) (int64, error) {
	var size int64
	gap := false
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := s.lockLog(ctx, tx, k); err != nil {
			return err
		}
		st, err := s.readLogStream(ctx, tx, k)
		if err != nil {
			return err
		}
		if off > st.size {
			gap, size = true, st.size
			return nil
		}
		p = p[min(st.size-off, int64(len(p))):]
		if len(p) > 0 {
			st.midLine = p[len(p)-1] != '\n'
		}
		st.dropped = max(st.dropped, dropped)
		size = st.size + int64(len(p))
		return s.writeLog(ctx, tx, k, st, p)
	})
	if err == nil && gap {
		err = fmt.Errorf("log %s: a write at byte %d, %d stored: %w", k, off, size, logs.ErrGap)
	}
	return size, err
}

// LogAppend appends what fit makes of the attempt's tally (an API
// append, which any replica may take).
func (s *Store) LogAppend(ctx context.Context, k logs.Key, fit func(logs.Tally) ([]byte, int64)) (size, dropped int64, err error) {
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if err := s.lockLog(ctx, tx, k); err != nil {
			return err
		}
		var used int64
		if err := tx.QueryRowContext(ctx, s.dialect.q(`SELECT COALESCE(SUM(size), 0) FROM log_streams
			WHERE project = ? AND domain = ? AND run = ? AND name = ? AND attempt = ?`),
			k.Project, k.Domain, k.Run, k.Action, k.Attempt).Scan(&used); err != nil {
			return fmt.Errorf("history: read a log: %w", err)
		}
		st, err := s.readLogStream(ctx, tx, k)
		if err != nil {
			return err
		}
		out, drop := fit(logs.Tally{Used: used, MidLine: st.midLine, Dropped: st.dropped})
		if len(out) > 0 {
			st.midLine = out[len(out)-1] != '\n'
		}
		st.dropped += drop
		size, dropped = st.size+int64(len(out)), st.dropped
		return s.writeLog(ctx, tx, k, st, out)
	})
	return size, dropped, err
}

// deleteRunLogs deletes the logs of a run (DeleteRun).
func (s *Store) deleteRunLogs(ctx context.Context, tx *sql.Tx, id v1.RunID) error {
	for _, table := range []string{"log_chunks", "log_streams"} {
		if _, err := tx.ExecContext(ctx, s.dialect.q(`DELETE FROM `+table+` WHERE project = ? AND domain = ? AND run = ?`),
			id.Project, id.Domain, id.Run); err != nil {
			return fmt.Errorf("history: delete logs: %w", err)
		}
	}
	return nil
}

// deleteActionLogs deletes the logs of the actions of a run that a
// deletion marked at deletedAt (DeleteActions).
func (s *Store) deleteActionLogs(ctx context.Context, tx *sql.Tx, id v1.RunID, deletedAt int64) error {
	for _, table := range []string{"log_chunks", "log_streams"} {
		if _, err := tx.ExecContext(ctx, s.dialect.q(`DELETE FROM `+table+` WHERE project = ? AND domain = ? AND run = ?
			AND name IN (SELECT name FROM actions WHERE project = ? AND domain = ? AND run = ? AND deleted_at = ?)`),
			id.Project, id.Domain, id.Run, id.Project, id.Domain, id.Run, deletedAt); err != nil {
			return fmt.Errorf("history: delete logs: %w", err)
		}
	}
	return nil
}

// purgeLogs deletes the logs of the tombstones Purge is about to drop:
// what a replica shipped after the deletion (a task that was still
// running) goes with them.
func (s *Store) purgeLogs(ctx context.Context, before int64) error {
	for _, table := range []string{"log_chunks", "log_streams"} {
		if _, err := s.write.ExecContext(ctx, s.dialect.q(`DELETE FROM `+table+` WHERE (project, domain, run, name) IN
			(SELECT project, domain, run, name FROM actions WHERE deleted_at IS NOT NULL AND deleted_at < ?)`), before); err != nil {
			return err
		}
	}
	return nil
}
