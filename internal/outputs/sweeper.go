// Package outputs removes the output directories of runs that are gone.
//
// Each replica's executor writes the files of the actions it runs (their
// logs, outputs.json, what a process task leaves) on its own disk, under
// <root>/<project>/<domain>/<run>/<action>. Deleting a run or an action
// through the API removes it from the control plane and from history,
// but not from every replica's disk. The Sweeper, which every replica runs
// over its own root, removes a run's directory once neither the control
// plane nor history holds the run. (An action deleted alone keeps its
// directory until its run goes.)
package outputs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	v1 "taskactions/api/v1"
)

// Runs is what the sweeper asks of the action manager and history.
type Runs interface {
	// Exists reports whether the control plane or history holds any
	// action of the run.
	Exists(ctx context.Context, run v1.RunID) (bool, error)
}

// Config configures a Sweeper.
type Config struct {
	// Root is the executor's output root.
	Root string
	Runs Runs
	// Every is the time between sweeps (default an hour), the first one
	// interval after the start (the server starts the sweeper once its
	// caches are synced and history is open). It is also the grace of a
	// run's directory: one changed within it is kept, since the run may
	// be one the caches and history have not recorded yet (new, or new
	// again under the name of a deleted one).
	Every time.Duration
	Log   zerolog.Logger
}

// Sweeper removes what is gone from Root.
type Sweeper struct{ cfg Config }

// New returns a sweeper; Run runs it.
func New(cfg Config) *Sweeper {
	if cfg.Every <= 0 {
		cfg.Every = time.Hour
	}
	return &Sweeper{cfg: cfg}
}

// Run sweeps every cfg.Every until ctx ends. A failed sweep is logged and
// tried again at the next.
func (s *Sweeper) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		n, err := s.Sweep(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			s.cfg.Log.Warn().Err(err).Int("removed", n).Msg("sweep the output dirs")
		case n > 0:
			s.cfg.Log.Info().Int("removed", n).Msg("removed the output dirs of deleted runs")
		}
	}
}

// Sweep removes, once, the directories of runs that are gone, and reports
// how many it removed. A run it cannot ask about is kept; the errors are
// returned, joined, once the others have been swept.
func (s *Sweeper) Sweep(ctx context.Context) (int, error) {
	runs, err := s.runDirs()
	if err != nil {
		return 0, err
	}
	removed, errs := 0, []error{}
	for _, r := range runs {
		if ctx.Err() != nil {
			break
		}
		n, err := s.sweepRun(ctx, r)
		removed += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}

// sweepRun removes the run's directory when the run is gone and the
// directory has not changed for an interval.
func (s *Sweeper) sweepRun(ctx context.Context, r v1.RunID) (int, error) {
	dir := filepath.Join(s.cfg.Root, r.Project, r.Domain, r.Run)
	info, err := os.Stat(dir)
	if err != nil || time.Since(info.ModTime()) < s.cfg.Every {
		return 0, err
	}
	exists, err := s.cfg.Runs.Exists(ctx, r)
	if err != nil {
		return 0, fmt.Errorf("run %s/%s/%s: %w", r.Project, r.Domain, r.Run, err)
	}
	if exists {
		return 0, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return 0, err
	}
	return 1, nil
}

// runDirs lists the run directories under Root (three levels down), and
// nothing else: a stray file or a name no run can have is left alone.
func (s *Sweeper) runDirs() ([]v1.RunID, error) {
	var out []v1.RunID
	projects, err := subdirs(s.cfg.Root)
	if err != nil {
		return nil, err
	}
	for _, p := range projects {
		domains, err := subdirs(filepath.Join(s.cfg.Root, p))
		if err != nil {
			return nil, err
		}
		for _, d := range domains {
			runs, err := subdirs(filepath.Join(s.cfg.Root, p, d))
			if err != nil {
				return nil, err
			}
			for _, r := range runs {
				out = append(out, v1.RunID{Project: p, Domain: d, Run: r})
			}
		}
	}
	return out, nil
}

// subdirs are the names of the directories in dir (none when dir is not
// there: no task has run yet).
func subdirs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}
