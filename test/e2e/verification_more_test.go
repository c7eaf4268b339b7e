package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kargoapi "taskactions/api/kargo/v1alpha1"
	rolloutsapi "taskactions/api/rollouts/v1alpha1"
	"taskactions/internal/app"
	"taskactions/pkg/client"
)

// jobRun is an AnalysisRun of one job metric whose process exits with
// the code its arg gives.
func jobRun(name, code string) string {
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: AnalysisRun
metadata:
  name: %s
spec:
  args:
  - name: code
    value: "%s"
  metrics:
  - name: smoke
    provider:
      job:
        spec:
          backoffLimit: 0
          template:
            spec:
              restartPolicy: Never
              containers:
              - name: smoke
                image: busybox
                command: [sh, -c, "exit $(CODE)"]
                env:
                - name: CODE
                  value: "{{args.code}}"
`, name, code)
}

// createRun creates an AnalysisRun (YAML) in project p and waits until it
// is completed.
func createRun(t *testing.T, s *server, p, body string) rolloutsapi.AnalysisRun {
	t.Helper()
	ctx := context.Background()
	r, err := s.api.CreateAnalysisRunWithBodyWithResponse(ctx, p, "application/yaml", strings.NewReader(body))
	if err != nil || r.StatusCode() != http.StatusCreated {
		t.Fatalf("create AnalysisRun: %v %s", err, r.Body)
	}
	var ar rolloutsapi.AnalysisRun
	mustJSON(t, r.Body, &ar)
	k := &kproject{t: t, s: s, name: p}
	eventually(t, 30*time.Second, "AnalysisRun "+ar.Name+" to complete", func() bool {
		ar = k.analysisRun(ar.Name)
		return ar.Status.Phase.Completed()
	})
	return ar
}

// A job metric runs its container's command as a process, where
// --analysis-jobs allows it: exit 0 is Successful, another code Failed;
// where it does not, the run is Error, saying so.
func TestVerificationJobMetric(t *testing.T) {
	s, err := startServer(filepath.Join(t.TempDir(), "data"), func(c *app.Config) {
		c.ExecutorTaskTypes = promoTaskTypes
		c.AnalysisJobs = true
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	p := fmt.Sprintf("jobs%d", seq.Add(1))

	ok := createRun(t, s, p, jobRun("passes", "0"))
	if ok.Status.Phase != rolloutsapi.AnalysisPhaseSuccessful {
		t.Errorf("exit 0: %s %q", ok.Status.Phase, ok.Status.Message)
	}
	bad := createRun(t, s, p, jobRun("fails", "3"))
	// Rollouts' message, with the last measurement's.
	const failed = `Metric "smoke" assessed Failed due to failed (1) > failureLimit (0)`
	if bad.Status.Phase != rolloutsapi.AnalysisPhaseFailed || !strings.HasPrefix(bad.Status.Message, failed) || !strings.Contains(bad.Status.Message, "exited with code 3") {
		t.Errorf("exit 3: %s %q, want Failed %q", bad.Status.Phase, bad.Status.Message, failed)
	}
	k := &kproject{t: t, s: s, name: p}
	acts := k.runActions(bad.Name)
	if a := acts["smoke-1"]; a.TaskType != "process" || a.Phase != client.FAILED {
		t.Errorf("the measurement's action: %s %s", a.TaskType, a.Phase)
	}

	off := createRun(t, srv, fmt.Sprintf("jobs%d", seq.Add(1)), jobRun("refused", "0"))
	if off.Status.Phase != rolloutsapi.AnalysisPhaseError || !strings.Contains(off.Status.Message, "--analysis-jobs") {
		t.Errorf("without --analysis-jobs: %s %q", off.Status.Phase, off.Status.Message)
	}
}

// A server SIGKILLed between two measurements of a verification: the
// restarted server resumes it, and every measurement is taken once (one
// request each to the service, one attempt each).
func TestVerificationRestart(t *testing.T) {
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	svc := newHealth(t, "ok")
	s1, exited, cmd := startServerProcess(t, "TestPromotionServerProcess", promoServeEnv, dir, dataDir)
	k := newKProject(t, s1)
	r, err := s1.api.CreateAnalysisTemplateWithBodyWithResponse(context.Background(), k.name, "application/yaml", strings.NewReader(verifyingTemplate("health", 3, "3s", false)))
	if err != nil || r.StatusCode() != http.StatusCreated {
		t.Fatalf("create the template: %v %s", err, r.Body)
	}
	k.createStage("test", direct(), nil, pstep("echo", "", nil))
	k.verifyingStage("uat", "test", "health", svc.srv.URL)
	f := k.createFreight("1.0.0", "")
	k.finished(k.promote("test", f.Name).Name)
	k.waitVerified(f.Name, "test")
	k.finished(k.promote("uat", f.Name).Name)
	vi := k.verification("uat", f.Name, kargoapi.VerificationPhaseRunning)
	eventually(t, 20*time.Second, "the first measurement", func() bool {
		st := k.analysisRun(vi.AnalysisRun.Name).Status
		return len(st.MetricResults) == 1 && st.MetricResults[0].Count == 1
	})
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited

	s2, err := startServer(dataDir, func(c *app.Config) { c.ExecutorTaskTypes = promoTaskTypes })
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Stop()
	k.s = s2
	vi = k.verification("uat", f.Name, "")
	ar := k.analysisRun(vi.AnalysisRun.Name)
	if vi.Phase != kargoapi.VerificationPhaseSuccessful || ar.Status.MetricResults[0].Count != 3 {
		t.Fatalf("after the restart: %s %q, run %s", vi.Phase, vi.Message, mustMarshal(t, ar.Status))
	}
	if got := svc.hits.Load(); got != 3 {
		t.Errorf("the service was asked %d times for 3 measurements", got)
	}
	// The run's root ends after the AnalysisRun it stands for, which the
	// verification read: wait for it.
	eventually(t, 20*time.Second, "the run's root to end", func() bool {
		switch k.runActions(ar.Name)["analysis"].Phase {
		case client.SUCCEEDED, client.FAILED, client.ABORTED, client.TIMEDOUT:
			return true
		}
		return false
	})
	for name, a := range k.runActions(ar.Name) {
		if a.Phase != client.SUCCEEDED || (name != "analysis" && a.Attempts != 1) {
			t.Errorf("%s: %s, %d attempts", name, a.Phase, a.Attempts)
		}
	}
	k.waitVerified(f.Name, "uat")
}
