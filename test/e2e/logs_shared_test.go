package e2e

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

	"taskactions/internal/app"
	"taskactions/pkg/client"
)

// Logs are read through any replica: a second server runs on the shared
// server's control plane and history store (one SQLite file, both open),
// with a data dir of its own, so it has no file of any log. A process the
// shared server runs is followed through it while it writes, in several
// chunks, and read whole and by range once it ended: the same bytes as the
// writer's file. Lines an outside executor appends through one replica are
// followed through the other.
func TestLogsThroughAnotherReplica(t *testing.T) {
	replica, err := startServer(t.TempDir(), func(c *app.Config) {
		c.Kubeconfig = filepath.Join(srv.dataDir, "kubeconfig")
		c.HistoryDSN = filepath.Join(srv.dataDir, "history.db")
		c.ExecutorTaskTypes = ""
	})
	if err != nil {
		t.Fatal(err)
	}
	defer replica.Stop()

	run := newRun()
	// 108,894 bytes of seq, a line, then it waits for the test's go-ahead.
	enqueueProcess(t, srv, run, "p", `seq 1 20000; echo "héllo wörld"; while [ ! -e go ]; do sleep 0.05; done; echo "the end"; echo oops >&2`)
	var seq bytes.Buffer
	for i := 1; i <= 20000; i++ {
		fmt.Fprintf(&seq, "%d\n", i)
	}
	eventually(t, 10*time.Second, "the action on the replica", func() bool {
		resp, err := replica.api.GetActionWithResponse(context.Background(), run.Project, run.Domain, run.Name, "p")
		return err == nil && resp.StatusCode() == http.StatusOK
	})
	st := openStream(t, replica.http, logEventsURL(replica, run, "p", ""), "")
	var got logText
	readLog(t, st, 0, seq.Len()+1, &got)
	if a := getAction(t, replica, run, "p"); terminal(a) {
		t.Fatalf("the action is %s already: the test cannot tell a follower from a reader", a.Phase)
	}
	st.close()
	// Reconnect to the replica mid-log, then let the task end.
	from, _ := strconv.ParseInt(got.lastID, 10, 64)
	st = openStream(t, replica.http, logEventsURL(replica, run, "p", ""), got.lastID)
	outDir := filepath.Join(srv.dataDir, "outputs", run.Project, run.Domain, run.Name, "p")
	if err := os.WriteFile(filepath.Join(outDir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	readLog(t, st, from, 0, &got)
	file, err := os.ReadFile(filepath.Join(outDir, "stdout-1.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.text.Bytes(), file) || !bytes.HasPrefix(file, seq.Bytes()) || !bytes.HasSuffix(file, []byte("the end\n")) {
		t.Fatalf("followed through the replica: %d bytes; the writer's file: %d; they differ", got.text.Len(), len(file))
	}
	if _, err := os.Stat(filepath.Join(replica.dataDir, "outputs", run.Project)); !os.IsNotExist(err) {
		t.Fatalf("the replica has an output dir of the run: %v", err)
	}

	// Whole and by range, through the replica.
	n := len(file)
	for _, c := range []struct {
		rng, want, contentRange string
		status                  int
	}{
		{"", string(file), "", http.StatusOK},
		{"bytes=10-19", string(file[10:20]), fmt.Sprintf("bytes 10-19/%d", n), http.StatusPartialContent},
		{"bytes=65530-65545", string(file[65530:65546]), fmt.Sprintf("bytes 65530-65545/%d", n), http.StatusPartialContent},
		{"bytes=-8", "the end\n", fmt.Sprintf("bytes %d-%d/%d", n-8, n-1, n), http.StatusPartialContent},
		{fmt.Sprintf("bytes=%d-", n+5), "", fmt.Sprintf("bytes */%d", n), http.StatusRequestedRangeNotSatisfiable},
	} {
		params := &client.GetActionLogsParams{}
		if c.rng != "" {
			params.Range = &c.rng
		}
		resp, err := replica.api.GetActionLogsWithResponse(context.Background(), run.Project, run.Domain, run.Name, "p", params)
		if err != nil {
			t.Fatal(err)
		}
		h := resp.HTTPResponse.Header
		body := string(resp.Body)
		if c.status == http.StatusRequestedRangeNotSatisfiable {
			body = "" // net/http's text
		}
		if resp.StatusCode() != c.status || body != c.want || h.Get("Content-Range") != c.contentRange {
			t.Errorf("through the replica, Range %q: HTTP %d, %d bytes (%s); want %d, %d bytes (%s)",
				c.rng, resp.StatusCode(), len(resp.Body), h.Get("Content-Range"), c.status, len(c.want), c.contentRange)
		}
		if c.status == http.StatusOK && h.Get("ETag") != fmt.Sprintf(`"%d"`, n) {
			t.Errorf("ETag %s, want the size", h.Get("ETag"))
		}
	}
	stderr := client.LogStreamParam("stderr")
	if resp, err := replica.api.GetActionLogsWithResponse(context.Background(), run.Project, run.Domain, run.Name, "p",
		&client.GetActionLogsParams{Stream: &stderr}); err != nil || string(resp.Body) != "oops\n" {
		t.Errorf("stderr through the replica: %v %q", err, resp.Body)
	}

	// An outside executor's lines, appended through the replica, are
	// followed through the shared server (which has no file of them).
	enqueue(t, srv, run, "x", "")
	putStatus(t, srv, run, "x", 1, client.RUNNING)
	eventually(t, 10*time.Second, "the action running on the replica", func() bool {
		resp, err := replica.api.GetActionWithResponse(context.Background(), run.Project, run.Domain, run.Name, "x")
		return err == nil && resp.JSON200 != nil && resp.JSON200.Phase == client.RUNNING
	})
	follow := openStream(t, srv.http, logEventsURL(srv, run, "x", ""), "")
	var lines logText
	for i := range 3 {
		line := fmt.Sprintf("step %d through the replica\n", i)
		start := time.Now()
		if code, out := appendLog(t, replica, run, "x", 1, line); code != http.StatusOK || out.Size != int64(lines.text.Len()+len(line)) {
			t.Fatalf("append through the replica: HTTP %d %+v", code, out)
		}
		readLog(t, follow, int64(lines.text.Len()), lines.text.Len()+len(line), &lines)
		t.Logf("the other replica's stream had line %d after %s", i, time.Since(start).Round(time.Millisecond))
	}
	putStatus(t, srv, run, "x", 1, client.SUCCEEDED)
	readLog(t, follow, int64(lines.text.Len()), 0, &lines)
	if want := "step 0 through the replica\nstep 1 through the replica\nstep 2 through the replica\n"; lines.text.String() != want || !lines.eof {
		t.Errorf("followed through the shared server: %q (eof %v)", lines.text.String(), lines.eof)
	}
	if _, err := os.Stat(filepath.Join(srv.dataDir, "outputs", run.Project, run.Domain, run.Name, "x")); !os.IsNotExist(err) {
		t.Errorf("an append made a local file: %v", err)
	}
}

func getAction(t *testing.T, s *server, run client.RunIdentifier, name string) *client.Action {
	t.Helper()
	resp, err := s.api.GetActionWithResponse(context.Background(), run.Project, run.Domain, run.Name, name)
	if err != nil || resp.JSON200 == nil {
		t.Fatalf("get %s: %v %s", name, err, resp.Body)
	}
	return resp.JSON200
}
