package stages

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/pipeline"
)

// validStage is a regular Stage Kargo's rules accept, as a client would
// send it.
func validStage(name string) *kargoapi.Stage {
	return &kargoapi.Stage{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kargo.akuity.io/v1alpha1", Kind: "Stage"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kargoapi.StageSpec{
			RequestedFreight: []kargoapi.FreightRequest{{
				Origin:  kargoapi.FreightOrigin{Kind: kargoapi.FreightOriginKindWarehouse, Name: "w"},
				Sources: kargoapi.FreightSources{Direct: true},
			}},
			PromotionTemplate: &kargoapi.PromotionTemplate{Spec: kargoapi.PromotionTemplateSpec{
				Steps: []kargoapi.PromotionStep{{Uses: "git-clone"}},
			}},
		},
	}
}

func TestPrepare(t *testing.T) {
	tests := []struct {
		name     string
		path     string // the Stage's name in the path; "" on a create
		change   func(s *kargoapi.Stage)
		want     []string // the field errors' paths and details, "" = accepted
		wantName string
	}{
		{name: "create", wantName: "test"},
		{name: "create without apiVersion and kind", change: func(s *kargoapi.Stage) { s.TypeMeta = metav1.TypeMeta{} },
			wantName: "test"},
		{name: "replace: the name from the path", path: "test", change: func(s *kargoapi.Stage) { s.Name = "" },
			wantName: "test"},
		{name: "create without a name", change: func(s *kargoapi.Stage) { s.Name = "" },
			want: []string{"metadata.name: Required value"}},
		{name: "replace of another Stage", path: "other",
			want: []string{`metadata.name: Invalid value: "test": must be the Stage's name in the path, "other"`}},
		{name: "another project", change: func(s *kargoapi.Stage) { s.Namespace = "elsewhere" },
			want: []string{`metadata.namespace: Invalid value: "elsewhere": must be the project "p" (or left out)`}},
		{name: "another group and kind, all reported", change: func(s *kargoapi.Stage) {
			s.APIVersion, s.Kind = "kargo.akuity.io/v1beta1", "Warehouse"
		}, want: []string{
			`apiVersion: Unsupported value: "kargo.akuity.io/v1beta1": supported values: "kargo.akuity.io/v1alpha1"`,
			`kind: Unsupported value: "Warehouse": supported values: "Stage"`,
		}},
		{name: "Kargo's rules after the path's", change: func(s *kargoapi.Stage) { s.Spec.RequestedFreight = nil },
			want: []string{"spec.requestedFreight: Required value"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := validStage("test")
			if tc.change != nil {
				tc.change(s)
			}
			err := prepare("p", tc.path, s)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				if s.Name != tc.wantName || s.Namespace != "p" {
					t.Errorf("name %q in %q, want %q in p", s.Name, s.Namespace, tc.wantName)
				}
				return
			}
			var fe pipeline.FieldErrors
			if !errors.As(err, &fe) || !errors.Is(err, pipeline.ErrInvalid) {
				t.Fatalf("got %v (%T), want field errors", err, err)
			}
			var got []string
			for _, e := range fe {
				got = append(got, strings.Join(e.Path, ".")+": "+e.Detail)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("field errors\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// TestPrepareDefaults: what Kargo's mutating webhook does is done before
// the body is stored: the shard label follows spec.shard.
func TestPrepareDefaults(t *testing.T) {
	s := validStage("test")
	s.Spec.Shard = "east"
	if err := prepare("p", "", s); err != nil {
		t.Fatal(err)
	}
	if got := s.Labels[kargoapi.LabelKeyShard]; got != "east" {
		t.Errorf("shard label %q, want east", got)
	}
	s.Spec.Shard = ""
	if err := prepare("p", "test", s); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Labels[kargoapi.LabelKeyShard]; ok {
		t.Errorf("shard label kept without spec.shard: %v", s.Labels)
	}
}

func TestRefresh(t *testing.T) {
	const token = "2025-01-02T03:04:05.123456789Z"
	var patch map[string]map[string]map[string]string
	if err := json.Unmarshal(annotationPatch(kargoapi.AnnotationKeyRefresh, token), &patch); err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{kargoapi.AnnotationKeyRefresh: token}; !reflect.DeepEqual(patch["metadata"]["annotations"], want) || len(patch) != 1 {
		t.Errorf("refresh patch %v, want only the annotation %v", patch, want)
	}

	stage := func(handled string, deleted bool) *Update {
		s := validStage("test")
		s.Status.LastHandledRefresh = handled
		return &Update{Object: s, Deleted: deleted}
	}
	tests := []struct {
		name string
		u    *Update
		want bool
	}{
		{"handled", stage(token, false), true},
		{"not yet", stage("", false), false},
		{"an earlier refresh", stage("2025-01-02T03:04:04Z", false), false},
		{"deleted", stage(token, true), false},
	}
	for _, tc := range tests {
		if got := refreshed(tc.u, token); got != tc.want {
			t.Errorf("%s: refreshed = %v, want %v", tc.name, got, tc.want)
		}
	}
}
