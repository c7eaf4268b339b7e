package browser

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A Promotion whose working directory vanishes while a step runs (a
// cleaner, a wiped disk) starts over from its first step, as Kargo's does
// with a fresh working directory, without an event to tell the server: the
// page says it started over, and its steps link the actions of the new
// start.
func TestPromotionPageStartedOver(t *testing.T) {
	project := newStageProject()
	createPromoStage(t, project, "again", nil,
		pstepDef{uses: "sleep", as: "nap", config: map[string]any{"duration": "3s"}},
		pstepDef{uses: "echo", as: "publish"},
	)
	freight := createFreight(t, project, "app", "again-one", "1.0.0")
	name := promoteAPI(t, project, "again", freight)

	p := openPage(t, promotionPath(project, name))
	p.waitVisibleFor(`#promotion-steps li[data-step="nap"][data-status="Running"]`, 30*time.Second)
	if err := os.RemoveAll(filepath.Join(srv.dataDir, "kargo-work", project, runOf(name))); err != nil {
		t.Fatal(err)
	}
	p.waitVisibleFor(`#promotion-start`, 30*time.Second)
	if got := p.text(`#promotion-start`); !strings.HasPrefix(got, "start 2:") {
		t.Errorf("the page says %q of the start", got)
	}
	p.waitVisibleFor(`#promotion-phase[data-phase="Succeeded"]`, 60*time.Second)
	links := eval[string](p, `[...document.querySelectorAll('#promotion-steps a')].map((a) => a.textContent + '=' + new URL(a.href).hash).join(' ')`)
	if links != "action step-1-start-2=#action=step-1-start-2 action step-2-start-2=#action=step-2-start-2" {
		t.Errorf("the steps link %q", links)
	}
	if got := getPromotion(t, project, name).Metadata.Annotations["taskactions.io/promotion-start"]; got != "2" {
		t.Errorf("the API says start %q", got)
	}
}
