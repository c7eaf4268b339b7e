package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"taskactions/pkg/client"
)

const project, domain = "chaos", "chaos"

// task is one action of the crash run.
type task struct {
	run, name, parent string
	sleep             int // tenths of a second the command sleeps
}

func (t task) String() string { return t.run + "/" + t.name }

// layout names n tasks in runs of size: a000 the root of each run, the
// rest its children.
func layout(n, size int, sleep func() int) []task {
	out := make([]task, 0, n)
	for i := range n {
		t := task{run: fmt.Sprintf("r%03d", i/size), name: fmt.Sprintf("a%03d", i%size), sleep: sleep()}
		if i%size != 0 {
			t.parent = "a000"
		}
		out = append(out, t)
	}
	return out
}

// spec is the task's enqueue: a process whose command, once it has slept,
// appends "run/action attempt" to the ledger.
func (t task) spec(ledger string) client.EnqueueRequest {
	script := fmt.Sprintf(`sleep %d.%d; echo "$TASKACTIONS_RUN/$TASKACTIONS_ACTION $TASKACTIONS_ATTEMPT" >> %s`, t.sleep/10, t.sleep%10, ledger)
	a := client.ActionSpec{
		ActionId: client.ActionIdentifier{Run: client.RunIdentifier{Project: project, Domain: domain, Name: t.run}, Name: t.name},
		Task: client.TaskSpec{TaskTemplate: client.TaskTemplate{Type: "process",
			Container: &client.Container{Command: &[]string{"sh", "-c", script}}}},
	}
	if t.parent != "" {
		a.ParentActionName = &t.parent
	}
	return client.EnqueueRequest{Action: a}
}

// fleet is the server of the moment: the crash run replaces it at each
// kill, and the enqueuer reads it at each try.
type fleet struct {
	mu  sync.Mutex
	cur *server
}

func (f *fleet) get() *server {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cur
}

func (f *fleet) set(s *server) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cur = s
}

// enqueuer sends the tasks, a run per worker at a time, paced, retrying
// through the kills.
type enqueuer struct {
	acked   sync.Map // task -> the 2xx code that acknowledged it
	refused sync.Map // task -> the last 4xx that refused it for good
	count   atomic.Int64
	retries atomic.Int64
	done    chan struct{}
}

// enqueue starts sending; done closes when every task was answered.
func enqueue(f *fleet, tasks []task, ledger string, rate float64, workers int) *enqueuer {
	e := &enqueuer{done: make(chan struct{})}
	var tick <-chan time.Time
	if rate > 0 {
		t := time.NewTicker(time.Duration(float64(time.Second) / rate))
		tick = t.C
		go func() { <-e.done; t.Stop() }()
	}
	runs := make(chan []task)
	go func() {
		defer close(runs)
		for i := 0; i < len(tasks); {
			j := i + 1
			for j < len(tasks) && tasks[j].run == tasks[i].run {
				j++
			}
			runs <- tasks[i:j]
			i = j
		}
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for run := range runs {
				for _, t := range run {
					if tick != nil {
						<-tick
					}
					e.send(f, t, ledger)
				}
			}
		})
	}
	go func() { wg.Wait(); close(e.done) }()
	return e
}

// send enqueues one task until it is answered 2xx or refused for good
// (a 4xx other than 404 and 429: a child whose parent's enqueue was lost
// with a server is 404 until the parent is enqueued again).
func (e *enqueuer) send(f *fleet, t task, ledger string) {
	body := t.spec(ledger)
	deadline := time.Now().Add(5 * time.Minute)
	for try := 0; time.Now().Before(deadline); try++ {
		if try > 0 {
			e.retries.Add(1)
			time.Sleep(time.Duration(min(try, 10)) * 100 * time.Millisecond)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		resp, err := f.get().api.EnqueueActionWithResponse(ctx, body)
		cancel()
		if err != nil {
			continue
		}
		code := resp.StatusCode()
		switch {
		case code == http.StatusCreated || code == http.StatusOK:
			e.acked.Store(t, code)
			e.count.Add(1)
			return
		case code == http.StatusNotFound || code == http.StatusTooManyRequests || code >= 500:
			continue
		default:
			e.refused.Store(t, fmt.Sprintf("%d %s", code, resp.Body))
			return
		}
	}
	e.refused.Store(t, "no answer in 5 minutes")
}

// isAcked says whether the task was acknowledged with a 2xx.
func (e *enqueuer) isAcked(t task) bool {
	_, ok := e.acked.Load(t)
	return ok
}
