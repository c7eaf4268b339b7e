package app

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Stop shuts down in order: HTTP server (streams end first), executor
// (its processes killed), the manager's controllers, watchers, then the
// control plane (API server, then etcd).
func (a *App) Stop() error {
	var errs []error
	if a.metricsSrv != nil {
		_ = a.metricsSrv.Close()
	}
	if a.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownGracePeriod)
		err := a.srv.Shutdown(ctx)
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			// A client still sending or waiting: the grace period is all it
			// gets. A stop is not a failure for that.
			a.log.Warn().Stringer("gracePeriod", a.cfg.ShutdownGracePeriod).Msg("requests still in flight after the grace period are cut off")
		case err != nil:
			errs = append(errs, fmt.Errorf("HTTP shutdown: %w", err))
		}
		if err != nil {
			_ = a.srv.Close()
		}
		a.stopStreams() // Shutdown did; Close does not
		if !waitGroup(ctx, &a.detached) {
			a.log.Warn().Msg("event streams still open after the grace period")
		}
		cancel()
	}
	if a.stopExecutor != nil {
		a.stopExecutor()
		<-a.executorDone
	}
	if a.stopControllers != nil {
		a.stopControllers()
		<-a.controllersDone
	}
	if a.promos != nil {
		a.promos.Stop()
	}
	if a.freight != nil {
		a.freight.Stop()
	}
	if a.stages != nil {
		a.stages.Stop()
	}
	if a.mgr != nil {
		a.mgr.StopWatching()
	}
	if a.access != nil && a.access.stopLogouts != nil {
		a.access.stopLogouts()
	}
	if a.history != nil {
		if err := a.history.Close(); err != nil {
			errs = append(errs, fmt.Errorf("history: %w", err))
		}
	}
	if a.cp != nil {
		if err := a.cp.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("control plane: %w", err))
		}
	}
	a.log.Info().Msg("stopped")
	return errors.Join(errs...)
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
