package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"taskactions/internal/app"
	"taskactions/internal/testenv/pg"
	"taskactions/pkg/client"
)

// The history suite runs against both stores: SQLite in the data dir (the
// default) and a real PostgreSQL (started once for the package).
func historyStores(t *testing.T) map[string]func(*app.Config) {
	return map[string]func(*app.Config){
		"sqlite": func(*app.Config) {},
		"postgres": func(c *app.Config) {
			dsn, err := postgresDatabase()
			if err != nil {
				t.Fatal(err)
			}
			c.HistoryDSN = dsn
		},
	}
}

var (
	pgOnce    sync.Once
	pgCluster *pg.Postgres
	pgErr     error
	pgSeq     int
	pgMu      sync.Mutex
)

// postgresDatabase makes an empty database on the package's PostgreSQL,
// started on first use and stopped by TestMain.
func postgresDatabase() (string, error) {
	pgOnce.Do(func() { pgCluster, pgErr = pg.StartPostgres() })
	if pgErr != nil {
		return "", fmt.Errorf("PostgreSQL did not start (make test installs it): %w", pgErr)
	}
	pgMu.Lock()
	pgSeq++
	n := pgSeq
	pgMu.Unlock()
	return pgCluster.CreateDatabase(fmt.Sprintf("e2e_%d", n))
}

func stopPostgres() {
	if pgCluster != nil {
		pgCluster.Stop()
	}
}

// get reads a path of the API with the admin token: status and body bytes.
func (s *server) get(t testing.TB, path string) (int, []byte) {
	t.Helper()
	resp, err := s.http.Get(s.url + "/api/v1" + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// liveObjects counts a run's TaskAction objects in the server's cache.
func liveObjects(s *server, run client.RunIdentifier) int {
	n := 0
	for _, ta := range s.app.Manager().Cache().All() {
		if ta.Spec.Project == run.Project && ta.Spec.Domain == run.Domain && ta.Spec.RunName == run.Name {
			n++
		}
	}
	return n
}

// A run read while its objects are live, and again once retention has
// moved them to history (and after a restart), reads the same, byte for
// byte: each action, the lists, the children, the summary, and the
// stream's snapshot. Deleting it through the API then removes it from
// history.
//
// It reads better whole: one scenario, its steps in the order a user takes them.
func TestRetiredRunReadsTheSame(t *testing.T) {
	for name, store := range historyStores(t) {
		t.Run(name, func(t *testing.T) {
			dataDir := filepath.Join(t.TempDir(), "data")
			var storeCfg app.Config
			store(&storeCfg) // once: a new PostgreSQL database each call
			configure := func(c *app.Config) { c.HistoryDSN = storeCfg.HistoryDSN; c.Retention = 2 * time.Second }
			s, err := startServer(dataDir, configure)
			if err != nil {
				t.Fatal(err)
			}
			run := newRun()
			names := []string{"root", "c1", "c2", "c3"}
			for _, n := range names {
				parent := "root"
				if n == "root" {
					parent = ""
				}
				resp, err := s.api.EnqueueActionWithResponse(context.Background(), actionSpec(run, n, parent, "echo"))
				if err != nil || resp.StatusCode() != http.StatusCreated {
					t.Fatalf("enqueue %s: %v %s", n, err, resp.Body)
				}
			}
			base := fmt.Sprintf("/projects/%s/domains/%s", run.Project, run.Domain)
			eventually(t, 20*time.Second, "the run to succeed", func() bool {
				code, b := s.get(t, base+"/runs/"+run.Name)
				return code == 200 && contains(string(b), `"phaseCounts":{"SUCCEEDED":4}`)
			})
			paths := []string{base + "/runs/" + run.Name, base + "/runs/" + run.Name + "/actions",
				base + "/runs/" + run.Name + "/actions/root/children", base + "/runs/" + run.Name + "/actions?limit=2"}
			for _, n := range names {
				paths = append(paths, base+"/runs/"+run.Name+"/actions/"+n)
			}
			read := func(s *server) map[string]string {
				out := map[string]string{}
				for _, p := range paths {
					code, b := s.get(t, p)
					out[p] = fmt.Sprintf("%d %s", code, b)
				}
				out["stream"] = snapshotOf(t, s, run)
				return out
			}
			if liveObjects(s, run) != len(names) {
				t.Fatalf("the objects were retired before the live read")
			}
			live := read(s)

			eventually(t, 30*time.Second, "retention to retire the run's objects", func() bool { return liveObjects(s, run) == 0 })
			assertSameReads(t, "retired", live, read(s))

			if err := s.Stop(); err != nil {
				t.Fatal(err)
			}
			s, err = startServer(dataDir, configure)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Stop()
			assertSameReads(t, "retired, after a restart", live, read(s))

			// Enqueueing a retired action again makes nothing (its task would
			// run twice); another spec for it is a conflict.
			for taskType, want := range map[string]int{"echo": http.StatusOK, "sleep": http.StatusConflict} {
				resp, err := s.api.EnqueueActionWithResponse(context.Background(), actionSpec(run, "c1", "root", taskType))
				if err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode() != want {
					t.Errorf("enqueue the retired c1 again as %s: %d %s, want %d", taskType, resp.StatusCode(), resp.Body, want)
				}
			}
			if n := liveObjects(s, run); n != 0 {
				t.Errorf("%d objects after enqueueing a retired action again", n)
			}

			if code := s.deleteAction(t, run, "c1", false); code != http.StatusAccepted {
				t.Fatalf("delete a retired action: %d", code)
			}
			if code, b := s.get(t, base+"/runs/"+run.Name); code != 200 || !contains(string(b), `"actionCount":3,`) {
				t.Errorf("the run after deleting a retired action: %d %s", code, b)
			}
			if code, _ := s.get(t, base+"/runs/"+run.Name+"/actions/c1"); code != http.StatusNotFound {
				t.Errorf("GET the deleted retired action: %d", code)
			}
			if code := s.deleteRun(t, run, false); code != http.StatusAccepted {
				t.Fatalf("delete the retired run: %d", code)
			}
			for _, p := range []string{base + "/runs/" + run.Name, base + "/runs/" + run.Name + "/actions/c2"} {
				if code, b := s.get(t, p); code != http.StatusNotFound {
					t.Errorf("GET %s after deleting the run: %d %s", p, code, b)
				}
			}
			if _, b := s.get(t, base+"/runs"); contains(string(b), `"name":"`+run.Name+`"`) {
				t.Errorf("the deleted run is still listed: %s", b)
			}
		})
	}
}

func assertSameReads(t *testing.T, when string, want, got map[string]string) {
	t.Helper()
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %s reads\n%s\nwhile live it read\n%s", when, k, got[k], w)
		}
	}
}

// snapshotOf is a run stream's snapshot: its action events' data, sorted
// (the order of a snapshot is not part of the contract), and the synced
// count.
func snapshotOf(t testing.TB, s *server, run client.RunIdentifier) string {
	st := openStream(t, s.http, runStreamURL(s, run), "")
	defer st.close()
	var data []string
	for _, ev := range st.untilSynced(t) {
		if ev.Type == "action" {
			data = append(data, string(ev.Data))
		}
	}
	sort.Strings(data)
	return strings.Join(data, "\n")
}

// Paging through a project's runs while new runs start: every run that
// was there at the start is seen exactly once, and no run twice.
func TestRunPagesWhileRunsArrive(t *testing.T) {
	first := newRun()
	project, domain := first.Project, first.Domain
	runName := func(i int) string { return fmt.Sprintf("page%03d", i) }
	for i := range 25 {
		enqueue(t, srv, client.RunIdentifier{Project: project, Domain: domain, Name: runName(i)}, "root", "")
	}
	seen := map[string]int{}
	var cont *string
	for page := 0; ; page++ {
		// A new run between pages.
		enqueue(t, srv, client.RunIdentifier{Project: project, Domain: domain, Name: runName(100 + page)}, "root", "")
		limit := 4
		params := &client.ListRunsParams{Limit: &limit, Continue: cont}
		resp, err := srv.api.ListRunsWithResponse(context.Background(), project, domain, params)
		if err != nil || resp.JSON200 == nil {
			t.Fatalf("page %d: %v %s", page, err, resp.Body)
		}
		if len(resp.JSON200.Items) > limit {
			t.Fatalf("page %d has %d items, limit %d", page, len(resp.JSON200.Items), limit)
		}
		for _, r := range resp.JSON200.Items {
			seen[r.Run.Name]++
		}
		if cont = resp.JSON200.Continue; cont == nil {
			break
		}
		if page > 50 {
			t.Fatal("paging does not end")
		}
	}
	for i := range 25 {
		if seen[runName(i)] != 1 {
			t.Errorf("run %s seen %d times, want once", runName(i), seen[runName(i)])
		}
	}
	for name, n := range seen {
		if n > 1 {
			t.Errorf("run %s seen %d times", name, n)
		}
	}

	// A filter on phase, and a bad token.
	phases := []client.Phase{client.SUCCEEDED}
	resp, err := srv.api.ListRunsWithResponse(context.Background(), project, domain, &client.ListRunsParams{Phase: &phases})
	if err != nil || resp.JSON200 == nil || len(resp.JSON200.Items) != 0 {
		t.Errorf("runs of phase SUCCEEDED (none is): %v %s", err, resp.Body)
	}
	bad := "not-a-token"
	resp, err = srv.api.ListRunsWithResponse(context.Background(), project, domain, &client.ListRunsParams{Continue: &bad})
	if err != nil || resp.StatusCode() != http.StatusBadRequest || !contains(string(resp.Body), "continue") {
		t.Errorf("a bad continue token: %v %d %s", err, resp.StatusCode(), resp.Body)
	}
}

// Pages of a run's actions: with a limit and continue, every action once,
// oldest first.
func TestRunActionPages(t *testing.T) {
	run := newRun()
	names := []string{"a0", "a1", "a2", "a3", "a4", "a5", "a6"}
	for _, n := range names {
		enqueue(t, srv, run, n, "")
	}
	var got []string
	var cont *string
	for {
		limit := 3
		resp, err := srv.api.ListRunActionsWithResponse(context.Background(), run.Project, run.Domain, run.Name,
			&client.ListRunActionsParams{Limit: &limit, Continue: cont})
		if err != nil || resp.JSON200 == nil {
			t.Fatalf("%v %s", err, resp.Body)
		}
		for _, a := range resp.JSON200.Items {
			got = append(got, a.ActionId.Name)
		}
		if cont = resp.JSON200.Continue; cont == nil {
			break
		}
	}
	// Oldest first; created within the same second, by name.
	if !slices.Equal(got, names) {
		t.Fatalf("pages gave %v, want each of %v once", got, names)
	}
}
