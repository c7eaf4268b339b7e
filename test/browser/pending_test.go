package browser

import (
	"fmt"
	"strings"
	"testing"

	"taskactions/pkg/client"
)

// An action of a type no executor of this server runs (the test server
// leaves "external" to an executor outside) says why it waits in its
// panel, until its first status.
func TestWaitingActionSaysWhy(t *testing.T) {
	run := newRun()
	enqueue(t, run, "a0", "")
	p := openPage(t, runPath(run)+"#action=a0")
	p.waitVisible(`#conn[data-conn="live"]`)
	p.eventually("a0 in the detail panel", `document.getElementById('detail-title').textContent === 'a0'`)
	want := `no executor of this server runs task type "external"`
	p.eventually("the waiting note", fmt.Sprintf(`document.getElementById('detail').textContent.includes(%q)`, want))
	if detail := p.text(`#detail`); !strings.Contains(detail, "Waiting for an executor") {
		t.Errorf("the panel: %s", detail)
	}
	setPhase(t, run, "a0", 1, client.RUNNING)
	p.eventually("the note gone once it runs", fmt.Sprintf(`!document.getElementById('detail').textContent.includes(%q)`, want))
	p.assertClean()
}
