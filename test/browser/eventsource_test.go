package browser

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"taskactions/test/testserver"
)

// esPage is what the test page runs: nothing but new EventSource(url), with
// no reconnect code of its own, logging every event and whether the
// browser ever gave the stream up (readyState CLOSED).
const esPage = `(() => {
  window.streams = {};
  window.follow = (name, url) => {
    const s = { log: [], closed: false, opens: 0 };
    const es = new EventSource(url);
    for (const type of ['action', 'synced', 'reset']) {
      es.addEventListener(type, (e) => s.log.push({ type, id: e.lastEventId, data: e.data }));
    }
    es.addEventListener('open', () => { s.opens++; });
    es.addEventListener('error', () => { if (es.readyState === EventSource.CLOSED) s.closed = true; });
    s.es = es;
    window.streams[name] = s;
  };
  // The state a client builds: reset empties it, actions set or delete.
  window.stateOf = (name) => {
    const st = {};
    for (const e of window.streams[name].log) {
      if (e.type === 'reset') for (const k of Object.keys(st)) delete st[k];
      if (e.type === 'action') {
        const a = JSON.parse(e.data);
        if (a.deleted) delete st[a.actionId.name]; else st[a.actionId.name] = a.phase;
      }
    }
    return st;
  };
  return true;
})()`

// A page following a run with a plain EventSource, while the server is
// killed with SIGKILL and restarted on the same data dir, with changes
// before and after: the stream never gives up (the restarting server holds
// it open instead of answering 503), and the page ends with the state REST
// shows, having had every change or a reset. A second EventSource opened
// on purpose while the server starts is held and then served, without
// ever reconnecting.
//
// It reads better whole: its cases are one table, a line each.
func TestPlainEventSourceAcrossAKill(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	addr := testserver.FreeAddr(t)
	first := startProcess(t, dataDir, addr)
	waitReady(t, first, addr)
	token, err := testserver.AdminToken(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	runPath := "/projects/es/domains/dev/runs/r1"
	enqueue := func(name, parent string) {
		t.Helper()
		p := ""
		if parent != "" {
			p = fmt.Sprintf(`,"parentActionName":%q`, parent)
		}
		body := fmt.Sprintf(`{"action":{"actionId":{"run":{"project":"es","domain":"dev","name":"r1"},"name":%q}%s,"task":{"taskTemplate":{"type":"external"}}}}`, name, p)
		if code := api(t, addr, token, http.MethodPost, "/actions", body); code != http.StatusCreated {
			t.Fatalf("enqueue %s: HTTP %d", name, code)
		}
	}
	setPhase := func(name, phase string) {
		t.Helper()
		if code := api(t, addr, token, http.MethodPut, runPath+"/actions/"+name+"/status", `{"attempt":1,"status":{"phase":"`+phase+`"}}`); code != http.StatusOK {
			t.Fatalf("status of %s: HTTP %d", name, code)
		}
	}
	enqueue("a0", "")
	enqueue("c1", "a0")

	p := newTab(t, chromedp.WithNewBrowserContext())
	p.run(chromedp.Navigate("http://" + addr + "/healthz"))
	p.logIn(token)
	eval[bool](p, esPage)
	eval[bool](p, `(window.follow('run', '/api/v1`+runPath+`/events'), true)`)
	p.eventually("synced", `window.streams.run.log.some((e) => e.type === 'synced')`)
	setPhase("c1", "RUNNING")
	p.eventually("the change before the kill", `window.stateOf('run').c1 === 'RUNNING'`)

	// Kill. The page's reconnects fail while nothing listens (the browser
	// logs them), then one lands while the next server starts.
	p.restarting.Store(true)
	first.kill()
	before := eval[int](p, `window.streams.run.log.length`)
	second := startProcess(t, dataDir, addr)
	// On purpose in the start-up window: a new EventSource as soon as the
	// port answers, before the server is ready.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("the port answered /readyz %d before the start-up window was seen", resp.StatusCode)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the second server never listened:\n%s", second.stderr)
		}
	}
	eval[bool](p, `(window.follow('early', '/api/v1`+runPath+`/events'), true)`)
	waitReady(t, second, addr)
	p.eventually("the page to be back", `window.streams.run.opens >= 2 && window.streams.early.opens >= 1`)
	p.restarting.Store(false)

	// Changes after the restart.
	setPhase("c1", "SUCCEEDED")
	enqueue("c2", "a0")

	want := map[string]string{}
	resp, err := http.NewRequest(http.MethodGet, "http://"+addr+"/api/v1"+runPath+"/actions", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Header.Set("Authorization", "Bearer "+token)
	r, err := http.DefaultClient.Do(resp)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Items []struct {
			ActionID struct{ Name string } `json:"actionId"`
			Phase    string                `json:"phase"`
		} `json:"items"`
	}
	_ = json.NewDecoder(r.Body).Decode(&list)
	r.Body.Close()
	for _, a := range list.Items {
		want[a.ActionID.Name] = a.Phase
	}
	if len(want) != 3 || want["c1"] != "SUCCEEDED" {
		t.Fatalf("REST shows %v", want)
	}
	for _, name := range []string{"run", "early"} {
		var got map[string]string
		deadline := time.Now().Add(20 * time.Second)
		for {
			got = eval[map[string]string](p, fmt.Sprintf(`window.stateOf(%q)`, name))
			if reflect.DeepEqual(got, want) || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the page shows %v, REST %v", name, got, want)
		}
		if eval[bool](p, fmt.Sprintf(`window.streams[%q].closed`, name)) {
			t.Errorf("%s: the browser gave the stream up (readyState CLOSED)", name)
		}
	}
	// The early stream was held and then served as it was: it never had
	// to reconnect (a held stream the API failed to serve ends, and the
	// browser would open it again).
	if opens := eval[int](p, `window.streams.early.opens`); opens != 1 {
		t.Errorf("the stream opened while the server started was opened %d times, want once", opens)
	}
	// After the kill the old stream got either the missed events or a
	// reset: the events after it begin with one of those, never with a
	// silent jump.
	after := eval[[]map[string]string](p, fmt.Sprintf(`window.streams.run.log.slice(%d)`, before))
	var types []string
	for _, e := range after {
		types = append(types, e["type"])
	}
	if len(types) == 0 || (types[0] != "reset" && types[0] != "synced" && types[0] != "action") {
		t.Errorf("after the restart the stream began with %v", types)
	}
	if !strings.Contains(strings.Join(types, " "), "synced") {
		t.Errorf("after the restart the stream never synced: %v", types)
	}
	t.Logf("events after the kill: %s", strings.Join(types, " "))
	// Closed before the server is killed at the test's end, which the
	// browser would log.
	eval[bool](p, `(Object.values(window.streams).forEach((s) => s.es.close()), true)`)
}
