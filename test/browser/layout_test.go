package browser

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"

	"taskactions/pkg/client"
)

// layoutWidths are the widths every page is checked at: phones, tablets,
// the edge of the run page's two-column layout, laptops, desktops.
var layoutWidths = []int64{360, 768, 1024, 1100, 1280, 1920}

// TestLayoutAtEveryWidth: at each width, no page is wider than the screen,
// no column of the run tree or the runs table is cut off, and long action
// names that differ only at their end are shown whole, across and down (a truncated name
// made siblings look identical on phones).
func TestLayoutAtEveryWidth(t *testing.T) {
	run := newRun()
	enqueue(t, run, "pipeline", "")
	for _, n := range []string{"preprocess-training-shard-001", "preprocess-training-shard-002"} {
		enqueue(t, run, n, "pipeline")
	}
	setPhase(t, run, "pipeline", 1, client.RUNNING)
	setPhase(t, run, "preprocess-training-shard-001", 1, client.WAITINGFORRESOURCES)
	pages := []string{"/", fmt.Sprintf("/projects/%s/domains/%s", run.Project, run.Domain), runPath(run) + "#action=pipeline"}

	p := newTab(t)
	for _, w := range layoutWidths {
		for _, path := range pages {
			p.run(chromedp.EmulateViewport(w, 900))
			p.navigate(path)
			p.waitVisible(`main > *`)
			if path != "/" {
				p.waitVisible(`#conn[data-conn="live"]`)
			}
			if path == pages[2] {
				p.waitVisible(rowSel("preprocess-training-shard-002", ""))
			}
			if overflow := eval[int](p, `document.documentElement.scrollWidth - window.innerWidth`); overflow > 0 {
				t.Errorf("%s at %dpx: the page is %dpx wider than the screen", path, w, overflow)
			}
			for _, cut := range eval[[]string](p, cutOff) {
				t.Errorf("%s at %dpx: %s", path, w, cut)
			}
		}
	}
}

// cutOff lists what is cut off on the page: a tree or table wider than
// its box, a visible cell past its row's edge, an action name truncated.
const cutOff = `(() => {
  const out = [];
  for (const el of document.querySelectorAll('.tree, .table-wrap')) {
    if (el.scrollWidth > el.clientWidth + 1) out.push(el.className + ' is ' + (el.scrollWidth - el.clientWidth) + 'px wider than its box');
  }
  for (const row of document.querySelectorAll('.row')) {
    const box = row.getBoundingClientRect();
    for (const cell of row.children) {
      const r = cell.getBoundingClientRect();
      if (r.width > 0 && r.right > box.right + 1) out.push('row ' + row.dataset.action + ': a ' + cell.className + ' cell ends ' + Math.round(r.right - box.right) + 'px past the row');
    }
    const name = row.querySelector('.c-name .v');
    if (name && name.scrollWidth > name.clientWidth + 1) out.push('row ' + row.dataset.action + ': its name is truncated');
    // Rows have one fixed height (the tree is virtualized): a name has the
    // lines that fit, and these names must fit in them.
    if (name && name.scrollHeight > name.clientHeight + 1) out.push('row ' + row.dataset.action + ': its name is cut off at the row\'s height');
  }
  return out;
})()`
