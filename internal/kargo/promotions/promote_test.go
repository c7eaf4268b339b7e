package promotions

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/rules"
	"taskactions/internal/pipeline"
)

var warehouse = kargoapi.FreightOrigin{Kind: kargoapi.FreightOriginKindWarehouse, Name: "w"}

func TestFreightRefCheck(t *testing.T) {
	tests := []struct {
		ref FreightRef
		ok  bool
	}{
		{FreightRef{Name: "abc"}, true},
		{FreightRef{Alias: "frosty-fox"}, true},
		{FreightRef{}, false},
		{FreightRef{Name: "abc", Alias: "frosty-fox"}, false},
	}
	for _, tc := range tests {
		err := tc.ref.check()
		if (err == nil) != tc.ok {
			t.Errorf("%+v: check = %v, want ok %v", tc.ref, err, tc.ok)
		}
		if err != nil && (!errors.Is(err, pipeline.ErrInvalid) || err.Error() != rules.MsgFreightOrAlias) {
			t.Errorf("%+v: %v, want ErrInvalid %q", tc.ref, err, rules.MsgFreightOrAlias)
		}
	}
}

// stage takes Freight of warehouse w from upstream ("" = directly); steps
// false makes it a control-flow Stage.
func stage(name, upstream string, steps bool) *kargoapi.Stage {
	src := kargoapi.FreightSources{Direct: upstream == ""}
	if upstream != "" {
		src.Stages = []string{upstream}
	}
	s := &kargoapi.Stage{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "p", UID: types.UID("uid-" + name)},
		Spec: kargoapi.StageSpec{RequestedFreight: []kargoapi.FreightRequest{{Origin: warehouse, Sources: src}}}}
	if steps {
		s.Spec.PromotionTemplate = &kargoapi.PromotionTemplate{Spec: kargoapi.PromotionTemplateSpec{
			Steps: []kargoapi.PromotionStep{{Uses: "git-clone"}}}}
	}
	return s
}

func TestDownstreamOf(t *testing.T) {
	verifiedIn := func(stages ...string) *kargoapi.Freight {
		f := &kargoapi.Freight{ObjectMeta: metav1.ObjectMeta{Name: "abc", Namespace: "p"}, Origin: warehouse}
		for _, s := range stages {
			f.Status.AddVerifiedStage(s, time.Now())
		}
		return f
	}
	approvedFor := func(f *kargoapi.Freight, stage string) *kargoapi.Freight {
		f.Status.AddApprovedStage(stage, time.Now())
		return f
	}
	project := []*kargoapi.Stage{stage("dev", "", true), stage("uat", "dev", true), stage("gate", "dev", false),
		stage("prod", "uat", true)}
	tests := []struct {
		name    string
		f       *kargoapi.Freight
		from    string
		want    []string
		wantErr error
		msg     string
	}{
		{name: "every Stage taking it from dev, control flow included", f: verifiedIn("dev"), from: "dev",
			want: []string{"uat", "gate"}},
		{name: "not verified upstream: all or nothing", f: verifiedIn(), from: "dev", wantErr: pipeline.ErrInvalid,
			msg: `Freight "abc" is not available to downstream Stage "uat"`},
		{name: "approved for the one downstream", f: approvedFor(verifiedIn(), "prod"), from: "uat", want: []string{"prod"}},
		{name: "no Stage downstream", f: verifiedIn("prod"), from: "prod", wantErr: pipeline.ErrNotFound,
			msg: `stage "prod" has no downstream stages`},
		{name: "another origin is not taken", f: func() *kargoapi.Freight {
			f := verifiedIn("dev")
			f.Origin.Name = "elsewhere"
			return f
		}(), from: "dev", wantErr: pipeline.ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := downstreamOf(project, tc.f, tc.from)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.msg) || got != nil {
					t.Errorf("got %v, %v; want %v %q", got, err, tc.wantErr, tc.msg)
				}
				return
			}
			var names []string
			for _, s := range got {
				names = append(names, s.Name)
			}
			if err != nil || !reflect.DeepEqual(names, tc.want) {
				t.Errorf("downstream %v, %v; want %v", names, err, tc.want)
			}
		})
	}
}

func TestBuild(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	withTask := stage("dev", "", true)
	withTask.Spec.PromotionTemplate.Spec.Steps = []kargoapi.PromotionStep{{Task: &kargoapi.PromotionTaskReference{Name: "deploy"}}}
	tests := []struct {
		name    string
		st      *kargoapi.Stage
		freight string
		wantErr error
	}{
		{"built", stage("dev", "", true), "abc1234def", nil},
		{"a step needs a PromotionTask: unsupported", withTask, "abc1234def", pipeline.ErrUnsupported},
		{"no steps: invalid", stage("gate", "", false), "abc1234def", pipeline.ErrInvalid},
		{"no Freight: invalid", stage("dev", "", true), "", pipeline.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := build(tc.st, tc.freight, "email:ada@example.com", now, nil)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || p != nil {
					t.Errorf("got %v, %v; want %v", p, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Spec.Stage != "dev" || p.Spec.Freight != tc.freight || !strings.HasPrefix(p.Name, "dev.") {
				t.Errorf("Promotion %s of %s to %s", p.Name, p.Spec.Freight, p.Spec.Stage)
			}
		})
	}
}

func TestAbortPatch(t *testing.T) {
	var patch struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(abortPatch("email:ada@example.com"), &patch); err != nil {
		t.Fatal(err)
	}
	var req kargoapi.AbortPromotionRequest
	if err := json.Unmarshal([]byte(patch.Metadata.Annotations[kargoapi.AnnotationKeyAbort]), &req); err != nil {
		t.Fatalf("annotation %q: %v", patch.Metadata.Annotations[kargoapi.AnnotationKeyAbort], err)
	}
	if req.Action != kargoapi.AbortActionTerminate || req.Actor != "email:ada@example.com" || len(patch.Metadata.Annotations) != 1 {
		t.Errorf("abort request %+v in %v", req, patch.Metadata.Annotations)
	}
}
