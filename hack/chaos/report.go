package main

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"taskactions/pkg/client"
)

// terminal phases (the API's own list).
var terminal = map[client.Phase]bool{client.SUCCEEDED: true, client.RECOVERED: true,
	client.FAILED: true, client.ABORTED: true, client.TIMEDOUT: true}

// waitTerminal GETs each task until it is terminal or absent (404), for
// at most limit. It returns each task's last state, nil when absent.
func waitTerminal(s *server, e *enqueuer, tasks []task, limit time.Duration) (map[task]*client.Action, error) {
	got := map[task]*client.Action{}
	pending := slices.Clone(tasks)
	for deadline := time.Now().Add(limit); len(pending) > 0; time.Sleep(time.Second) {
		if time.Now().After(deadline) {
			fmt.Printf("%d actions not terminal after %s, e.g. %s (%s)\n", len(pending), limit, pending[0], phaseOf(got[pending[0]]))
			return got, nil
		}
		var still []task
		for _, t := range pending {
			a, found, err := getAction(s, t)
			if err != nil {
				return nil, err
			}
			got[t] = a
			if found && !terminal[a.Phase] {
				still = append(still, t)
			}
		}
		pending = still
	}
	return got, nil
}

func getAction(s *server, t task) (*client.Action, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := s.api.GetActionWithResponse(ctx, project, domain, t.run, t.name)
	switch {
	case err != nil:
		return nil, false, fmt.Errorf("get %s: %w", t, err)
	case resp.StatusCode() == http.StatusNotFound:
		return nil, false, nil
	case resp.JSON200 == nil:
		return nil, false, fmt.Errorf("get %s: %s %s", t, resp.Status(), resp.Body)
	}
	return resp.JSON200, true, nil
}

func phaseOf(a *client.Action) string {
	if a == nil {
		return "absent"
	}
	return string(a.Phase)
}

// readLedger maps "run/action" to the attempts whose command ran to the
// end, in the order they wrote.
func readLedger(path string) map[string][]string {
	out := map[string][]string{}
	b, _ := os.ReadFile(path)
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			out[f[0]] = append(out[f[0]], f[1])
		}
	}
	return out
}

// report is what the crash run found.
type report struct {
	tasks          []task
	e              *enqueuer
	got            map[task]*client.Action
	ledger         map[string][]string
	aliveAfterKill []int
	leftover       []int
}

func (r report) print() {
	fmt.Println("-- results")
	r.printEnqueues()
	r.printLedger()
	r.printFailures()
	r.printSystemFailures()
	r.printProcesses()
}

func (r report) printEnqueues() {
	var acked, lost, unacked, refused int
	var lostNames []string
	for _, t := range r.tasks {
		a := r.got[t]
		switch {
		case r.e.isAcked(t):
			acked++
			if a == nil {
				lost++
				lostNames = append(lostNames, t.String())
			}
		case a != nil:
			unacked++
		}
		if v, ok := r.e.refused.Load(t); ok {
			refused++
			if refused <= 3 {
				fmt.Printf("enqueue of %s refused: %v\n", t, v)
			}
		}
	}
	fmt.Printf("enqueues: %d of %d acknowledged (2xx), %d refused for good, %d present without an acknowledgement\n", acked, len(r.tasks), refused, unacked)
	fmt.Printf("acknowledged enqueues lost: %d%s\n", lost, examples(lostNames))
	phases := map[string]int{}
	for _, t := range r.tasks {
		phases[phaseOf(r.got[t])]++
	}
	fmt.Printf("phases at the end: %s\n", counts(phases))
}

func (r report) printLedger() {
	var twice, attemptTwice, lines []string
	for name, attempts := range r.ledger {
		lines = append(lines, attempts...)
		if len(attempts) > 1 {
			twice = append(twice, fmt.Sprintf("%s (attempts %s)", name, strings.Join(attempts, ",")))
		}
		seen := map[string]bool{}
		for _, at := range attempts {
			if seen[at] {
				attemptTwice = append(attemptTwice, name+" attempt "+at)
			}
			seen[at] = true
		}
	}
	var unrun []string
	for _, t := range r.tasks {
		if a := r.got[t]; a != nil && a.Phase == client.SUCCEEDED && len(r.ledger[t.String()]) == 0 {
			unrun = append(unrun, t.String())
		}
	}
	slices.Sort(twice)
	fmt.Printf("ledger: %d commands ran to completion, %d lines\n", len(r.ledger), len(lines))
	fmt.Printf("commands that ran to completion more than once: %d%s\n", len(twice), examples(twice))
	fmt.Printf("attempts that ran to completion twice (same attempt number): %d%s\n", len(attemptTwice), examples(attemptTwice))
	fmt.Printf("SUCCEEDED with no completed run in the ledger: %d%s\n", len(unrun), examples(unrun))
}

func (r report) printFailures() {
	codes, sample := map[string]int{}, map[string]string{}
	failed := 0
	for _, t := range r.tasks {
		a := r.got[t]
		if a == nil || a.Phase == client.SUCCEEDED || !terminal[a.Phase] {
			continue
		}
		failed++
		key := string(a.Phase)
		if es := a.ErrorState; es != nil {
			key += " " + es.Kind + " " + es.Code
			if _, ok := sample[key]; !ok {
				sample[key] = fmt.Sprintf("%s: %s", t, es.Message)
			}
		}
		codes[key]++
	}
	fmt.Printf("actions failed for good: %d\n", failed)
	for _, k := range slices.Sorted(maps.Keys(codes)) {
		fmt.Printf("  %4d  %s  e.g. %s\n", codes[k], k, sample[k])
	}
}

func (r report) printSystemFailures() {
	sys, attempts := map[int64]int{}, map[int64]int{}
	for _, t := range r.tasks {
		if a := r.got[t]; a != nil {
			sys[a.SystemFailures]++
			attempts[a.Attempts]++
		}
	}
	fmt.Printf("systemFailures (value: actions): %s\n", intCounts(sys))
	fmt.Printf("attempts (value: actions): %s\n", intCounts(attempts))
}

func (r report) printProcesses() {
	total, most := 0, 0
	for _, n := range r.aliveAfterKill {
		total += n
		most = max(most, n)
	}
	fmt.Printf("attempt processes alive 1 s after a kill: %d in all over %d kills (at most %d after one)\n", total, len(r.aliveAfterKill), most)
	fmt.Printf("attempt processes left running 1 s after the final stop: %d %v\n", len(r.leftover), r.leftover)
}

func counts(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func intCounts(m map[int64]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d: %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// examples shows the first few of a list, after a space.
func examples(xs []string) string {
	if len(xs) == 0 {
		return ""
	}
	if len(xs) > 5 {
		return fmt.Sprintf(" (e.g. %s, ...)", strings.Join(xs[:5], ", "))
	}
	return " (" + strings.Join(xs, ", ") + ")"
}
