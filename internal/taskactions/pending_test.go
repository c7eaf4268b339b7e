package taskactions

import (
	"context"
	"testing"

	v1 "taskactions/api/v1"
)

// Where an executor outside runs a task type, a new action of it says so
// until its first status; its children do not inherit the reason.
func TestPendingReasonUntilTheFirstStatus(t *testing.T) {
	m := newManager(t, nil, func(c *Config) {
		c.Pending = func(tt string) string {
			if tt == "echo" {
				return ""
			}
			return "nothing here runs " + tt
		}
	})
	ctx := context.Background()
	run := newRun()
	req := echoRequest(actionOf(run, "x"), "")
	req.TaskType, req.TaskTemplate = "external", []byte(`{"type":"external"}`)
	ta := mustEnqueue(t, m, req)
	if got := ViewOf(ta).PendingReason; got != "nothing here runs external" {
		t.Errorf("pending reason %q", got)
	}
	kid := mustEnqueue(t, m, echoRequest(actionOf(run, "k"), "x"))
	if _, ok := kid.Annotations[v1.AnnotationPendingReason]; ok {
		t.Errorf("the echo child inherited the reason: %v", kid.Annotations)
	}
	mustPut(t, m, actionOf(run, "x"), 1, v1.PhaseRunning)
	got, err := m.GetTaskAction(ctx, actionOf(run, "x"))
	if err != nil || ViewOf(got).PendingReason != "" {
		t.Errorf("after the first status: %q %v", ViewOf(got).PendingReason, err)
	}
}
