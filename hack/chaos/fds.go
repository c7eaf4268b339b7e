package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"taskactions/pkg/client"
)

// fdBudget counts a fresh server's open descriptors at idle, with each
// level of running tasks, and with a log stream on each task of the first
// level.
func fdBudget(o options, dir string, levels []int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	dataDir := filepath.Join(dir, "data")
	s, _, err := start(o.bin, addr, dataDir, o.serverFlags()...)
	if err != nil {
		return err
	}
	defer s.stop()
	time.Sleep(5 * time.Second) // past the start's own work
	idle := steadyFDs(s.pid())
	fmt.Printf("idle: %d descriptors\n", idle)
	var tasks []task
	for i, level := range levels {
		for len(tasks) < level {
			t := task{run: fmt.Sprintf("f%03d", len(tasks)), name: "a0"}
			if err := enqueueSleep(s, t, o.fdSleep); err != nil {
				return err
			}
			tasks = append(tasks, t)
		}
		if err := waitRunning(s, tasks, time.Minute); err != nil {
			return err
		}
		n := steadyFDs(s.pid())
		fmt.Printf("%3d tasks running (%d processes): %d descriptors, %.1f per task above idle\n",
			level, len(attemptProcesses(dataDir)), n, float64(n-idle)/float64(level))
		if i == 0 {
			if err := streamBudget(s, tasks, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// enqueueSleep enqueues a process task that sleeps for d.
func enqueueSleep(s *server, t task, d time.Duration) error {
	body := client.EnqueueRequest{Action: client.ActionSpec{
		ActionId: client.ActionIdentifier{Run: client.RunIdentifier{Project: project, Domain: domain, Name: t.run}, Name: t.name},
		Task: client.TaskSpec{TaskTemplate: client.TaskTemplate{Type: "process",
			Container: &client.Container{Command: &[]string{"sleep", fmt.Sprint(int(d.Seconds()))}}}},
	}}
	resp, err := s.api.EnqueueActionWithResponse(context.Background(), body)
	if err != nil {
		return fmt.Errorf("enqueue %s: %w", t, err)
	}
	if resp.StatusCode() != http.StatusCreated {
		return fmt.Errorf("enqueue %s: %s %s", t, resp.Status(), resp.Body)
	}
	return nil
}

// waitRunning waits until every task is RUNNING.
func waitRunning(s *server, tasks []task, limit time.Duration) error {
	for deadline := time.Now().Add(limit); ; time.Sleep(250 * time.Millisecond) {
		running := 0
		for _, t := range tasks {
			a, _, err := getAction(s, t)
			if err != nil {
				return err
			}
			if a != nil && a.Phase == client.RUNNING {
				running++
			}
		}
		if running == len(tasks) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d tasks running after %s", running, len(tasks), limit)
		}
	}
}

// streamBudget opens a log stream on each task and counts the
// descriptors again; base is the count without them.
func streamBudget(s *server, tasks []task, base int) error {
	streams, err := client.NewClientWithResponses(s.url+"/api/v1", client.WithHTTPClient(&http.Client{}), client.WithBearerToken(s.token))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, t := range tasks {
		st, err := streams.StreamActionLogs(ctx, project, domain, t.run, t.name, nil)
		if err != nil {
			return fmt.Errorf("log stream of %s: %w", t, err)
		}
		defer st.Close()
	}
	n := steadyFDs(s.pid())
	fmt.Printf("%3d log streams open on them: %d descriptors, %.1f per stream\n", len(tasks), n, float64(n-base)/float64(len(tasks)))
	return nil
}

// steadyFDs is the median of a few counts a little apart (a request or a
// compaction may hold one for a moment).
func steadyFDs(pid int) int {
	time.Sleep(2 * time.Second)
	var ns []int
	for range 5 {
		ns = append(ns, openFDs(pid))
		time.Sleep(200 * time.Millisecond)
	}
	slices.Sort(ns)
	return ns[len(ns)/2]
}
