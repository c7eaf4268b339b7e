package process

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"taskactions/internal/executor/plugins"
)

// How an attempt's processes end, other than by their own exit: abort,
// finalize, the server's stop, and what an earlier server left.

// Abort kills the attempt's process group: SIGTERM, then SIGKILL after a
// grace period.
func (p *Plugin) Abort(ctx context.Context, tc *plugins.TaskContext) error {
	p.slots.forget(key(tc))
	p.mu.Lock()
	pr := p.running[key(tc)]
	p.mu.Unlock()
	if pr == nil {
		var st State
		if _, ok, _ := tc.LoadState(&st); ok && st.Instance != p.instance {
			p.killOrphan(st)
		}
		return nil
	}
	return p.kill(ctx, pr)
}

func (p *Plugin) kill(ctx context.Context, pr *proc) error {
	pr.gate.shut() // held, it exits at once, having run nothing
	pgid := pr.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-pr.done:
	case <-time.After(2 * time.Second):
	case <-ctx.Done():
	}
	// The leader may be gone while others of its group live on.
	err := syscall.Kill(-pgid, syscall.SIGKILL)
	p.cgroups.kill(pr.marker)
	p.sweep(pr.marker)
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill process group %d: %w", pgid, err)
	}
	<-pr.done
	return nil
}

// Finalize forgets the attempt (killing it if it still runs).
func (p *Plugin) Finalize(ctx context.Context, tc *plugins.TaskContext) error {
	p.slots.forget(key(tc))
	p.mu.Lock()
	pr := p.running[key(tc)]
	delete(p.running, key(tc))
	p.mu.Unlock()
	if pr != nil {
		return p.kill(ctx, pr)
	}
	return nil
}

// Shutdown kills every process group this plugin started and returns the
// attempts that had not finished: nothing outlives the server.
func (p *Plugin) Shutdown(ctx context.Context) []plugins.Interrupted {
	p.mu.Lock()
	procs := make([]*proc, 0, len(p.running))
	for _, pr := range p.running {
		procs = append(procs, pr)
	}
	p.mu.Unlock()
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		cut []plugins.Interrupted
	)
	for _, pr := range procs {
		select {
		case <-pr.done:
			continue // finished: its outcome is the executor's to record
		default:
		}
		wg.Go(func() {
			_ = p.kill(ctx, pr)
			mu.Lock()
			cut = append(cut, pr.tc)
			mu.Unlock()
		})
	}
	wg.Wait()
	p.cgroups.remove()
	p.reaper.sweepRoot()
	return cut
}

// sweep kills, without cgroups, what the attempt with marker left and
// what ended attempts left (reaper.go).
func (p *Plugin) sweep(marker string) {
	if !p.reaper.on {
		return
	}
	p.mu.Lock()
	shims, markers := map[int]bool{}, map[string]bool{}
	for _, pr := range p.running {
		shims[pr.cmd.Process.Pid] = true
		if pr.marker != marker {
			markers[pr.marker] = true
		}
	}
	p.mu.Unlock()
	p.reaper.sweep(marker, func(pi procInfo) bool {
		return shims[pi.pid] || markers[pi.env[markerEnv]]
	})
}

// killOrphan kills what an earlier server process started for an attempt:
// the process group of its recorded pid if that very process still runs
// (same start time), and every process carrying its marker.
func (p *Plugin) killOrphan(st State) {
	p.cgroups.kill(st.Marker)
	if st.PID > 0 && st.StartTicks != 0 && startTicks(st.PID) == st.StartTicks {
		_ = syscall.Kill(-st.PID, syscall.SIGKILL)
	}
	if st.Marker != "" {
		killMarked(st.Marker)
	}
}

// SweptAtStart: with cgroups or as a subreaper, the plugin ended at its
// start whatever a killed server left (Cgroups, Subreap), so its actions
// need no finalizer (plugins.Swept). Without either, only the finalizer
// has the next server kill what an action deleted while none ran left
// (killOrphan, through Abort).
func (p *Plugin) SweptAtStart() bool { return p.cgroups.root != "" || p.reaper.on }
