package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"taskactions/pkg/client"
)

// A ranged GET that ends inside a character, then the log stream from
// where it ended (?lastEventId=, as docs/api.md says to resume): the
// stream starts at the character's first byte, its offset says so, and
// the bytes put together are the log's, exactly, wherever the cut is.
func TestLogResumeInsideACharacter(t *testing.T) {
	run := newRun()
	enqueue(t, srv, run, "x", "")
	putStatus(t, srv, run, "x", 1, client.RUNNING)
	const log = "aé€😀b\n"
	if code, _ := appendLog(t, srv, run, "x", 1, log); code != http.StatusOK {
		t.Fatalf("append: HTTP %d", code)
	}
	for cut := 1; cut < len(log); cut++ {
		rng := fmt.Sprintf("bytes=0-%d", cut-1)
		r, err := srv.api.GetActionLogsWithResponse(context.Background(), run.Project, run.Domain, run.Name, "x", &client.GetActionLogsParams{Range: &rng})
		if err != nil {
			t.Fatal(err)
		}
		if r.StatusCode() != http.StatusPartialContent || string(r.Body) != log[:cut] {
			t.Fatalf("GET %s: HTTP %d %q", rng, r.StatusCode(), r.Body)
		}
		st := openStream(t, srv.http, logEventsURL(srv, run, "x", fmt.Sprintf("?lastEventId=%d", cut)), "")
		got := append([]byte(nil), r.Body...)
		first := true
		for len(got) < len(log) || first {
			ev := st.next(t, 30*time.Second)
			if ev.Type != "log" {
				t.Fatalf("cut at %d: a %s event %s, want log", cut, ev.Type, ev.Data)
			}
			var d struct {
				Offset int
				Text   string
			}
			mustJSON(t, ev.Data, &d)
			if first {
				start := cut
				for start > 0 && !utf8.RuneStart(log[start]) {
					start--
				}
				if d.Offset != start {
					t.Errorf("cut at %d: the stream starts at byte %d, want %d (the character's first byte)", cut, d.Offset, start)
				}
				first = false
			}
			if d.Offset > len(got) {
				t.Fatalf("cut at %d: an event at byte %d, past the %d bytes held", cut, d.Offset, len(got))
			}
			got = append(got[:d.Offset], d.Text...)
		}
		st.close()
		if !bytes.Equal(got, []byte(log)) || strings.ContainsRune(string(got), utf8.RuneError) {
			t.Errorf("cut at %d: put together %q, want %q", cut, got, log)
		}
	}
}

// A cursor that is not a byte offset is not read as 0: the stream says
// `reset` (the client cannot know what it holds) and then sends the log
// from its start; a gap or a repeat is never silent.
func TestLogStreamMalformedCursor(t *testing.T) {
	run := newRun()
	enqueue(t, srv, run, "x", "")
	putStatus(t, srv, run, "x", 1, client.RUNNING)
	if code, _ := appendLog(t, srv, run, "x", 1, "hello\n"); code != http.StatusOK {
		t.Fatalf("append: HTTP %d", code)
	}
	for _, c := range []struct{ query, header string }{
		{"?lastEventId=abc", ""}, {"?lastEventId=-5", ""}, {"", "1e3"},
	} {
		st := openStream(t, srv.http, logEventsURL(srv, run, "x", c.query), c.header)
		ev := st.next(t, 30*time.Second)
		if ev.Type != "reset" || !strings.Contains(string(ev.Data), "malformed-cursor") {
			t.Errorf("cursor %q%q: first a %s event %s, want reset (malformed-cursor)", c.query, c.header, ev.Type, ev.Data)
		}
		if ev.Type == "reset" {
			ev = st.next(t, 30*time.Second)
		}
		if ev.Type != "log" || !strings.Contains(string(ev.Data), `"offset":0,"text":"hello\n"`) {
			t.Errorf("cursor %q%q: then %s %s, want the log from byte 0", c.query, c.header, ev.Type, ev.Data)
		}
		st.close()
	}
}
