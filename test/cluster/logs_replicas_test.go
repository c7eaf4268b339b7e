package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"taskactions/internal/testenv/pg"
	"taskactions/pkg/client"
	"taskactions/test/cluster"
)

// TestLogsOnEveryReplica runs two replicas of the chart on one
// PostgreSQL. A process task runs on the executing replica; the other
// follows its log while it writes (reconnecting with Last-Event-ID on the
// way), and gets the writer's file byte for byte. The writer is then
// SIGKILLed: the other replica, and a replacement started after (a new
// pod, an empty disk), still serve the log whole, by range and as a
// stream. Then a task is killed with its replica in the middle of its
// output: the log its follower on another replica read ends with eof once
// the attempt is over, and is the beginning of the killed replica's file;
// the bytes written after the last shipment are lost, and counted.
func TestLogsOnEveryReplica(t *testing.T) {
	ctx := t.Context()
	pgc, err := pg.StartPostgres()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pgc.Stop)
	dsn, err := pgc.CreateDatabase("logs")
	if err != nil {
		t.Fatal(err)
	}
	extra := []string{"--history-dsn=" + dsn, "--executor-process=true"}
	servers := []*cluster.Server{startChartServer(t, extra...), startChartServer(t, extra...)}
	leader, _ := waitLeader(ctx, t, func() []*cluster.Server { return servers })
	writer, reader := servers[leader], servers[1-leader]
	rc := apiClient(t, reader)

	// Through the reader: any replica takes an enqueue.
	enqueueScript(ctx, t, rc, "r1", "p", `seq 1 30000; echo ready; while [ ! -e go ]; do sleep 0.05; done; echo "the end"`)
	var got logRead
	got.follow(ctx, t, rc, "r1", "p", "", func() bool { return bytes.HasSuffix(got.text.Bytes(), []byte("ready\n")) })
	if a := getAction(ctx, t, rc, "r1", "p"); terminal[string(a.Phase)] {
		t.Fatalf("the task is %s already: nothing was followed", a.Phase)
	}
	outDir := filepath.Join(writer.Dir, "data", "outputs", "logs", "dev", "r1", "p")
	if err := os.WriteFile(filepath.Join(outDir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got.follow(ctx, t, rc, "r1", "p", got.lastID, nil)
	file, err := os.ReadFile(filepath.Join(outDir, "stdout-1.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.text.Bytes(), file) || !bytes.HasSuffix(file, []byte("ready\nthe end\n")) {
		t.Fatalf("followed on the other replica: %d bytes; the writer's file: %d; they differ", got.text.Len(), len(file))
	}
	if _, err := os.Stat(filepath.Join(reader.Dir, "data", "outputs", "logs")); !os.IsNotExist(err) {
		t.Fatalf("the reader has output dirs of the project: %v", err)
	}

	writer.Kill()
	replacement := startChartServer(t, extra...)
	for name, s := range map[string]*cluster.Server{"the other replica": reader, "a replacement": replacement} {
		c := apiClient(t, s)
		n := len(file)
		for _, r := range []struct{ rng, want, contentRange string }{
			{"", string(file), ""},
			{"bytes=100-199", string(file[100:200]), fmt.Sprintf("bytes 100-199/%d", n)},
			{"bytes=-8", "the end\n", fmt.Sprintf("bytes %d-%d/%d", n-8, n-1, n)},
		} {
			params := &client.GetActionLogsParams{}
			if r.rng != "" {
				params.Range = &r.rng
			}
			resp, err := c.GetActionLogsWithResponse(ctx, "logs", "dev", "r1", "p", params)
			if err != nil {
				t.Fatal(err)
			}
			if string(resp.Body) != r.want || resp.HTTPResponse.Header.Get("Content-Range") != r.contentRange {
				t.Errorf("%s, after the writer's SIGKILL, Range %q: HTTP %d, %d bytes (%s); want %d bytes (%s)", name, r.rng,
					resp.StatusCode(), len(resp.Body), resp.HTTPResponse.Header.Get("Content-Range"), len(r.want), r.contentRange)
			}
		}
		var again logRead
		again.follow(ctx, t, c, "r1", "p", strconv.Itoa(n-8), nil)
		if again.text.String() != "the end\n" || !again.eof {
			t.Errorf("%s: a stream from byte %d read %q (eof %v)", name, n-8, again.text.String(), again.eof)
		}
	}

	// A task killed with its replica, mid-output.
	servers = []*cluster.Server{reader, replacement}
	leader, _ = waitLeader(ctx, t, func() []*cluster.Server { return servers })
	writer, reader = servers[leader], servers[1-leader]
	rc = apiClient(t, reader)
	enqueueScript(ctx, t, rc, "r2", "q", `i=0; while [ $i -lt 3000 ]; do i=$((i+1)); echo "tick $i"; sleep 0.005; done`)
	var cut logRead
	cut.follow(ctx, t, rc, "r2", "q", "", func() bool { return cut.text.Len() > 2000 })
	writer.Kill()
	killed := time.Now()
	cut.follow(ctx, t, rc, "r2", "q", cut.lastID, nil)
	written, err := os.ReadFile(filepath.Join(writer.Dir, "data", "outputs", "logs", "dev", "r2", "q", "stdout-1.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(written, cut.text.Bytes()) || cut.text.Len() <= 2000 {
		t.Fatalf("the log of the killed attempt, as the other replica has it (%d bytes), is not the beginning of the killed replica's file (%d bytes)",
			cut.text.Len(), len(written))
	}
	resp, err := rc.GetActionLogsWithResponse(ctx, "logs", "dev", "r2", "q", &client.GetActionLogsParams{Attempt: ptr(1)})
	if err != nil || !bytes.Equal(resp.Body, cut.text.Bytes()) {
		t.Fatalf("GET of the killed attempt: %v, %d bytes; the stream read %d", err, len(resp.Body), cut.text.Len())
	}
	t.Logf("a task killed with its replica: the others have %d of the %d bytes it wrote (%d lost, written after the last shipment); eof %s after the kill",
		cut.text.Len(), len(written), len(written)-cut.text.Len(), time.Since(killed).Round(time.Millisecond))
}

func ptr[T any](v T) *T { return &v }

func apiClient(t *testing.T, s *cluster.Server) *client.ClientWithResponses {
	t.Helper()
	c, err := client.NewClientWithResponses(s.URL+"/api/v1", client.WithBearerToken(s.Token))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func enqueueScript(ctx context.Context, t *testing.T, c *client.ClientWithResponses, run, name, script string) {
	t.Helper()
	cmd := []string{"/bin/sh", "-c", script}
	resp, err := c.EnqueueActionWithResponse(ctx, client.EnqueueRequest{Action: client.ActionSpec{
		ActionId: client.ActionIdentifier{Run: client.RunIdentifier{Project: "logs", Domain: "dev", Name: run}, Name: name},
		Task:     client.TaskSpec{TaskTemplate: client.TaskTemplate{Type: "process", Container: &client.Container{Command: &cmd}}},
	}})
	if err != nil || resp.StatusCode() != http.StatusCreated {
		t.Fatalf("enqueue %s: %v %s", name, err, resp.Body)
	}
}

func getAction(ctx context.Context, t *testing.T, c *client.ClientWithResponses, run, name string) *client.Action {
	t.Helper()
	resp, err := c.GetActionWithResponse(ctx, "logs", "dev", run, name)
	if err != nil || resp.JSON200 == nil {
		t.Fatalf("get %s: %v %s", name, err, resp.Body)
	}
	return resp.JSON200
}

// logRead is what log streams sent: the text, the last event's id, eof.
type logRead struct {
	text   bytes.Buffer
	lastID string
	eof    bool
}

// follow opens a log stream from lastID and reads until done says so, or
// (done nil) until eof, checking each event begins where the last ended.
func (l *logRead) follow(ctx context.Context, t *testing.T, c *client.ClientWithResponses, run, action, lastID string, done func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	s, err := c.StreamActionLogs(ctx, "logs", "dev", run, action, &client.LogStreamOptions{StreamOptions: client.StreamOptions{LastEventID: lastID}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	off, _ := strconv.ParseInt(lastID, 10, 64)
	for !l.eof && (done == nil || !done()) {
		ev, err := s.Next()
		if err != nil {
			t.Fatalf("the log stream of %s/%s: %v (after %d bytes)", run, action, err, off)
		}
		switch ev.Type {
		case "log":
			if ev.Log.Offset != off {
				t.Fatalf("a log event at byte %d, want %d", ev.Log.Offset, off)
			}
			off += int64(len(ev.Log.Text))
			l.text.WriteString(ev.Log.Text)
		case "eof":
			if ev.EOF.Size != off {
				t.Fatalf("eof at %d, the text ends at %d", ev.EOF.Size, off)
			}
			l.eof = true
		default:
			t.Fatalf("a %s event", ev.Type)
		}
		l.lastID = ev.ID
	}
}
