package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"taskactions/pkg/client"
)

func logsURL(s *server, run client.RunIdentifier, action, query string) string {
	return fmt.Sprintf("%s/api/v1/projects/%s/domains/%s/runs/%s/actions/%s/logs%s", s.URL(), run.Project, run.Domain, run.Name, action, query)
}

func logEventsURL(s *server, run client.RunIdentifier, action, query string) string {
	return fmt.Sprintf("%s/api/v1/projects/%s/domains/%s/runs/%s/actions/%s/logs/events%s", s.URL(), run.Project, run.Domain, run.Name, action, query)
}

func enqueueProcess(t testing.TB, s *server, run client.RunIdentifier, name, script string) {
	t.Helper()
	req := actionSpec(run, name, "", "process")
	cmd := []string{"sh", "-c", script}
	req.Action.Task.TaskTemplate.Container = &client.Container{Command: &cmd}
	resp, err := s.api.EnqueueActionWithResponse(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode() != http.StatusCreated {
		t.Fatalf("enqueue %s: HTTP %d %s", name, resp.StatusCode(), resp.Body)
	}
}

// logText is what a log stream sent: its text, the id of its last event,
// and whether eof came.
type logText struct {
	text    bytes.Buffer
	lastID  string
	eof     bool
	dropped int64
}

// readLog reads a log stream until eof or until it holds at least stopAt
// bytes (0: eof only), checking that each event starts where the last
// ended.
func readLog(t *testing.T, st *sseStream, from int64, stopAt int, got *logText) {
	t.Helper()
	off := from
	for !got.eof && (stopAt == 0 || got.text.Len() < stopAt) {
		ev := st.next(t, 30*time.Second)
		switch ev.Type {
		case "log":
			var d struct {
				Offset int64
				Text   string
			}
			mustJSON(t, ev.Data, &d)
			if d.Offset != off {
				t.Fatalf("a log event at byte %d, want %d: bytes lost or repeated", d.Offset, off)
			}
			off += int64(len(d.Text))
			if id, _ := strconv.ParseInt(ev.ID, 10, 64); id != off {
				t.Fatalf("event id %s, want the offset after its text, %d", ev.ID, off)
			}
			got.text.WriteString(d.Text)
		case "eof":
			var d struct{ Size, Dropped int64 }
			mustJSON(t, ev.Data, &d)
			if d.Size != off {
				t.Fatalf("eof at size %d, but the text ends at %d", d.Size, off)
			}
			got.eof, got.dropped = true, d.Dropped
		default:
			t.Fatalf("unexpected %s event %s", ev.Type, ev.Data)
		}
		got.lastID = ev.ID
	}
}

// A process prints lines for a while; a stream follows it, is cut in the
// middle and reconnects with Last-Event-ID; what it read is the file, byte
// for byte, and so is the REST text, whole and by range.
func TestProcessLogsLiveAndWhole(t *testing.T) {
	run := newRun()
	enqueueProcess(t, srv, run, "p", `for i in $(seq 1 3000); do echo "line $i: héllo wörld"; [ $((i % 500)) = 0 ] && sleep 0.2; done; echo oops >&2`)

	st := openStream(t, srv.http, logEventsURL(srv, run, "p", "?attempt=1"), "")
	var got logText
	readLog(t, st, 0, 20000, &got)
	st.close()
	from, _ := strconv.ParseInt(got.lastID, 10, 64)
	st = openStream(t, srv.http, logEventsURL(srv, run, "p", "?attempt=1"), got.lastID)
	readLog(t, st, from, 0, &got)

	file, err := os.ReadFile(filepath.Join(srv.dataDir, "outputs", run.Project, run.Domain, run.Name, "p", "stdout-1.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.text.Bytes(), file) {
		t.Fatalf("the stream read %d bytes, the file has %d: they differ", got.text.Len(), len(file))
	}
	if n := strings.Count(string(file), "\n"); n != 3000 {
		t.Fatalf("the file has %d lines, want 3000", n)
	}

	code, whole := srv.get(t, strings.TrimPrefix(logsURL(srv, run, "p", ""), srv.URL()+"/api/v1"))
	if code != http.StatusOK || !bytes.Equal(whole, file) {
		t.Fatalf("GET logs: HTTP %d, %d bytes; want the file's %d", code, len(whole), len(file))
	}
	for _, c := range []struct {
		rng, want, contentRange string
		status                  int
	}{
		{"bytes=10-19", string(file[10:20]), fmt.Sprintf("bytes 10-19/%d", len(file)), http.StatusPartialContent},
		{"bytes=-6", string(file[len(file)-6:]), fmt.Sprintf("bytes %d-%d/%d", len(file)-6, len(file)-1, len(file)), http.StatusPartialContent},
		// RFC 9110: the last 0 bytes cannot be had; a unit other than
		// bytes is ignored.
		{"bytes=-0", "", fmt.Sprintf("bytes */%d", len(file)), http.StatusRequestedRangeNotSatisfiable},
		{"items=0-1", string(file), "", http.StatusOK},
	} {
		req, _ := http.NewRequest(http.MethodGet, logsURL(srv, run, "p", ""), nil)
		req.Header.Set("Range", c.rng)
		resp, err := srv.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || body != c.want || resp.Header.Get("Content-Range") != c.contentRange {
			t.Errorf("Range %s: HTTP %d, %d bytes (%s), want %d, %d bytes (%s)", c.rng, resp.StatusCode, len(body), resp.Header.Get("Content-Range"), c.status, len(c.want), c.contentRange)
		}
	}
	if code, body := srv.get(t, strings.TrimPrefix(logsURL(srv, run, "p", "?stream=stderr"), srv.URL()+"/api/v1")); code != http.StatusOK || string(body) != "oops\n" {
		t.Errorf("stderr: HTTP %d %q", code, body)
	}
	if code, body := srv.get(t, strings.TrimPrefix(logsURL(srv, run, "p", "?attempt=2"), srv.URL()+"/api/v1")); code != http.StatusNotFound {
		t.Errorf("attempt 2 of an action with one: HTTP %d %s, want 404", code, body)
	}
	// A stream of the finished attempt sends it all, then eof.
	var again logText
	readLog(t, openStream(t, srv.http, logEventsURL(srv, run, "p", ""), ""), 0, 0, &again)
	if !bytes.Equal(again.text.Bytes(), file) || !again.eof {
		t.Errorf("a stream of the finished log read %d bytes (eof %v), want the file's %d", again.text.Len(), again.eof, len(file))
	}
}

func appendLog(t *testing.T, s *server, run client.RunIdentifier, action string, attempt int, text string) (int, client.LogAppended) {
	t.Helper()
	resp, err := s.api.AppendActionLogsWithResponse(context.Background(), run.Project, run.Domain, run.Name, action, client.LogAppend{Attempt: attempt, Text: text})
	if err != nil {
		t.Fatal(err)
	}
	var out client.LogAppended
	if resp.JSON200 != nil {
		out = *resp.JSON200
	}
	return resp.StatusCode(), out
}

// An executor outside the server appends lines; a follower sees them live,
// and gets eof when the action finishes. Past --log-max-bytes, the rest is
// dropped, counted, and the log says so.
func TestOutsideExecutorAppendsLogs(t *testing.T) {
	run := newRun()
	enqueue(t, srv, run, "x", "")
	putStatus(t, srv, run, "x", 1, client.RUNNING)
	st := openStream(t, srv.http, logEventsURL(srv, run, "x", ""), "")
	var got logText
	for i := range 3 {
		line := fmt.Sprintf("step %d\n", i)
		if code, out := appendLog(t, srv, run, "x", 1, line); code != http.StatusOK || out.Size != int64(got.text.Len()+len(line)) {
			t.Fatalf("append: HTTP %d %+v", code, out)
		}
		readLog(t, st, int64(got.text.Len()), got.text.Len()+len(line), &got)
	}
	if got.text.String() != "step 0\nstep 1\nstep 2\n" {
		t.Fatalf("followed %q", got.text.String())
	}
	if code, _ := appendLog(t, srv, run, "x", 2, "no\n"); code != http.StatusNotFound {
		t.Errorf("append to attempt 2 of an action on attempt 1: HTTP %d, want 404", code)
	}
	putStatus(t, srv, run, "x", 1, client.SUCCEEDED)
	readLog(t, st, int64(got.text.Len()), 0, &got)
	if !got.eof || got.dropped != 0 {
		t.Errorf("after the action succeeded: eof %v, dropped %d", got.eof, got.dropped)
	}

	// The bound: 10 MiB by default, in chunks of 512 KiB, then 1 KiB more.
	big := newRun()
	enqueue(t, srv, big, "b", "")
	chunk := strings.Repeat(strings.Repeat("x", 1023)+"\n", 512)
	var last client.LogAppended
	for range 20 {
		_, last = appendLog(t, srv, big, "b", 1, chunk)
	}
	if last.Size != 10<<20 || last.Dropped != 0 {
		t.Fatalf("10 MiB appended: %+v", last)
	}
	code, last := appendLog(t, srv, big, "b", 1, strings.Repeat("y", 1024))
	if code != http.StatusOK || last.Dropped != 1024 {
		t.Fatalf("past the bound: HTTP %d %+v, want 1024 dropped", code, last)
	}
	req, _ := http.NewRequest(http.MethodGet, logsURL(srv, big, "b", ""), nil)
	req.Header.Set("Range", "bytes=-200")
	resp, err := srv.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	tail := readAll(t, resp.Body)
	resp.Body.Close()
	if resp.Header.Get("Log-Dropped-Bytes") != "1024" || !strings.Contains(tail, "reached --log-max-bytes (10485760 bytes); the rest of its stdout is dropped]\n") {
		t.Errorf("the cut log: Log-Dropped-Bytes %q, tail %q", resp.Header.Get("Log-Dropped-Bytes"), tail)
	}
}
