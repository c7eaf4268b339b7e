package engine

import (
	"reflect"
	"strings"
	"testing"
)

var templateEnv = map[string]any{
	"ctx": map[string]any{"stage": "prod"},
	"outputs": map[string]any{
		"build": map[string]any{"tag": "v1.2.3", "count": 3, "num": "42", "ok": true},
	},
	"vars": map[string]any{"repo": "ghcr.io/x", "list": []any{"a", "b"}},
}

func TestEvaluateTemplate(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want any
	}{
		{"no expression stays a string", "42", "42"},
		{"no expression, plain text", "hello", "hello"},
		{"single expression: number", "${{ 1 + 2 }}", 3.0},
		{"single expression: int from env is float64", "${{ outputs.build.count }}", 3.0},
		{"single expression: bool", "${{ outputs.build.ok }}", true},
		{"single expression: string", "${{ outputs.build.tag }}", "v1.2.3"},
		{"single expression: map", "${{ {'a': 1} }}", map[string]any{"a": 1.0}},
		{"single expression: list", "${{ vars.list }}", []any{"a", "b"}},
		{"single expression: nil", "${{ nil }}", nil},
		{"single expression: missing var is nil", "${{ vars.nope }}", nil},
		{"no spaces", "${{vars.repo}}", "ghcr.io/x"},
		{"embedded: string concatenation", "${{ vars.repo }}:${{ outputs.build.tag }}", "ghcr.io/x:v1.2.3"},
		{"embedded: number in text", "v${{ 1 }}", "v1"},
		{"embedded: bool in text", "ok=${{ true }}", "ok=true"},
		{"embedded: map in text as JSON", "m=${{ {'a': 1} }}", `m={"a":1}`},
		{"embedded: ctx", "${{ ctx.stage }}-cluster", "prod-cluster"},
		// Kargo reads the rendered text back as YAML would.
		{"kargo: numeric-looking string becomes a number", "${{ outputs.build.num }}", 42.0},
		{"kargo: text that renders as a number is a number", "1${{ 2 }}", 12.0},
		{"kargo: quote keeps a string", "${{ quote(outputs.build.num) }}", "42"},
		{"kargo: quote of bool", "${{ quote(true) }}", "true"},
		{"kargo: quote of number", "${{ quote(42) }}", "42"},
		{"kargo: quote of nil", "${{ quote(nil) }}", "null"},
		{"kargo: quote of map", "${{ quote({'foo': 'bar'}) }}", `{"foo":"bar"}`},
		{"kargo: string 'null' becomes nil", `${{ "null" }}`, nil},
		{"kargo: trailing newline ignored for typing", "${{ 5 }}\n", 5.0},
		{"kargo: trailing newline kept on strings", "${{ 'x' }}\n", "x\n"},
		// Departure from Kargo: 1 stays a number (Kargo's ParseBool made it true).
		{"1 is a number, not true", "${{ 1 }}", 1.0},
		{"0 is a number, not false", "${{ 0 }}", 0.0},
		{"NaN text stays a string", "${{ 'NaN' }}", "NaN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := EvaluateTemplate(tt.in, templateEnv)
			if err != nil {
				t.Fatalf("EvaluateTemplate(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("EvaluateTemplate(%q) = %#v, want %#v", tt.in, got, tt.want)
			}
		})
	}
}

func TestEvaluateTemplateErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string // substrings of the error
	}{
		{"unterminated", "${{ 1 + 2", []string{"no closing", `"${{ 1 + 2"`}},
		{"syntax error", "${{ 1 + }}", []string{`error evaluating expression "1 +"`, "unexpected token"}},
		{"runtime error", "x ${{ outputs.missing.x }}", []string{`"outputs.missing.x"`, "cannot fetch x"}},
		{"unknown function", "${{ nope() }}", []string{`"nope()"`}},
		{"unencodable result", "${{ 1/0 }}", []string{`"1/0"`, "JSON"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := EvaluateTemplate(tt.in, templateEnv)
			if err == nil {
				t.Fatalf("EvaluateTemplate(%q): no error", tt.in)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestEvaluateConfig(t *testing.T) {
	raw := []byte(`{
		"image": "${{ vars.repo }}:${{ outputs.build.tag }}",
		"tag": "${{ outputs.build.tag }}",
		"replicas": "${{ outputs.build.count }}",
		"enabled": "${{ outputs.build.ok }}",
		"literal": 7,
		"plain": "42",
		"${{ not.a.key }}": "keys are not evaluated",
		"nested": {"list": ["${{ ctx.stage }}", {"deep": "${{ vars.list }}"}, 1, null, true]}
	}`)
	got, err := EvaluateConfig(raw, templateEnv)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"image":            "ghcr.io/x:v1.2.3",
		"tag":              "v1.2.3",
		"replicas":         3.0,
		"enabled":          true,
		"literal":          7.0,
		"plain":            "42",
		"${{ not.a.key }}": "keys are not evaluated",
		"nested": map[string]any{"list": []any{
			"prod", map[string]any{"deep": []any{"a", "b"}}, 1.0, nil, true,
		}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("EvaluateConfig =\n%#v\nwant\n%#v", got, want)
	}
}

func TestEvaluateConfigEdges(t *testing.T) {
	for _, raw := range []string{"", "  ", "null"} {
		got, err := EvaluateConfig([]byte(raw), templateEnv)
		if err != nil || got != nil {
			t.Errorf("EvaluateConfig(%q) = %v, %v; want nil, nil", raw, got, err)
		}
	}
	tests := []struct {
		name string
		raw  string
		env  map[string]any
		want []string
	}{
		{"not JSON", `{"a": ${{ true }} }`, templateEnv, []string{"not a valid JSON object"}},
		{"not an object", `["a"]`, templateEnv, []string{"not a valid JSON object"}},
		{"quote is reserved", `{}`, map[string]any{"quote": 1}, []string{`"quote" is a forbidden key`}},
		{"error names field and expression", `{"a": {"b": ["ok", "${{ outputs.nope.x }}"]}}`, templateEnv,
			[]string{"config field a.b[1]", `"outputs.nope.x"`, "cannot fetch x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := EvaluateConfig([]byte(tt.raw), tt.env)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
