package history

import (
	v1 "taskactions/api/v1"

	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"
)

// BenchmarkRunsPage reads the first page of 100 runs, and a page deep in
// the list (after the key of the run half way), of a project with 1,000
// and with 100,000 runs, in SQLite and PostgreSQL. Keyset pages cost the
// same wherever they start.
func BenchmarkRunsPage(b *testing.B) {
	for _, st := range stores(b) {
		for _, n := range []int{1000, 100000} {
			s := st.open(b)
			fillRuns(b, s, n)
			mid := RunKey{StartedAt: benchBase.Add(time.Duration(n/2) * time.Second), Run: fmt.Sprintf("r%06d", n/2)}
			for _, c := range []struct {
				name  string
				after *RunKey
			}{{"first", nil}, {"middle", &mid}} {
				b.Run(fmt.Sprintf("%s/%d/%s", st.name, n, c.name), func(b *testing.B) {
					for b.Loop() {
						rs, err := s.Runs(context.Background(), RunQuery{Project: "p", Domain: "d", After: c.after, Limit: 100})
						if err != nil || len(rs) != 100 {
							b.Fatalf("%d runs, %v", len(rs), err)
						}
					}
				})
			}
		}
	}
}

var benchBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// fillRuns writes n run summaries in one transaction (Record would take
// one each, which is not what is measured here).
func fillRuns(b *testing.B, s *Store, n int) {
	b.Helper()
	err := s.inTx(context.Background(), func(tx *sql.Tx) error {
		for i := range n {
			r := Run{ID: v1.RunID{Project: "p", Domain: "d", Run: fmt.Sprintf("r%06d", i)}, Phase: "SUCCEEDED", ActionCount: 100,
				PhaseCounts: map[string]int{"SUCCEEDED": 100}, StartedAt: benchBase.Add(time.Duration(i) * time.Second)}
			if err := s.writeRun(context.Background(), tx, r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRecord is one action's phase change recorded, with its run's
// summary, in each store: what the run service does per notification.
func BenchmarkRecord(b *testing.B) {
	view := []byte(strings.Repeat(`{"k":"v"},`, 150) + `{}`)
	for _, st := range stores(b) {
		s := st.open(b)
		b.Run(st.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				a := Action{Project: "p", Domain: "d", Run: fmt.Sprintf("r%d", i/100), Name: fmt.Sprintf("a%d", i%100),
					UID: fmt.Sprintf("u%d", i), Phase: "SUCCEEDED", CreatedAt: benchBase, UpdatedAt: benchBase, View: view}
				if i%100 != 0 {
					a.Parent = "a0"
				}
				if _, _, err := s.Record(context.Background(), a); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
