package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/app"
	"taskactions/pkg/client"
)

// A Promotion's life: abort, the Stage's queue, the streams, and a server
// SIGKILLed in the middle of one.

// While a step runs, abort ends its action ABORTED, the step Aborted, the
// Promotion Aborted (no later step, not even an always() one) and the
// run's root ABORTED; a Promotion waiting its turn ends Aborted at once.
func TestPromotionAbort(t *testing.T) {
	k := newKProject(t, srv)
	k.createStage("slow", direct(), nil,
		pstep("echo", "first", nil),
		pstep("sleep", "nap", map[string]any{"duration": "1m"}),
		withIf(pstep("echo", "after", nil), "${{ always() }}"))
	f := k.createFreight("1.0.0", "")
	p := k.promote("slow", f.Name)
	eventually(t, 15*time.Second, "the step nap to run", func() bool {
		p = k.promotion(p.Name)
		return slices.Equal(steps(p), []string{"first=Succeeded", "nap=Running"}) && k.actions(p.Name)["step-2"].Phase == client.RUNNING
	})
	// One waiting behind it ends at once, without a run.
	q := k.promote("slow", f.Name)
	eventually(t, 10*time.Second, "the second to wait", func() bool {
		return k.promotion(q.Name).Status.Phase == kargoapi.PromotionPhasePending
	})
	into[kargoapi.Promotion](t, k.abort(q.Name), http.StatusOK)
	if q = k.finished(q.Name); q.Status.Phase != kargoapi.PromotionPhaseAborted || len(q.Status.StepExecutionMetadata) != 0 || len(k.actions(q.Name)) != 0 {
		t.Errorf("aborted while waiting: %s, steps %v, %d actions", q.Status.Phase, steps(q), len(k.actions(q.Name)))
	}
	if got := k.promotion(p.Name); got.Status.Phase != kargoapi.PromotionPhaseRunning {
		t.Errorf("the running one after the abort of the waiting one: %s", got.Status.Phase)
	}

	r := into[kargoapi.Promotion](t, k.abort(p.Name), http.StatusOK)
	if a := r.Annotations[kargoapi.AnnotationKeyAbort]; !strings.Contains(a, `"actor":"subject:`) {
		t.Errorf("abort annotation %q", a)
	}
	p = k.finished(p.Name)
	if p.Status.Phase != kargoapi.PromotionPhaseAborted || !slices.Equal(steps(p), []string{"first=Succeeded", "nap=Aborted"}) {
		t.Errorf("aborted Promotion: %s %q, steps %v", p.Status.Phase, p.Status.Message, steps(p))
	}
	acts := k.actions(p.Name)
	if acts["promotion"].Phase != client.ABORTED || acts["step-1"].Phase != client.SUCCEEDED || acts["step-2"].Phase != client.ABORTED || len(acts) != 3 {
		t.Errorf("run: root %s, step-1 %s, step-2 %s, %d actions", acts["promotion"].Phase, acts["step-1"].Phase, acts["step-2"].Phase, len(acts))
	}
	eventually(t, 10*time.Second, "the Stage's last Promotion", func() bool {
		st := k.stage("slow")
		c := condition(st, kargoapi.ConditionTypeReady)
		lp := st.Status.LastPromotion
		return lp != nil && lp.Name == q.Name && lp.Status != nil && lp.Status.Phase == kargoapi.PromotionPhaseAborted &&
			c != nil && c.Status == "False" && c.Reason == "LastPromotionAborted"
	})
	// Again: nothing changes.
	if again := into[kargoapi.Promotion](t, k.abort(p.Name), http.StatusOK); again.Status.Phase != kargoapi.PromotionPhaseAborted {
		t.Errorf("second abort: %s", again.Status.Phase)
	}
}

// hungService is an HTTP service that never answers, until the test ends.
func hungService(t *testing.T) *httptest.Server {
	stuck := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-stuck }))
	t.Cleanup(hung.Close)
	t.Cleanup(func() { close(stuck) }) // runs first: Close waits for the handlers
	return hung
}

// retry.timeout bounds a step that does its work within one round of its
// action, as http and Kargo's built-in steps do: an http step whose
// service never answers ends Errored with Kargo's message once the
// timeout passes, and its attempt TIMED_OUT. (The executor checked the
// timeout only before each round, so the step ran on until the service
// answered, here for good.)
func TestPromotionStepTimesOutWithinItsRound(t *testing.T) {
	hung := hungService(t)
	k := newKProject(t, srv)
	call := pstep("http", "call", map[string]any{"url": hung.URL, "timeout": "10m"})
	call.Retry = &kargoapi.PromotionStepRetry{Timeout: &metav1.Duration{Duration: 2 * time.Second}}
	k.createStage("hung", direct(), nil, call)
	p := k.finished(k.promote("hung", k.createFreight("1.0.0", "").Name).Name)
	if p.Status.Phase != kargoapi.PromotionPhaseErrored || p.Status.Message != `step "call" timed out after 2s` {
		t.Errorf("Promotion: %s %q, want Errored, the step timed out", p.Status.Phase, p.Status.Message)
	}
	if a := k.actions(p.Name)["step-1"]; a.Phase != client.TIMEDOUT {
		t.Errorf("the step's action ended %s, want TIMED_OUT", a.Phase)
	}
}

// An abort ends a step that waits within its round for a service that
// never answers: the step ends Aborted and the Promotion Aborted, without
// waiting for the answer (before, the abort waited for it, here for good).
func TestPromotionAbortEndsAWaitingStep(t *testing.T) {
	hung := hungService(t)
	k := newKProject(t, srv)
	k.createStage("waits", direct(), nil,
		pstep("http", "call", map[string]any{"url": hung.URL, "timeout": "10m"}),
		pstep("echo", "after", nil))
	p := k.promote("waits", k.createFreight("1.0.0", "").Name)
	eventually(t, 15*time.Second, "the step call to run", func() bool {
		return slices.Equal(steps(k.promotion(p.Name)), []string{"call=Running"})
	})
	into[kargoapi.Promotion](t, k.abort(p.Name), http.StatusOK)
	p = k.finished(p.Name)
	if p.Status.Phase != kargoapi.PromotionPhaseAborted || !slices.Equal(steps(p), []string{"call=Aborted"}) {
		t.Errorf("aborted Promotion: %s %q, steps %v; want Aborted, call Aborted", p.Status.Phase, p.Status.Message, steps(p))
	}
	if a := k.actions(p.Name)["step-1"]; a.Phase != client.ABORTED {
		t.Errorf("the step's action ended %s, want ABORTED", a.Phase)
	}
}

// A Stage deleted while its Promotion runs: the Promotion ends Errored at
// once, as in Kargo, and its running step is aborted rather than left to
// run for a Stage that is gone. (Before, nothing happened until the step
// ended: the deletion of a Stage woke no Promotion.)
func TestPromotionOfADeletedStage(t *testing.T) {
	k := newKProject(t, srv)
	k.createStage("gone", direct(), nil, pstep("sleep", "nap", map[string]any{"duration": "1m"}))
	p := k.promote("gone", k.createFreight("1.0.0", "").Name)
	eventually(t, 15*time.Second, "the step nap to run", func() bool {
		return slices.Equal(steps(k.promotion(p.Name)), []string{"nap=Running"}) && k.actions(p.Name)["step-1"].Phase == client.RUNNING
	})
	if r := stageDelete(t, k.name, "gone"); r.code != http.StatusNoContent && r.code != http.StatusOK {
		t.Fatalf("delete the Stage: %d %s", r.code, r.body)
	}
	p = k.finished(p.Name)
	if p.Status.Phase != kargoapi.PromotionPhaseErrored || p.Status.Message != `Stage "gone" not found` {
		t.Errorf("Promotion: %s %q, want Errored, the Stage not found", p.Status.Phase, p.Status.Message)
	}
	eventually(t, 15*time.Second, "the step's action to be aborted", func() bool {
		return k.actions(p.Name)["step-1"].Phase == client.ABORTED
	})
}

// A Promotion deleted while it runs (kubectl delete: the API has no such
// operation) takes its run with it: the step in flight (a git-clone from
// a server that never answers) and the run's root end ABORTED, saying
// why, instead of running on for a Promotion no one can see any more; then
// its working directory goes.
func TestPromotionDeletedWhileItRuns(t *testing.T) {
	hung := hungService(t)
	// The shared server runs no git step.
	s := gitServer(t, "", nil)
	k := newKProject(t, s)
	k.createStage("del", direct(), nil, pstep("git-clone", "clone", map[string]any{
		"repoURL": hung.URL + "/repo.git", "checkout": []any{map[string]any{"branch": "main", "path": "out"}}}))
	p := k.promote("del", k.createFreight("1.0.0", "").Name)
	work := filepath.Join(s.dataDir, "kargo-work", k.name, runOf(p.Name))
	eventually(t, 15*time.Second, "the step clone to run in its working directory", func() bool {
		_, err := os.Stat(work)
		return slices.Equal(steps(k.promotion(p.Name)), []string{"clone=Running"}) && err == nil
	})
	kc := newKubectl(t)
	kc.kubeconfig = filepath.Join(s.dataDir, "kubeconfig")
	kc.must("", "delete", "promotion", "-n", k.name, p.Name)
	eventually(t, 15*time.Second, "the run to be aborted and its working directory removed", func() bool {
		a := k.actions(p.Name)
		_, err := os.Stat(work)
		return a["step-1"].Phase == client.ABORTED && a["promotion"].Phase == client.ABORTED && os.IsNotExist(err)
	})
	want := fmt.Sprintf("Promotion %q was deleted", p.Name)
	for name, a := range k.actions(p.Name) {
		if a.AbortReason == nil || *a.AbortReason != want {
			t.Errorf("%s: abort reason %v, want %q", name, a.AbortReason, want)
		}
	}
}

// Two Promotions of one Stage: the second waits, Pending and without a
// run, while the Stage's currentPromotion is the first; then it runs. Both
// succeed, in creation order.
func TestPromotionQueue(t *testing.T) {
	succeeded := finishedCount(t, "Succeeded")
	k := newKProject(t, srv)
	k.createStage("q", direct(), nil, pstep("sleep", "wait", map[string]any{"duration": "1500ms"}))
	f1, f2 := k.createFreight("1.0.0", ""), k.createFreight("2.0.0", "")
	p1, p2 := k.promote("q", f1.Name), k.promote("q", f2.Name)
	if p1.Name >= p2.Name {
		t.Errorf("names %s, %s: want creation order", p1.Name, p2.Name)
	}
	eventually(t, 10*time.Second, "the first to run", func() bool {
		return k.promotion(p1.Name).Status.Phase == kargoapi.PromotionPhaseRunning
	})
	if cur := k.stage("q").Status.CurrentPromotion; cur == nil || cur.Name != p1.Name || cur.Freight == nil || cur.Freight.Name != f1.Name {
		t.Errorf("currentPromotion %+v, want %s", cur, p1.Name)
	}
	if q := k.promotion(p2.Name); q.Status.Phase != kargoapi.PromotionPhasePending || q.Status.Freight == nil || q.Status.Freight.Name != f2.Name {
		t.Errorf("the second, while the first runs: %s, freight %+v", q.Status.Phase, q.Status.Freight)
	}
	if acts := k.actions(p2.Name); len(acts) != 0 {
		t.Errorf("the second has a run of %d actions while it waits", len(acts))
	}
	// The second is never seen started before the first has ended (read
	// the second first: what it shows happened before the first's read).
	eventually(t, 20*time.Second, "both to end", func() bool {
		second, first := k.promotion(p2.Name), k.promotion(p1.Name)
		if second.Status.Phase != kargoapi.PromotionPhasePending && !first.Status.Phase.IsTerminal() {
			t.Fatalf("the second is %s while the first is %s", second.Status.Phase, first.Status.Phase)
		}
		return second.Status.Phase.IsTerminal()
	})
	for _, p := range []kargoapi.Promotion{k.promotion(p1.Name), k.promotion(p2.Name)} {
		if p.Status.Phase != kargoapi.PromotionPhaseSucceeded {
			t.Errorf("%s: %s %q", p.Name, p.Status.Phase, p.Status.Message)
		}
	}
	eventually(t, 10*time.Second, "the Stage's history", func() bool {
		st := k.stage("q").Status
		return st.LastPromotion != nil && st.LastPromotion.Name == p2.Name && len(st.FreightHistory) == 2 &&
			st.FreightHistory[0].Includes(f2.Name) && st.FreightHistory[1].Includes(f1.Name) && st.CurrentPromotion == nil
	})
	// Other tests' Promotions may end meanwhile: at least these two.
	if got := finishedCount(t, "Succeeded") - succeeded; got < 2 {
		t.Errorf("taskactions_promotions_finished_total{phase=\"Succeeded\"} grew by %v, want at least 2", got)
	}
}

// finishedCount reads the server's count of Promotions ended in phase.
func finishedCount(t *testing.T, phase string) float64 {
	t.Helper()
	resp, err := srv.http.Get(srv.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	prefix := `taskactions_promotions_finished_total{phase="` + phase + `"} `
	for _, line := range strings.Split(readAll(t, resp.Body), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return n
		}
	}
	return 0 // none has ended so
}

// promotionEvent is the data of a `promotion` event.
type promotionEvent struct {
	kargoapi.Promotion
	Deleted *bool `json:"deleted"`
}

// promotionOf decodes a `promotion` event: deleted false, its id the
// resource version (0 in a snapshot).
func promotionOf(t testing.TB, ev client.Event) promotionEvent {
	t.Helper()
	if ev.Type != "promotion" {
		t.Fatalf("%s event %s, want a promotion event", ev.Type, ev.Data)
	}
	var p promotionEvent
	mustJSON(t, ev.Data, &p)
	if p.Kind != "Promotion" || p.Name == "" || p.Deleted == nil || *p.Deleted {
		t.Errorf("promotion event data %s", ev.Data)
	}
	if !ev.HasID || (ev.ID != "0" && ev.ID != p.ResourceVersion) {
		t.Errorf("promotion event of %s at %s has id %q", p.Name, p.ResourceVersion, ev.ID)
	}
	return p
}

// phasesUntil reads a stream until done, and returns each Promotion's
// phases as its events showed them (repeats dropped).
func phasesUntil(t testing.TB, s *sseStream, done func(promotionEvent) bool) map[string][]kargoapi.PromotionPhase {
	t.Helper()
	out := map[string][]kargoapi.PromotionPhase{}
	var last uint64
	for {
		ev := s.next(t, 20*time.Second)
		p := promotionOf(t, ev)
		if c := cursorOf(t, ev.ID); c <= last {
			t.Errorf("event id %d after %d", c, last)
		} else {
			last = c
		}
		if ph := out[p.Name]; len(ph) == 0 || ph[len(ph)-1] != p.Status.Phase {
			out[p.Name] = append(ph, p.Status.Phase)
		}
		if done(p) {
			return out
		}
	}
}

// A Stage's promotions stream: a snapshot, then each phase of a Promotion
// as an event (Pending while the one before runs, Running, Succeeded);
// only the Stage's. The project's stream has every Stage's.
func TestPromotionStreams(t *testing.T) {
	k := newKProject(t, srv)
	k.createStage("s", direct(), nil, pstep("sleep", "wait", map[string]any{"duration": "1s"}))
	k.createStage("other", direct(), nil, pstep("echo", "e", nil))
	f := k.createFreight("1.0.0", "")
	p0 := k.finished(k.promote("s", f.Name).Name)
	stage := openStream(t, srv.http, k.url("/stages/s/promotions/events"), "")
	project := openStream(t, srv.http, k.url("/promotion-events"), "")
	for name, s := range map[string]*sseStream{"stage": stage, "project": project} {
		evs := s.untilSynced(t)
		if len(evs) != 2 || promotionOf(t, evs[0]).Name != p0.Name || evs[0].ID != "0" || promotionOf(t, evs[0]).Status.Phase != kargoapi.PromotionPhaseSucceeded {
			t.Fatalf("%s stream's snapshot: %s", name, eventTypes(evs))
		}
		if sy := syncedOf(t, evs[1]); sy.Resumed || sy.Count != 1 {
			t.Errorf("%s stream: synced %s", name, evs[1].Data)
		}
	}
	p1, p2, o := k.promote("s", f.Name), k.promote("s", f.Name), k.promote("other", f.Name)
	succeeded := func(name string) func(promotionEvent) bool {
		return func(p promotionEvent) bool {
			return p.Name == name && p.Status.Phase == kargoapi.PromotionPhaseSucceeded
		}
	}
	phases := phasesUntil(t, stage, succeeded(p2.Name))
	got := phases[p2.Name]
	if len(got) > 0 && got[0] == "" {
		got = got[1:] // created: the Pending write may come in the same event
	}
	if !slices.Equal(got, []kargoapi.PromotionPhase{kargoapi.PromotionPhasePending, kargoapi.PromotionPhaseRunning, kargoapi.PromotionPhaseSucceeded}) {
		t.Errorf("the second's phases %v, want Pending Running Succeeded", phases[p2.Name])
	}
	if ph := phases[p1.Name]; len(ph) < 2 || !slices.Equal(ph[len(ph)-2:], []kargoapi.PromotionPhase{kargoapi.PromotionPhaseRunning, kargoapi.PromotionPhaseSucceeded}) {
		t.Errorf("the first's phases %v", ph)
	}
	if _, ok := phases[o.Name]; ok {
		t.Errorf("the stream of s delivered the other Stage's Promotion")
	}
	ended := map[string]bool{}
	all := phasesUntil(t, project, func(p promotionEvent) bool {
		ended[p.Name] = p.Status.Phase.IsTerminal()
		return ended[o.Name] && ended[p2.Name]
	})
	for _, name := range []string{p1.Name, p2.Name, o.Name} {
		if _, ok := all[name]; !ok {
			t.Errorf("the project's stream has no event of %s", name)
		}
	}
}

// promoServeEnv, set to a data dir, makes TestPromotionServerProcess a
// server on it (listening on serverListenEnv), for TestPromotionRestart to
// SIGKILL: a server in the test's own process cannot take one.
const promoServeEnv = "TASKACTIONS_E2E_PROMOTION_SERVER"

// TestPromotionServerProcess is the server process of TestPromotionRestart
// (this test binary, run with promoServeEnv set); otherwise it does
// nothing.
func TestPromotionServerProcess(t *testing.T) {
	serveFromEnv(t, promoServeEnv, func(c *app.Config) { c.ExecutorTaskTypes = promoTaskTypes })
}

// A server SIGKILLed while the second of three steps runs: restarted on
// its data dir, it resumes the Promotion, which succeeds; no step that had
// ended runs again (the first step's action has one attempt and one
// SUCCEEDED, and its http request was made once), and the last step runs
// once.
func TestPromotionRestart(t *testing.T) {
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	rec := newRecorder(t)

	// The first server, in a process of its own (its test binary's shared
	// server goes in dir too, so that nothing outlives the test).
	s1, exited, cmd := startServerProcess(t, "TestPromotionServerProcess", promoServeEnv, dir, dataDir)

	k := newKProject(t, s1)
	k.createStage("r", direct(), nil,
		pstep("http", "one", map[string]any{"url": rec.URL + "/one"}),
		pstep("sleep", "two", map[string]any{"duration": "3s"}),
		pstep("http", "three", map[string]any{"url": rec.URL + "/three"}))
	p := k.promote("r", k.createFreight("1.0.0", "").Name)
	eventually(t, 15*time.Second, "the second step to run", func() bool {
		return k.actions(p.Name)["step-2"].Phase == client.RUNNING
	})
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	if n := rec.count("/three"); n != 0 {
		t.Fatalf("the third step ran before the kill")
	}

	s2, err := startServer(dataDir, func(c *app.Config) { c.ExecutorTaskTypes = promoTaskTypes })
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Stop()
	k.s = s2
	p = k.finished(p.Name)
	if p.Status.Phase != kargoapi.PromotionPhaseSucceeded || !slices.Equal(steps(p), []string{"one=Succeeded", "two=Succeeded", "three=Succeeded"}) {
		t.Fatalf("after the restart: %s %q, steps %v", p.Status.Phase, p.Status.Message, steps(p))
	}
	acts := k.actions(p.Name)
	for _, name := range []string{"step-1", "step-3"} {
		a := acts[name]
		succeeded := 0
		for _, h := range a.PhaseHistory {
			if h.Phase == client.SUCCEEDED {
				succeeded++
			}
		}
		if a.Phase != client.SUCCEEDED || a.Attempts != 1 || succeeded != 1 {
			t.Errorf("%s: %s, %d attempts, %d SUCCEEDED in its history; want one of each", name, a.Phase, a.Attempts, succeeded)
		}
	}
	if acts["step-2"].Phase != client.SUCCEEDED || acts["promotion"].Phase != client.SUCCEEDED {
		t.Errorf("step-2 %s, root %s", acts["step-2"].Phase, acts["promotion"].Phase)
	}
	if a, b := rec.count("/one"), rec.count("/three"); a != 1 || b != 1 {
		t.Errorf("requests: %d to /one, %d to /three; want one each", a, b)
	}
}
