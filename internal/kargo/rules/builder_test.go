package rules

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

func promoStage(name string, steps ...kargoapi.PromotionStep) *kargoapi.Stage {
	return &kargoapi.Stage{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kargo-demo"},
		Spec: kargoapi.StageSpec{
			Vars: []kargoapi.ExpressionVariable{{Name: "a", Value: "stage"}},
			PromotionTemplate: &kargoapi.PromotionTemplate{Spec: kargoapi.PromotionTemplateSpec{
				Vars:  []kargoapi.ExpressionVariable{{Name: "a", Value: "template"}, {Name: "b", Value: "2"}},
				Steps: steps,
			}},
		},
	}
}

// It reads better whole: its cases are one table, a line each.
func TestBuildPromotion(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	entropy := func() *bytes.Reader { return bytes.NewReader(bytes.Repeat([]byte{0x42}, 64)) }
	wantULID := strings.ToLower(ulid.MustNew(ulid.Timestamp(now), entropy()).String())
	const freight = "ABCDEF0123456789"

	t.Run("from the Stage's template", func(t *testing.T) {
		s := promoStage("Test",
			kargoapi.PromotionStep{Uses: "git-clone"},
			kargoapi.PromotionStep{Uses: "git-commit", As: "commit"},
			kargoapi.PromotionStep{Uses: "git-push"},
		)
		s.Spec.Shard = "east"
		s.UID = types.UID("uid-1")
		p, err := BuildPromotion(s, freight, "admin", now, entropy())
		if err != nil {
			t.Fatal(err)
		}
		if want := "test." + wantULID + ".abcdef0"; p.Name != want {
			t.Errorf("name %q, want %q", p.Name, want)
		}
		if p.Namespace != "kargo-demo" || p.Spec.Stage != "Test" || p.Spec.Freight != freight {
			t.Errorf("meta/spec: %+v %+v", p.ObjectMeta, p.Spec)
		}
		if p.Annotations[kargoapi.AnnotationKeyCreateActor] != "admin" || p.Labels[kargoapi.LabelKeyShard] != "east" {
			t.Errorf("annotations %v labels %v", p.Annotations, p.Labels)
		}
		if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].UID != "uid-1" || p.OwnerReferences[0].Kind != "Stage" ||
			p.OwnerReferences[0].Controller == nil || !*p.OwnerReferences[0].Controller {
			t.Errorf("owner: %+v", p.OwnerReferences)
		}
		wantVars := []kargoapi.ExpressionVariable{{Name: "a", Value: "stage"}, {Name: "a", Value: "template"}, {Name: "b", Value: "2"}}
		if !equality.Semantic.DeepEqual(p.Spec.Vars, wantVars) {
			t.Errorf("vars %v", p.Spec.Vars)
		}
		var aliases []string
		for _, st := range p.Spec.Steps {
			aliases = append(aliases, st.As)
		}
		if strings.Join(aliases, ",") != "step-1,commit,step-3" {
			t.Errorf("aliases %v", aliases)
		}
		if s.Spec.PromotionTemplate.Spec.Steps[0].As != "" {
			t.Error("the Stage's template was modified")
		}
	})

	t.Run("no actor, shard or UID", func(t *testing.T) {
		p, err := BuildPromotion(promoStage("s", kargoapi.PromotionStep{Uses: "x"}), "f1", "", now, nil)
		if err != nil {
			t.Fatal(err)
		}
		if p.Annotations != nil || p.Labels != nil || p.OwnerReferences != nil || !strings.HasSuffix(p.Name, ".f1") {
			t.Errorf("%+v", p.ObjectMeta)
		}
	})

	t.Run("long Stage name is truncated to fit 253", func(t *testing.T) {
		long := strings.Repeat("a", 253)
		p, err := BuildPromotion(promoStage(long, kargoapi.PromotionStep{Uses: "x"}), freight, "", now, entropy())
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Name) != 253 || !strings.HasPrefix(p.Name, strings.Repeat("a", 253-1-26-1-7)+".") {
			t.Errorf("name %q (%d)", p.Name, len(p.Name))
		}
	})

	t.Run("names order by creation", func(t *testing.T) {
		s := promoStage("s", kargoapi.PromotionStep{Uses: "x"})
		a, _ := BuildPromotion(s, "f", "", now, nil)
		b, _ := BuildPromotion(s, "f", "", now.Add(time.Millisecond), nil)
		if a.Name >= b.Name {
			t.Errorf("%q >= %q", a.Name, b.Name)
		}
	})

	errCases := []struct {
		name    string
		stage   *kargoapi.Stage
		freight string
		want    string
		task    bool
	}{
		{"nil stage", nil, "f", "stage is required", false},
		{"no template", &kargoapi.Stage{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, "f", `Stage "s" in namespace "" defines no promotion steps`, false},
		{"no freight", promoStage("s", kargoapi.PromotionStep{Uses: "x"}), "", "freight is required", false},
		{"no steps", promoStage("s"), "f", `Stage "s" in namespace "kargo-demo" defines no promotion steps`, false},
		{"task step", promoStage("s", kargoapi.PromotionStep{Uses: "x"},
			kargoapi.PromotionStep{Task: &kargoapi.PromotionTaskReference{Name: "deploy"}}), "f",
			`step "task-2" references PromotionTask "deploy"`, true},
		{"cluster task step", promoStage("s", kargoapi.PromotionStep{As: "t", Task: &kargoapi.PromotionTaskReference{Name: "d", Kind: "ClusterPromotionTask"}}), "f",
			`step "t" references ClusterPromotionTask "d"`, true},
	}
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := BuildPromotion(tc.stage, tc.freight, "", now, nil)
			if err == nil || p != nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, %v; want error containing %q", p, err, tc.want)
			}
			if errors.Is(err, ErrPromotionTaskUnsupported) != tc.task {
				t.Errorf("errors.Is(ErrPromotionTaskUnsupported) = %v", !tc.task)
			}
		})
	}
}

func TestPromotionMessages(t *testing.T) {
	for got, want := range map[string]string{
		MsgFreightNotAvailable("f", "s"):           `Freight "f" is not available to Stage "s"`,
		MsgFreightNotAvailableDownstream("f", "s"): `Freight "f" is not available to downstream Stage "s"`,
		MsgNoDownstreamStages("s"):                 `stage "s" has no downstream stages`,
		MsgFreightNotFound("f", "ns"):              `freight "f" not found in namespace "ns"`,
		MsgFreightAliasNotFound("a", "ns"):         `freight with alias "a" not found in namespace "ns"`,
		MsgNoPromotionSteps("s", "ns"):             `Stage "s" in namespace "ns" defines no promotion steps`,
		MsgFreightOrAlias:                          "exactly one of freight or freightAlias should not be empty",
		MsgSpecImmutable:                           "spec is immutable",
	} {
		if got != want {
			t.Errorf("%q, want %q", got, want)
		}
	}
}

func TestValidatePromotionUpdate(t *testing.T) {
	base := &kargoapi.Promotion{Spec: kargoapi.PromotionSpec{Stage: "s", Freight: "f", Steps: []kargoapi.PromotionStep{{Uses: "x"}}}}
	cases := []struct {
		name   string
		mutate func(p *kargoapi.Promotion)
		want   string
	}{
		{"unchanged", func(*kargoapi.Promotion) {}, ""},
		{"status and metadata change", func(p *kargoapi.Promotion) {
			p.Status.Phase = kargoapi.PromotionPhaseRunning
			p.Annotations = map[string]string{kargoapi.AnnotationKeyAbort: "terminate"}
		}, ""},
		{"freight changes", func(p *kargoapi.Promotion) { p.Spec.Freight = "g" }, "spec: Invalid value: "},
		{"step added", func(p *kargoapi.Promotion) { p.Spec.Steps = append(p.Spec.Steps, kargoapi.PromotionStep{Uses: "y"}) }, "spec is immutable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := base.DeepCopy()
			tc.mutate(p)
			errs := ValidatePromotionUpdate(base, p)
			if tc.want == "" {
				if len(errs) != 0 {
					t.Errorf("errors: %v", errs)
				}
				return
			}
			if len(errs) != 1 || errs[0].Field != "spec" || !strings.Contains(errs[0].Error(), tc.want) ||
				!strings.HasSuffix(errs[0].Error(), ": spec is immutable") {
				t.Errorf("errors: %v", errs)
			}
		})
	}
}
