package freight

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/pipeline"
)

func TestPrepare(t *testing.T) {
	tests := []struct {
		name   string
		change func(f *kargoapi.Freight)
		want   string // "" = accepted
	}{
		{name: "in the project", change: func(*kargoapi.Freight) {}},
		{name: "without a namespace", change: func(f *kargoapi.Freight) { f.Namespace = "" }},
		{name: "status and version are the server's", change: func(f *kargoapi.Freight) {
			f.ResourceVersion = "42"
			f.Status.AddVerifiedStage("prod", time.Now())
		}},
		{name: "another project", change: func(f *kargoapi.Freight) { f.Namespace = "q" },
			want: `metadata.namespace: Invalid value: "q": must be the project "p" (or left out)`},
		{name: "Kargo's rules", change: func(f *kargoapi.Freight) { f.Images = nil },
			want: "freight must contain at least one commit, image, or chart"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := freight("abc")
			tc.change(f)
			err := prepare("p", f)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				if f.Namespace != "p" || f.ResourceVersion != "" || !reflect.DeepEqual(f.Status, kargoapi.FreightStatus{}) {
					t.Errorf("namespace %q, resourceVersion %q, status %+v: want p, none, none", f.Namespace, f.ResourceVersion, f.Status)
				}
				return
			}
			if !errors.Is(err, pipeline.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want ErrInvalid containing %q", err, tc.want)
			}
		})
	}
}

func TestFreeAlias(t *testing.T) {
	tests := []struct {
		name  string
		n     int
		taken []string
		want  string
	}{
		{"empty project", 0, nil, "freight-1"},
		{"after the count", 2, []string{"freight-1", "freight-2"}, "freight-3"},
		{"past aliases in use", 1, []string{"freight-2", "freight-3"}, "freight-4"},
		{"a lower one free is not reused", 3, []string{"freight-1"}, "freight-4"},
	}
	for _, tc := range tests {
		taken := func(a string) bool { return strings.Contains(strings.Join(tc.taken, " ")+" ", a+" ") }
		if got := freeAlias(tc.n, taken); got != tc.want {
			t.Errorf("%s: freeAlias = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestApprovalPatch(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	var got map[string]any
	if err := json.Unmarshal(approvalPatch("uat", at), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"status": map[string]any{"approvedFor": map[string]any{
		"uat": map[string]any{"approvedAt": "2025-01-02T03:04:05Z"}}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("patch %v, want %v (one key added, nothing else)", got, want)
	}
}
