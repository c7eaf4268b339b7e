package handlers

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"sigs.k8s.io/yaml"

	"taskactions/api"
)

// The YAML bodies kubectl's reading (sigs.k8s.io/yaml) accepts read here
// as the same JSON: scalars by YAML 1.1, keys printed as it prints them.
func TestYAMLReadsAsKubectlReadsIt(t *testing.T) {
	docs := []string{
		"a: on\nb: off\nc: yes\nd: no\ne: y\nf: N\ng: True\nh: ~\ni: null\nj:\nk: ''\n",
		"ints: [0x1F, 017, 08, 1_000, -0b101, +12, -0, 9223372036854775807, 18446744073709551615, 18446744073709551616]\n",
		"floats: [1e3, .5, -.5, 1.50, 6.02e+23, 0.1]\n",
		"times: [2024-01-01, 2024-01-01T00:00:00Z, '2024-01-01', 2001-12-14 21:59:43.10]\n",
		"strs: [\"on\", 'yes', !!str 12, !!str on, plain text, 'a: b', \"\\u00e9\", x<y&z]\n",
		"typed: [!!float 1, !!int 7, !!bool yes, !!null ~]\n",
		"lit: |\n  line one\n  line two\nfold: >\n  folded\n  text\n",
		"1: one\non: true-key\n1.5: float-key\n~x: tilde\n",
		"base: &b {x: 1, y: [1, 2]}\nuse: *b\nlist: [*b, *b]\n",
		"base: &b {x: 1, y: 2}\nover:\n  <<: *b\n  y: 3\nboth:\n  <<: [*b, {z: 4}]\n",
		"empty: {}\nnone: []\nnested: {a: {b: {c: [1, [2, [3]]]}}}\n",
		"---\na: 1\n",
		"a: 1\n---\n",
		"",
		"# only a comment\n",
		"- just\n- a\n- list\n",
		"\"quoted key\": 1\n'single': 2\n",
		"y: yes-key\nn: no-key\n", // YAML 1.1: booleans, even as keys
	}
	files, _ := filepath.Glob("../../test/e2e/testdata/stages/*.yaml")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, strings.Split(string(b), "\n---\n")...)
	}
	for i, doc := range docs {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			want, err := yaml.YAMLToJSON([]byte(doc))
			if err != nil {
				t.Fatalf("kubectl's reading fails: %v", err)
			}
			got, err := yamlToJSON([]byte(doc))
			if err != nil {
				t.Fatalf("%q: %v", doc, err)
			}
			var w, g any
			if err := json.Unmarshal(want, &w); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatalf("not JSON: %s: %v", got, err)
			}
			if !reflect.DeepEqual(w, g) {
				t.Errorf("%q\nreads as %s\nkubectl:  %s", doc, got, want)
			}
		})
	}
}

// What YAML says of merges where kubectl's library departs from it: keys
// written in the mapping win over merged ones wherever the merge key is,
// and the first mapping merged wins over later ones.
func TestYAMLMergeKeys(t *testing.T) {
	for doc, want := range map[string]string{
		"a: &a {x: 1, w: 1}\nb: {w: 2, <<: *a}\n":               `{"a":{"x":1,"w":1},"b":{"x":1,"w":2}}`,
		"a: &a {x: 1}\nb: &b {x: 2, z: 2}\nc: {<<: [*a, *b]}\n": `{"a":{"x":1},"b":{"x":2,"z":2},"c":{"x":1,"z":2}}`,
		"a: &a {x: 1}\nb: &b {<<: *a, w: 2}\nc: {<<: *b}\n":     `{"a":{"x":1},"b":{"x":1,"w":2},"c":{"x":1,"w":2}}`,
		"'<<': {x: 1}\n":                                `{"<<":{"x":1}}`,
		"a: {<<: {x: 1}, <<: {x: 2, w: 2}}\n":           `{"a":{"x":1,"w":2}}`,
		"a: &a {x: 1}\nb: {<<: *a, x: 3, <<: {w: 0}}\n": `{"a":{"x":1},"b":{"w":0,"x":3}}`,
		"a: &a [1]\nb: [*a, *a]\n":                      `{"a":[1],"b":[[1],[1]]}`,
		"a: &a {k: &k v}\nb: *k\n":                      `{"a":{"k":"v"},"b":"v"}`,
		"x: &x 1\n*x : aliased key\n":                   `{"1":"aliased key","x":1}`,
		"a: 2024-01-01T00:00:00Z\n":                     `{"a":"2024-01-01T00:00:00Z"}`,
		"a: !!timestamp 2024-01-01\n":                   `{"a":"2024-01-01"}`,
		"a: !!float 2\n":                                `{"a":2}`,
		"a:\n- {b: 1}\n":                                `{"a":[{"b":1}]}`,
		"a: \"line\\nbreak\"\n":                         `{"a":"line\nbreak"}`,
		"a: 1\n---\n# nothing more\n":                   `{"a":1}`,
		strings.Repeat("---\n", 100) + "a: 1\n" + strings.Repeat("---\n", 100): `{"a":1}`,
	} {
		got, err := yamlToJSON([]byte(doc))
		if err != nil {
			t.Errorf("%q: %v", doc, err)
			continue
		}
		var g, w any
		_ = json.Unmarshal(got, &g)
		_ = json.Unmarshal([]byte(want), &w)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%q reads as %s, want %s", doc, got, want)
		}
	}
}

// What a YAML body cannot be: bigger, once its aliases are expanded, than
// a JSON body may be (413, naming the bound), or anything without a JSON
// form, or several documents (400).
func TestYAMLBodyRefusals(t *testing.T) {
	flat := "a: &a [" + strings.Repeat("x", 4000) + "]\nb: [" + strings.Repeat("*a,", 60000) + "*a]\n"
	laughs := "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
	for i := 'b'; i <= 'j'; i++ {
		laughs += fmt.Sprintf("%c: &%c [*%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	manyNodes := "a: &a [" + strings.Repeat("0,", 999) + "0]\nb: [" + strings.Repeat("*a,", 1000) + "*a]\n"
	merged := "a: &a {k: v}\nb: {<<: [" + strings.Repeat("*a,", 300000) + "*a]}\n"
	deep := "a: &a " + strings.Repeat("[", 9990) + strings.Repeat("]", 9990) + "\nb: " + strings.Repeat("[", 20) + "*a" + strings.Repeat("]", 20) + "\n"
	tests := []struct {
		name, doc string
		status    int
		detail    string
	}{
		{"flat anchor used 60,000 times", flat, http.StatusRequestEntityTooLarge, "bytes of JSON"},
		{"billion laughs", laughs, http.StatusRequestEntityTooLarge, "the YAML body reads as more than"},
		{"a million nodes through aliases", manyNodes, http.StatusRequestEntityTooLarge, "nodes"},
		{"a mapping merged 600,000 times", merged, http.StatusRequestEntityTooLarge, "nodes"},
		{"nested too deep through an alias", deep, http.StatusBadRequest, "deeper than 10000"},
		{"nested too deep", strings.Repeat("[", 10001) + strings.Repeat("]", 10001), http.StatusBadRequest, "depth"},
		{"repeated key", "a: 1\nb: 2\na: 3\n", http.StatusBadRequest, `"a" already defined at line 1`},
		{"repeated key as YAML 1.1 reads it", "on: 1\ntrue: 2\n", http.StatusBadRequest, `"true" already defined`},
		{"repeated key in a merged mapping", "a: {<<: {x: 1, x: 2}}\n", http.StatusBadRequest, "already defined"},
		{"alias inside its anchor", "a: &a [1, *a]\n", http.StatusBadRequest, "inside the node it names"},
		{"merge inside its anchor", "a: &a {x: 1, <<: *a}\n", http.StatusBadRequest, "inside the node it names"},
		{"merge of a list of lists", "a: {<<: [[{x: 1}]]}\n", http.StatusBadRequest, "merge key"},
		{"merge of a scalar", "a: {<<: 1}\n", http.StatusBadRequest, "merge key"},
		{"two documents", "a: 1\n---\nb: 2\n", http.StatusBadRequest, "more than one YAML document"},
		{"binary", "a: !!binary aGVsbG8=\n", http.StatusBadRequest, "no JSON form"},
		{"a local tag", "a: !thing x\n", http.StatusBadRequest, "no JSON form"},
		{"infinity", "a: .inf\n", http.StatusBadRequest, "no JSON form"},
		{"not a number tagged as one", "a: !!int twelve\n", http.StatusBadRequest, "is not a !!int"},
		{"null key", "~: 1\n", http.StatusBadRequest, "null mapping key"},
		{"mapping as a key", "? {a: 1}\n: 2\n", http.StatusBadRequest, "as a mapping key"},
		{"not YAML", "a: [1\n", http.StatusBadRequest, "not YAML"},
		{"a tab where YAML takes none", "a:\n\t- 1\n", http.StatusBadRequest, "not YAML"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.doc) > MaxBodyBytes {
				t.Fatalf("the test's body is %d bytes, over the body limit", len(tt.doc))
			}
			_, err := yamlToJSON([]byte(tt.doc))
			if err == nil {
				t.Fatal("read; want it refused")
			}
			p := problemFor(err)
			if p.Status != tt.status || p.Detail == nil || !strings.Contains(*p.Detail, tt.detail) {
				t.Fatalf("HTTP %d %v, want %d with %q", p.Status, err, tt.status, tt.detail)
			}
		})
	}
}

// A YAML body is read once, into JSON, before it is validated: the
// validator's own YAML decoding (kin-openapi's, through go-yaml) compares
// every key with every other, 44 s of CPU for 80,000 keys, and expands
// aliases in full. The handler gets the JSON.
func TestYAMLBodyIsValidatedAsJSON(t *testing.T) {
	v, err := newValidator(api.OpenAPI, BasePath)
	if err != nil {
		t.Fatal(err)
	}
	route := BasePath + "/projects/{project}/stages"
	r := chi.NewRouter()
	r.Post(route, v.middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", r.Header.Get("Content-Type"))
		_, _ = w.Write(b)
	})).ServeHTTP)
	srv := httptest.NewServer(r)
	defer srv.Close()

	var doc strings.Builder
	doc.WriteString("apiVersion: kargo.akuity.io/v1alpha1\nkind: Stage\nmetadata: {name: s}\nspec:\n" +
		"  requestedFreight:\n  - origin: {kind: Warehouse, name: w}\n    sources: {direct: true}\n" +
		"  promotionTemplate:\n    spec:\n      steps:\n      - uses: git-clone\n        config: {")
	for i := range 80000 {
		fmt.Fprintf(&doc, "k%d: 1, ", i)
	}
	doc.WriteString("}\n")
	resp, err := http.Post(srv.URL+BasePath+"/projects/p/stages", "application/yaml", strings.NewReader(doc.String()))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("HTTP %d %s %.200s: want the handler to get JSON", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	var got struct {
		Spec struct {
			PromotionTemplate struct {
				Spec struct {
					Steps []struct{ Config map[string]any }
				}
			}
		}
	}
	if err := json.Unmarshal(b, &got); err != nil || len(got.Spec.PromotionTemplate.Spec.Steps) != 1 {
		t.Fatalf("the handler got %.200s: %v", b, err)
	}
	if cfg := got.Spec.PromotionTemplate.Spec.Steps[0].Config; len(cfg) != 80000 || cfg["k79999"] != 1.0 {
		t.Errorf("the handler got %d keys, k79999 = %v; want 80000, 1", len(cfg), cfg["k79999"])
	}
}

// Reading is linear in the body: 80,000 keys (the bound of nodes is far
// above) read in one pass, each key once.
func BenchmarkYAMLKeys(b *testing.B) {
	for _, n := range []int{10000, 80000} {
		var doc strings.Builder
		doc.WriteString("metadata:\n  labels:\n")
		for i := range n {
			fmt.Fprintf(&doc, "    k%d: v\n", i)
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.SetBytes(int64(doc.Len()))
			for b.Loop() {
				if _, err := yamlToJSON([]byte(doc.String())); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
