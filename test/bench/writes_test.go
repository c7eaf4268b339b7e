package bench

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "taskactions/api/v1"
)

// BenchmarkWritesPerAction counts what one action costs the store: the
// etcd revisions (every write to the control plane bumps one) from before
// 200 actions of a task type are enqueued until each is finished, left
// without finalizers and the store quiet, divided by 200.
// A create and one terminal status are the floor. Each kind of write the
// actions took is printed beside it (writeKinds).
func BenchmarkWritesPerAction(b *testing.B) {
	s := startServerEnv(b, executorEnv+"=echo,sleep,process")
	httpc := s.client(&http.Transport{MaxIdleConnsPerHost: concurrency})
	for _, tc := range []struct {
		taskType, template string
		goal               float64
	}{
		{"echo", `{"type":"echo"}`, 2},
		{"sleep", `{"type":"sleep","custom":{"duration":"10ms"}}`, 3},
		{"process", `{"type":"process","container":{"command":["true"]}}`, 3},
	} {
		const n = 200
		project := "writes-" + tc.taskType
		// The project's namespace first, so that its creation is not counted.
		body := func(run, action string) []byte {
			return fmt.Appendf(nil, `{"action":{"actionId":{"run":{"project":%q,"domain":"dev","name":%q},"name":%q},"task":{"taskTemplate":%s}}}`,
				project, run, action, tc.template)
		}
		if err := post(httpc, s.url+"/api/v1/actions", body("warm", "a0"), http.StatusCreated); err != nil {
			b.Fatal(err)
		}
		settled(b, s, project, 1)
		before := revision(b, s)
		kinds := watchWriteKinds(b, s, project+"-dev", before)
		runConcurrently(b, n, func(i int) error {
			return post(httpc, s.url+"/api/v1/actions", body("r", fmt.Sprintf("a%d", i)), http.StatusCreated)
		})
		settled(b, s, project, n+1)
		perAction := float64(revision(b, s)-before) / n
		kinds.report(b, n)
		goalIn(b, "writes-per-action-"+tc.taskType, perAction, tc.goal, false, "")
	}
}

// settled waits until the project's n actions are finished and free of
// finalizers, and then until the store has taken no write for a second:
// every write an action costs is done, the history's included, whatever
// it writes on the objects.
func settled(b *testing.B, s *server, project string, n int) {
	b.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		list, err := s.kube.FlyteV1().TaskActions(project+"-dev").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		done := 0
		for i := range list.Items {
			ta := &list.Items[i]
			if v1.PhaseOf(ta.Status.Conditions).Terminal() && len(ta.Finalizers) == 0 {
				done++
			}
		}
		if done == n {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: %d of %d actions settled", project, done, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for last := revision(b, s); ; {
		time.Sleep(time.Second)
		now := revision(b, s)
		if now == last {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: the store still takes writes", project)
		}
		last = now
	}
}

// revision is the control plane's current etcd revision, as a list's
// resource version gives it.
func revision(b *testing.B, s *server) int64 {
	b.Helper()
	list, err := s.kube.FlyteV1().TaskActions("").List(context.Background(), metav1.ListOptions{Limit: 1})
	if err != nil {
		b.Fatal(err)
	}
	rv, err := strconv.ParseInt(list.ResourceVersion, 10, 64)
	if err != nil {
		b.Fatal(err)
	}
	return rv
}
