package logs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// ShipEvery is the least time between two shipments of a log: what it
// gains in between goes in one. A follower on another replica is behind
// the writer by this much, plus its own poll (sse.TailPoll) and the
// store's round trips.
var ShipEvery = 250 * time.Millisecond

const (
	// shipChunk bounds a chunk (and what one shipment holds in memory).
	shipChunk = 64 << 10
	// shipTimeout bounds a shipment; shipLast the last one, retries
	// included, which Writer.Close waits for.
	shipTimeout = 10 * time.Second
	shipLast    = 10 * time.Second
	// shipRetry is the wait after a failed shipment.
	shipRetry = time.Second
)

var chunkBufs = sync.Pool{New: func() any { b := make([]byte, shipChunk); return &b }}

// Shipper copies what a log file gains to a Shared store, at the same
// offsets: woken by Notify, it reads the file from where it left off and
// writes what it finds, in chunks, then waits ShipEvery before the next
// shipment. A shipment that fails is tried again a second later, from
// the same offset (a write is idempotent). Close ships the rest.
type Shipper struct {
	to      Shared
	k       Key
	from    io.ReaderAt  // the file
	dropped func() int64 // what the bound dropped of the log so far
	onErr   func(error)

	wake chan struct{}
	stop chan struct{}
	done chan struct{}
	err  error // of the last shipment, once done

	// The goroutine's: what the store has.
	off, sentDropped int64
	failing          bool
	gone             bool // the store deleted the log (ErrGap): ship no more
}

// NewShipper starts shipping the log k, read from from, to to; the store
// holds its first off bytes already.
func NewShipper(to Shared, k Key, from io.ReaderAt, off int64, dropped func() int64, onErr func(error)) *Shipper {
	s := &Shipper{to: to, k: k, from: from, dropped: dropped, onErr: onErr, off: off,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	return s
}

// Notify says the file grew (or dropped bytes).
func (s *Shipper) Notify() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Close ships what the file has that the store has not, retrying for up
// to shipLast, and stops. It returns the last shipment's error.
func (s *Shipper) Close() error {
	close(s.stop)
	<-s.done
	return s.err
}

func (s *Shipper) run() {
	defer close(s.done)
	for {
		select {
		case <-s.wake:
		case <-s.stop:
			s.last()
			return
		}
		wait := ShipEvery
		ctx, cancel := context.WithTimeout(context.Background(), shipTimeout)
		if s.ship(ctx) != nil {
			wait = shipRetry
			s.Notify()
		}
		cancel()
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-s.stop:
			t.Stop()
			s.last()
			return
		}
	}
}

// last ships the rest, trying again until shipLast has passed.
func (s *Shipper) last() {
	ctx, cancel := context.WithTimeout(context.Background(), shipLast)
	defer cancel()
	for {
		if s.err = s.ship(ctx); s.err == nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(shipRetry / 2):
		}
	}
}

// ship writes what the file holds past off, a chunk at a time, and what
// the bound dropped when that changed.
func (s *Shipper) ship(ctx context.Context) error {
	if s.gone {
		return nil
	}
	bp := chunkBufs.Get().(*[]byte)
	defer chunkBufs.Put(bp)
	buf := *bp
	for {
		n, err := s.from.ReadAt(buf, s.off)
		if err != nil && !errors.Is(err, io.EOF) {
			return s.failed(err)
		}
		dropped := s.dropped()
		if n == 0 && dropped == s.sentDropped {
			s.failing = false
			return nil
		}
		if _, err := s.to.LogWrite(ctx, s.k, s.off, buf[:n], dropped); errors.Is(err, ErrGap) {
			s.gone = true
			return nil
		} else if err != nil {
			return s.failed(err)
		}
		s.off += int64(n)
		s.sentDropped = dropped
		if n < len(buf) {
			s.failing = false
			return nil
		}
	}
}

// failed tells the first failure of a series.
func (s *Shipper) failed(err error) error {
	if !s.failing {
		s.onErr(fmt.Errorf("ship the log %s to the shared store: %w", s.k, err))
	}
	s.failing = true
	return err
}
