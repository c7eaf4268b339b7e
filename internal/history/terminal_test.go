package history

import (
	"maps"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	v1 "taskactions/api/v1"
)

// TerminalLive holds what a starting server need not record again: the
// finished actions whose objects are still live, by the incarnation
// history has, and nothing that is unfinished, retired or deleted.
func TestTerminalLive(t *testing.T) {
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			s := st.open(t)
			gone := v1.RunID{Project: "p", Domain: "d", Run: "gone"}
			record(t, s,
				act(rid, "ok", "", "u-ok", "SUCCEEDED", 1, 2),
				act(rid, "bad", "ok", "u-bad", "FAILED", 1, 3),
				act(rid, "stopped", "ok", "u-stopped", "ABORTED", 1, 3),
				act(rid, "running", "ok", "u-running", "RUNNING", 1, 3),
				act(rid, "old", "ok", "u-old-1", "SUCCEEDED", 1, 2),
				act(rid, "old", "ok", "u-old-2", "QUEUED", 4, 4), // a new incarnation, unfinished
				act(rid, "retired", "ok", "u-retired", "SUCCEEDED", 1, 2),
				act(gone, "a0", "", "u-gone", "SUCCEEDED", 1, 2),
			)
			retired := act(rid, "retired", "ok", "u-retired", "SUCCEEDED", 1, 2)
			if ok, err := s.MarkRetired(ctx, []Action{retired}); err != nil || !ok[0] {
				t.Fatalf("MarkRetired: %v %v", ok, err)
			}
			if _, _, err := s.DeleteRun(ctx, gone, nil); err != nil {
				t.Fatal(err)
			}
			got, err := s.TerminalLive(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := map[types.UID]v1.Phase{"u-ok": v1.PhaseSucceeded, "u-bad": v1.PhaseFailed, "u-stopped": v1.PhaseAborted}
			if !maps.Equal(got, want) {
				t.Errorf("TerminalLive = %v, want %v", got, want)
			}
		})
	}
}
