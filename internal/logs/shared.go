package logs

import (
	"context"
	"errors"
)

// ErrGap is a write past the end of what the shared store holds of a
// log: the log was deleted there (its run or action was) while its task
// still wrote. It is not the store's failure; the Shipper stops.
var ErrGap = errors.New("the shared store holds less of the log than the write follows")

// Shared is a store of logs that every replica reads: the history
// database (internal/history implements it). With one, a log is readable
// from any replica and outlives the one that wrote it:
//
//   - what a Writer writes goes to its local file first (the fast path,
//     and what followers on this replica read, woken at once), and a
//     Shipper copies what the file gains to Shared, in chunks, at the same
//     offsets, at most ShipEvery apart; Writer.Close ships the rest
//     before it returns, so an attempt reported ended has its whole log
//     there;
//   - what the API appends (Store.Append) goes to Shared only, in one
//     transaction that keeps the bound: its POSTs may land on any replica;
//   - a reader reads this replica's file when there is one (it holds at
//     least what Shared holds), else Shared.
//
// Without one, logs are files of the replica that wrote them.
type Shared interface {
	// LogStat returns a stream's size and what the bound dropped of it;
	// 0 and 0 for a stream never written.
	LogStat(ctx context.Context, k Key) (size, dropped int64, err error)
	// LogChunks returns, in order, the chunks that hold bytes of
	// [off, off+n) (the first may begin before off), fewer or none past
	// the end of what is stored.
	LogChunks(ctx context.Context, k Key, off int64, n int) ([]Chunk, error)
	// LogWrite stores p at off and sets what the bound dropped (it only
	// grows). off is at most the stored size: bytes of p already stored
	// (a retry after a commit that failed to answer) are skipped, so a
	// write is idempotent; off past the stored size is ErrGap. It returns
	// the size after.
	LogWrite(ctx context.Context, k Key, off int64, p []byte, dropped int64) (int64, error)
	// LogAppend appends to a stream, in one transaction that serializes
	// the appends to the attempt: fit decides from the attempt's tally
	// what is written and how much is dropped. It returns the stream's
	// size and dropped bytes after.
	LogAppend(ctx context.Context, k Key, fit func(Tally) (out []byte, dropped int64)) (size, dropped int64, err error)
}

// Chunk is bytes of a log at their offset.
type Chunk struct {
	Off  int64
	Data []byte
}

// End is the offset after the chunk.
func (c Chunk) End() int64 { return c.Off + int64(len(c.Data)) }

// Tally is what the bound decides an append on.
type Tally struct {
	Used    int64 // bytes of the attempt, both streams
	MidLine bool  // the stream does not end with a newline
	Dropped int64 // bytes the stream dropped so far
}

// fit is what of p an attempt keeps, given its tally: the bytes within
// the bound and, the first time the stream drops some, the notice that
// says so; and how many bytes it drops.
func (s *Store) fit(t Tally, st Stream, p []byte) ([]byte, int64) {
	keep := p[:min(int64(len(p)), max(s.max-t.Used, 0))]
	drop := int64(len(p) - len(keep))
	if drop == 0 || t.Dropped > 0 {
		return keep, drop
	}
	midLine := t.MidLine
	if len(keep) > 0 {
		midLine = keep[len(keep)-1] != '\n'
	}
	return append(keep[:len(keep):len(keep)], s.notice(st, midLine)...), drop
}
