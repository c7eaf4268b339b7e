package web

import (
	"io/fs"
	"path"
	"regexp"
	"strings"
	"testing"
)

// pageExport marks a page module: it exports the function that draws a
// page (app.js routes to it).
var pageExport = regexp.MustCompile(`(?m)^export function \w+Page\(`)

// The dashboard's modules keep their shape: each is type-checked
// (// @ts-check, which make lint-web runs tsc on), none is over 500 lines,
// and no page imports another page (what pages share is in modules of its
// own).
func TestModuleShape(t *testing.T) {
	js, err := fs.Sub(files, "static/js")
	if err != nil {
		t.Fatal(err)
	}
	names, err := fs.Glob(js, "*.js")
	if err != nil {
		t.Fatal(err)
	}
	src := map[string]string{}
	pages := map[string]bool{}
	for _, name := range names {
		b, err := fs.ReadFile(js, name)
		if err != nil {
			t.Fatal(err)
		}
		src[name] = string(b)
		pages[name] = pageExport.Match(b)
	}
	if len(pages) == 0 {
		t.Fatal("no modules")
	}
	for name, text := range src {
		if !strings.HasPrefix(text, "// @ts-check\n") {
			t.Errorf("%s does not start with // @ts-check", name)
		}
		if n := strings.Count(text, "\n"); n > 500 {
			t.Errorf("%s has %d lines, more than 500", name, n)
		}
		if !pages[name] {
			continue
		}
		for _, m := range importRef.FindAllStringSubmatch(text, -1) {
			if dep := path.Clean(m[1]); pages[dep] {
				t.Errorf("page %s imports page %s", name, dep)
			}
		}
	}
}
