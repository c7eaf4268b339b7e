package handlers

import (
	"strings"
	"testing"

	"taskactions/api"
	"taskactions/internal/auth"
)

// The table and the document agree today, and each way they can come
// apart stops the server from starting, naming the operation.
func TestOperationsTableHoldsToTheDocument(t *testing.T) {
	v, err := newValidator(api.OpenAPI, BasePath)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkOperations(v.doc); err != nil {
		t.Fatalf("today's table: %v", err)
	}
	for _, tc := range []struct {
		name, op string
		change   func(o *operation)
		want     string
	}{
		{"public in the table only", "getRun", func(o *operation) { o.public = true }, "public"},
		{"a verb with no Kubernetes verb", "getRun", func(o *operation) { o.kube = auth.KubeAttributes{} }, "Kubernetes verb"},
		{"a domain scope on a project path", "getStage", func(o *operation) { o.scope = inDomain }, "{project} and {domain}"},
		{"a project scope on a domain path", "getRun", func(o *operation) { o.scope = inProject }, "{project} alone"},
		{"a body scope with no body", "getRun", func(o *operation) { o.scope = inBody }, "has none"},
		{"a verb with no scope", "getRun", func(o *operation) { o.scope = unscoped }, "needs a scope"},
		{"a task's own action on a path without one", "getRun", func(o *operation) { o.task = itself }, "{action}"},
		{"a stream the document does not tag", "getRun", func(o *operation) { o.stream = "run" }, "stream"},
		{"a stream with no kind", "streamRunEvents", func(o *operation) { o.stream = "" }, "stream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			saved := operations[tc.op]
			defer func() { operations[tc.op] = saved }()
			o := saved
			tc.change(&o)
			operations[tc.op] = o
			err := checkOperations(v.doc)
			if err == nil || !strings.Contains(err.Error(), tc.op) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one naming %s and %q", err, tc.op, tc.want)
			}
		})
	}
	t.Run("an operation the table lacks", func(t *testing.T) {
		saved := operations["getRun"]
		defer func() { operations["getRun"] = saved }()
		delete(operations, "getRun")
		if err := checkOperations(v.doc); err == nil || !strings.Contains(err.Error(), "getRun") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("an entry the document lacks", func(t *testing.T) {
		operations["getNothing"] = operation{}
		defer delete(operations, "getNothing")
		if err := checkOperations(v.doc); err == nil || !strings.Contains(err.Error(), "getNothing") {
			t.Errorf("error %v", err)
		}
	})
}

// Every stream kind of the table is counted from the start.
func TestStreamKindsFromTheTable(t *testing.T) {
	got := strings.Join(streamKinds(), ",")
	if got != "action,analysisruns,logs,projects,promotions,run,runs,stages,warehouses" {
		t.Errorf("stream kinds %s", got)
	}
}

// The stream metrics' event label covers the events of every stream the
// document describes.
func TestStreamEventsFromTheDocument(t *testing.T) {
	if got := strings.Join(streamEvents(), ","); got != "action,analysisrun,log,project,promotion,run,stage,warehouse" {
		t.Errorf("stream events %s", got)
	}
}
