package logs

import (
	"context"
	"errors"
	"io"
)

// Reader is a log as it was when opened (a GET): this replica's file of
// it when there is one, else the shared store's copy, else empty. It
// reads the bytes up to the size it had then, as an io.ReaderAt and an
// io.ReadSeeker.
type Reader struct {
	at            io.ReaderAt // nil: empty
	close         func() error
	size, dropped int64
	pos           int64 // of Read
}

// OpenRead opens a log for reading. A log not written yet reads as empty
// (the attempt may not have begun).
func (s *Store) OpenRead(ctx context.Context, k Key) (*Reader, error) {
	if !k.valid() {
		return nil, ErrBadKey
	}
	f, err := s.openLocal(k)
	if err != nil {
		return nil, err
	}
	if f != nil {
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, err
		}
		return &Reader{at: f, close: f.Close, size: fi.Size(), dropped: s.Dropped(k)}, nil
	}
	sh := s.shared.Load()
	if sh == nil {
		return &Reader{}, nil
	}
	size, dropped, err := sh.to.LogStat(ctx, k)
	if err != nil {
		return nil, err
	}
	return &Reader{at: &sharedLog{ctx: ctx, to: sh.to, k: k}, size: size, dropped: dropped}, nil
}

// Size is the log's size when opened.
func (r *Reader) Size() int64 { return r.size }

// Dropped is what the log had lost to the bound when opened.
func (r *Reader) Dropped() int64 { return r.dropped }

// ReadAt reads within the size.
func (r *Reader) ReadAt(p []byte, off int64) (int, error) {
	if off >= r.size || r.at == nil {
		return 0, io.EOF
	}
	want := min(int64(len(p)), r.size-off)
	n, err := r.at.ReadAt(p[:want], off)
	if err == nil && int64(n) < int64(len(p)) {
		err = io.EOF
	}
	if errors.Is(err, io.EOF) && int64(n) < want {
		err = io.ErrUnexpectedEOF // the log had these bytes
	}
	return n, err
}

// Read reads on from the last Read or Seek.
func (r *Reader) Read(p []byte) (int, error) {
	n, err := r.ReadAt(p, r.pos)
	r.pos += int64(n)
	if n > 0 && errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

// Seek moves Read's offset; Seek(0, io.SeekEnd) is the size.
func (r *Reader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += r.pos
	case io.SeekEnd:
		offset += r.size
	}
	if offset < 0 {
		return 0, errors.New("logs: seek before the start")
	}
	r.pos = offset
	return offset, nil
}

// Close releases the file.
func (r *Reader) Close() error {
	if r.close != nil {
		return r.close()
	}
	return nil
}

// readAhead is the least a read asks of the shared store: a GET is read
// 32 KiB at a time, and a query each time would fetch the same chunk
// again and again.
const readAhead = 256 << 10

// sharedLog reads a log from the shared store, holding what its last
// query returned for the reads after it.
type sharedLog struct {
	ctx  context.Context
	to   Shared
	k    Key
	held []Chunk
}

// ReadAt reads as io.ReaderAt does: io.EOF when the store holds fewer
// bytes. A short read lets go of what it held (the next read of a
// follower starts where the log ended).
func (l *sharedLog) ReadAt(p []byte, off int64) (int, error) {
	n := l.copyHeld(p, off)
	if n < len(p) {
		chunks, err := l.to.LogChunks(l.ctx, l.k, off+int64(n), max(len(p)-n, readAhead))
		if err != nil {
			return n, err
		}
		l.held = chunks
		n += l.copyHeld(p[n:], off+int64(n))
	}
	if n < len(p) {
		l.held = nil
		return n, io.EOF
	}
	return n, nil
}

// copyHeld copies what the held chunks have of p's bytes from off on.
func (l *sharedLog) copyHeld(p []byte, off int64) int {
	n := 0
	for _, c := range l.held {
		at := off + int64(n)
		if n == len(p) || c.Off > at {
			break
		}
		if c.End() > at {
			n += copy(p[n:], c.Data[at-c.Off:])
		}
	}
	return n
}
