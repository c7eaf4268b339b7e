package outputs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	v1 "taskactions/api/v1"
)

// heldRuns holds the runs named "project/domain/run"; asking about the
// one named failing fails.
type heldRuns struct {
	held    []string
	failing string
}

func (h heldRuns) Exists(_ context.Context, r v1.RunID) (bool, error) {
	name := r.Project + "/" + r.Domain + "/" + r.Run
	if name == h.failing {
		return false, errors.New("history does not answer")
	}
	return slices.Contains(h.held, name), nil
}

// TestSweep: a run's directory goes once its run is gone, and only then;
// one changed within the interval stays (its run may be too new for the
// caches and history); a run that cannot be asked about stays; what is
// not a run's directory stays.
func TestSweep(t *testing.T) {
	root := t.TempDir()
	write := func(rel string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("p/dev/live/a0/stdout-1.log")
	write("p/dev/gone/a0/outputs.json")
	write("p/dev/gone/a1/stdout-1.log")
	write("p/dev/unknown/a0/outputs.json")
	write("q/prod/retired/a0/stdout-1.log")
	write("p/dev/stray-file")
	write("stray-file")
	// Every run's directory but fresh's last changed two hours ago.
	long := time.Now().Add(-2 * time.Hour)
	for _, run := range []string{"p/dev/live", "p/dev/gone", "p/dev/unknown", "q/prod/retired"} {
		if err := os.Chtimes(filepath.Join(root, run), long, long); err != nil {
			t.Fatal(err)
		}
	}
	write("p/dev/fresh/a0/outputs.json")

	s := New(Config{Root: root, Runs: heldRuns{held: []string{"p/dev/live", "q/prod/retired"}, failing: "p/dev/unknown"}, Log: zerolog.Nop()})
	n, err := s.Sweep(context.Background())
	if n != 1 || err == nil {
		t.Errorf("Sweep = %d, %v; want 1 removed and the error of the run it could not ask about", n, err)
	}
	for rel, want := range map[string]bool{
		"p/dev/live/a0/stdout-1.log":     true,
		"p/dev/gone":                     false,
		"p/dev/fresh/a0/outputs.json":    true,
		"p/dev/unknown/a0/outputs.json":  true,
		"q/prod/retired/a0/stdout-1.log": true,
		"p/dev/stray-file":               true,
		"stray-file":                     true,
	} {
		_, err := os.Stat(filepath.Join(root, rel))
		if got := err == nil; got != want {
			t.Errorf("%s: there %v, want %v", rel, got, want)
		}
	}

	// Nothing written yet: no root, nothing to do.
	if n, err := New(Config{Root: filepath.Join(root, "none"), Runs: heldRuns{}}).Sweep(context.Background()); n != 0 || err != nil {
		t.Errorf("Sweep of a missing root = %d, %v", n, err)
	}
}
