package taskactions

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	v1 "taskactions/api/v1"
)

// etcd refuses a write over 1.5 MiB, and the API server stores custom
// resources as JSON, with the task template in base64 and managed fields
// that name every map key again. An action must leave room for its status
// for its whole life, or it is accepted but never records anything. So:
// the object as created is bounded by MaxObjectBytes, checked on what is
// actually stored (inherited labels, annotations and env vars included),
// and every status is kept under maxStatusBytes by capping its texts and
// its phase history.
const (
	// MaxObjectBytes bounds an action as created: its metadata and spec as
	// the API server stores them, with an estimate of its managed fields.
	MaxObjectBytes = 768 << 10
	// maxMessageBytes caps each message in the conditions and the phase
	// history, maxErrorBytes the error message: with at most 64 history
	// entries a status stays under about 100 KiB.
	maxMessageBytes = 1 << 10
	maxErrorBytes   = 4 << 10
)

// serverAdded is the room an action keeps for what it gains once created,
// so that its size is the same when it is enqueued and when the executor
// checks it stored: the API server's metadata (uid, resourceVersion,
// generation, creationTimestamp; deletionTimestamp and its grace period)
// and this server's own marks (the plugin finalizer, the terminal label,
// an abort reason of up to 1 KiB), each with its managed-fields entry, and
// the fixed part of the managed fields (manager, operation, time).
const serverAdded = 4 << 10

// objectSize is the stored size of an action without its status: its
// JSON, but for what serverAdded stands for, as the API server stores it
// (the task template in base64, every string escaped as encoding/json
// does), plus the managed-fields entry of each map key (the API server
// repeats every key there), plus serverAdded. It is a function of what the
// client asked for (and what a child inherits) only, so it does not change
// between the enqueue's check and the executor's.
func objectSize(ta *v1.TaskAction) int {
	t := v1.TaskAction{TypeMeta: ta.TypeMeta, Spec: ta.Spec}
	t.Name, t.Namespace, t.GenerateName = ta.Name, ta.Namespace, ta.GenerateName
	t.OwnerReferences = ta.OwnerReferences
	t.Labels = without(ta.Labels, v1.LabelTerminalState)
	t.Annotations = without(ta.Annotations, v1.AnnotationAbortReason)
	t.Finalizers = slices.DeleteFunc(slices.Clone(ta.Finalizers), func(f string) bool { return f == v1.FinalizerPlugin })
	b, _ := json.Marshal(&t)
	n := len(b) + serverAdded
	for _, m := range []map[string]string{t.Labels, t.Annotations, t.Spec.EnvVars} {
		for k := range m {
			key, _ := json.Marshal("f:" + k)
			n += len(key) + len(`:{},`)
		}
	}
	return n
}

// without is m without key (m itself when it has no such key).
func without(m map[string]string, key string) map[string]string {
	if _, ok := m[key]; !ok {
		return m
	}
	out := maps.Clone(m)
	delete(out, key)
	return out
}

// CheckSize refuses an action too big to store and update (ErrTooLarge),
// saying what takes the room. The executor checks actions stored by others
// with it before running anything.
func CheckSize(ta *v1.TaskAction) error {
	size := objectSize(ta)
	if size <= MaxObjectBytes {
		return nil
	}
	parts := []string{fmt.Sprintf("task template %d bytes (stored as base64)", (len(ta.Spec.TaskTemplate)+2)/3*4)}
	for _, p := range []struct {
		name string
		m    map[string]string
	}{{"env vars", ta.Spec.EnvVars}, {"labels", ta.Labels}, {"annotations", ta.Annotations}} {
		if n := mapBytes(p.m); n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d bytes", p.name, n))
		}
	}
	inherited := ""
	if ta.Spec.ParentActionName != nil {
		inherited = " (env vars, labels and annotations include the parent's)"
	}
	return fmt.Errorf("the action would take %d bytes stored, more than the %d an action may take: %s%s: %w",
		size, MaxObjectBytes, strings.Join(parts, ", "), inherited, ErrTooLarge)
}

func mapBytes(m map[string]string) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v)
	}
	return n
}

// boundStatus caps the texts of a status, so that no sequence of updates
// can grow an action past what etcd stores (the history is capped by
// SetPhase).
func boundStatus(s *v1.TaskActionStatus) {
	for i := range s.Conditions {
		s.Conditions[i].Message = truncate(s.Conditions[i].Message, maxMessageBytes)
	}
	for i := range s.PhaseHistory {
		s.PhaseHistory[i].Message = truncate(s.PhaseHistory[i].Message, maxMessageBytes)
	}
	if e := s.ErrorState; e != nil {
		e.Message = truncate(e.Message, maxErrorBytes)
		e.Code = truncate(e.Code, 256)
	}
	s.PluginPhase = truncate(s.PluginPhase, maxMessageBytes)
}

// truncate cuts s to at most n bytes, on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// isTooLarge tells the API server's answer to a write etcd refused for its
// size (a 500 with etcd's message) from other failures.
func isTooLarge(err error) bool {
	return err != nil && (apierrors.IsRequestEntityTooLargeError(err) || strings.Contains(apiMessage(err), "request is too large"))
}
