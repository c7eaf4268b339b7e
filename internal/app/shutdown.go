package app

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Stop shuts down: the HTTP server first (streams end, requests get the
// grace period), then every part in the reverse of its start (parts.go):
// the executor (its processes killed), the controllers, the caches, the
// history store, the control plane (API server, then etcd). It may be
// called more than once; the later calls return what the first did.
func (a *App) Stop() error {
	a.stopOnce.Do(func() {
		a.stopErr = errors.Join(a.shutdownHTTP(), a.parts.Stop())
		a.log.Info().Msg("stopped")
	})
	return a.stopErr
}

// shutdownHTTP stops the HTTP server within the grace period and ends
// the event streams.
func (a *App) shutdownHTTP() error {
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownGracePeriod)
	defer cancel()
	err := a.srv.Shutdown(ctx)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		// A client still sending or waiting: the grace period is all it
		// gets. A stop is not a failure for that.
		a.log.Warn().Stringer("gracePeriod", a.cfg.ShutdownGracePeriod).Msg("requests still in flight after the grace period are cut off")
		err = nil
	case err != nil:
		err = fmt.Errorf("HTTP shutdown: %w", err)
	}
	if err != nil || ctx.Err() != nil {
		// Cut off what the grace period did not end. (After a clean
		// Shutdown, Close would only report the listener closed twice.)
		if cerr := a.srv.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("HTTP close: %w", cerr)
		}
	}
	a.stopStreams() // Shutdown did; Close does not
	if !waitGroup(ctx, &a.detached) {
		a.log.Warn().Msg("event streams still open after the grace period")
	}
	return err
}

// waitGroup waits for wg until ctx ends, and reports whether wg is done.
// Past the deadline wg still gets a second: a request that held the stop
// to its deadline leaves none to whatever was told to end after it.
func waitGroup(ctx context.Context, wg *sync.WaitGroup) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-ctx.Done():
	}
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
