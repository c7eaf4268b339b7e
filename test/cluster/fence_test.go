package cluster_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"taskactions/test/cluster"
)

// checkFenced fails t for every write that keep selects, made by the
// paused replica after it was resumed from a pause past its Lease, while
// it did not hold the executor's Lease in namespace ns. The fence's
// guarantee is that a replica writes only while it holds the Lease: a
// resumed replica may take the Lease again, after the one that took it
// over let it go, and write from then on. Writes after its first
// successful Lease write since the resume are logged and not counted (the
// audit log names no holder, so a later loss of the Lease goes unseen). A
// failure shows the Lease's writes since the resume and the replica's log
// of its Leases.
func checkFenced(t *testing.T, events []cluster.AuditEvent, paused *cluster.Server, ns string, resumed time.Time, keep func(cluster.AuditEvent) bool) {
	t.Helper()
	id := identity(paused)
	defer func() {
		if t.Failed() {
			t.Logf("the resumed replica's log of its Leases:\n%s", leaseLines(paused.Log()))
		}
	}()
	var retaken time.Time
	var leases []string
	for _, ev := range events {
		if !ev.RequestReceived.After(resumed) {
			continue
		}
		if ev.ObjectRef.Resource == "leases" && ev.ObjectRef.Namespace == ns && ev.ObjectRef.Name == executorLease {
			leases = append(leases, fmt.Sprintf("%s %s by %s: %d", ev.RequestReceived.Format(time.StampMilli), ev.Verb, ev.UserAgent, ev.ResponseStatus.Code))
			if retaken.IsZero() && strings.HasSuffix(ev.UserAgent, "/"+id) && ev.ResponseStatus.Code < 300 {
				retaken = ev.RequestReceived
			}
			continue
		}
		if !keep(ev) || !strings.HasSuffix(ev.UserAgent, "/"+id) || ev.ResponseStatus.Code >= 300 {
			continue
		}
		if !retaken.IsZero() {
			t.Logf("the resumed replica took the Lease again at %s and wrote %s %s %s/%s at %s",
				retaken.Format(time.StampMilli), ev.Verb, ev.ObjectRef.Resource, ev.ObjectRef.Name, ev.ObjectRef.Subresource, ev.RequestReceived.Format(time.StampMilli))
			continue
		}
		t.Errorf("the replica paused past its Lease wrote %s %s %s/%s at %s, after it resumed at %s, without taking the Lease again; the Lease's writes since:\n%s",
			ev.Verb, ev.ObjectRef.Resource, ev.ObjectRef.Name, ev.ObjectRef.Subresource, ev.RequestReceived.Format(time.StampMilli), resumed.Format(time.StampMilli), strings.Join(leases, "\n"))
	}
}

// leaseLines is what a server's log says of its Leases.
func leaseLines(log string) string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, `"lease"`) || strings.Contains(line, "leaderelection") || strings.Contains(line, "fence") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
