package webhooks

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"sigs.k8s.io/yaml"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/rules"
)

// The plugin against admission requests as the API server makes them (the
// API server's own path is internal/controlplane's admission tests).

func object(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func request(obj, old runtime.Object, plural, subresource string, op admission.Operation) admission.Attributes {
	u := obj.(*unstructured.Unstructured)
	return admission.NewAttributesRecord(obj, old, kargoapi.SchemeGroupVersion.WithKind(u.GetKind()),
		"kargo-demo", u.GetName(), kargoapi.SchemeGroupVersion.WithResource(plural), subresource, op, nil, false, nil)
}

const stageDoc = `
apiVersion: kargo.akuity.io/v1alpha1
kind: Stage
metadata: {name: test, labels: {team: blue}}
spec:
  shard: east
  requestedFreight:
  - origin: {kind: Warehouse, name: w}
    sources: {direct: true}
  promotionTemplate:
    spec:
      steps:
      - uses: git-clone
        as: %s
`

func stage(t *testing.T, alias string) *unstructured.Unstructured {
	return object(t, strings.Replace(stageDoc, "%s", alias, 1))
}

func TestAdmitStage(t *testing.T) {
	tests := []struct {
		name        string
		subresource string
		wantShard   string
	}{
		{name: "a Stage write gets the shard label", wantShard: "east"},
		{name: "a status write is not admitted", subresource: "status"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := stage(t, "clone")
			err := NewAdmission().Admit(t.Context(), request(u, nil, kargoapi.StagePlural, tc.subresource, admission.Create), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := u.GetLabels(); got[kargoapi.LabelKeyShard] != tc.wantShard || got["team"] != "blue" {
				t.Errorf("labels %v, want shard %q and team blue", got, tc.wantShard)
			}
		})
	}
}

func TestValidateStage(t *testing.T) {
	tests := []struct {
		name        string
		alias       string
		subresource string
		want        string // "" = admitted
	}{
		{name: "valid", alias: "clone"},
		{name: "reserved alias", alias: "step-1",
			want: `spec.promotionTemplate.spec.steps[0].as: Invalid value: "step-1": step alias is reserved`},
		{name: "a status write is not validated", alias: "step-1", subresource: "status"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, op := range []admission.Operation{admission.Create, admission.Update} {
				u := stage(t, tc.alias)
				err := NewAdmission().Validate(t.Context(), request(u, u.DeepCopy(), kargoapi.StagePlural, tc.subresource, op), nil)
				checkInvalid(t, err, "Stage", tc.want)
			}
		})
	}
}

const promotionDoc = `
apiVersion: kargo.akuity.io/v1alpha1
kind: Promotion
metadata: {name: test.01.abc}
spec:
  stage: test
  freight: abc
  steps:
  - uses: git-clone
    as: clone
`

func TestValidatePromotion(t *testing.T) {
	tests := []struct {
		name   string
		op     admission.Operation
		change func(u *unstructured.Unstructured)
		want   string
	}{
		{name: "create", op: admission.Create, change: func(*unstructured.Unstructured) {}},
		{name: "update of metadata", op: admission.Update, change: func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{kargoapi.AnnotationKeyAbort: "terminate"})
		}},
		{name: "update of the spec", op: admission.Update, change: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "other", "spec", "freight")
		}, want: "spec: Invalid value: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := object(t, promotionDoc)
			u := old.DeepCopy()
			tc.change(u)
			err := NewAdmission().Validate(t.Context(), request(u, old, kargoapi.PromotionPlural, "", tc.op), nil)
			checkInvalid(t, err, "Promotion", tc.want)
			if tc.want != "" && !strings.Contains(err.Error(), rules.MsgSpecImmutable) {
				t.Errorf("%v does not say %q", err, rules.MsgSpecImmutable)
			}
		})
	}
}

const freightDoc = `
apiVersion: kargo.akuity.io/v1alpha1
kind: Freight
metadata: {name: chosen-by-user, labels: {team: blue}}
alias: frosty-fox
origin: {kind: Warehouse, name: w}
images:
- {repoURL: example.com/app, tag: v1, digest: "sha256:1"}
`

func TestAdmitFreight(t *testing.T) {
	var typed kargoapi.Freight
	if err := yaml.Unmarshal([]byte(freightDoc), &typed); err != nil {
		t.Fatal(err)
	}
	id := rules.GenerateFreightID(&typed)
	tests := []struct {
		name      string
		op        admission.Operation
		alias     string // "" removes the alias field
		label     string // the alias label before admission
		wantName  string
		wantAlias string // the alias field and label after admission
	}{
		{name: "create: the name is the ID, the label the alias", op: admission.Create,
			alias: "frosty-fox", label: "stale", wantName: id, wantAlias: "frosty-fox"},
		{name: "create without an alias: none is made", op: admission.Create, wantName: id},
		{name: "create without an alias field: the label's is adopted", op: admission.Create,
			label: "calm-cat", wantName: id, wantAlias: "calm-cat"},
		{name: "update: the name stays, the label follows", op: admission.Update,
			alias: "calm-cat", label: "frosty-fox", wantName: "chosen-by-user", wantAlias: "calm-cat"},
		{name: "update without an alias: the label goes", op: admission.Update,
			label: "frosty-fox", wantName: "chosen-by-user"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := object(t, freightDoc)
			if tc.alias == "" {
				delete(u.Object, "alias")
			} else {
				u.Object["alias"] = tc.alias
			}
			if tc.label != "" {
				u.SetLabels(map[string]string{"team": "blue", kargoapi.LabelKeyAlias: tc.label})
			}
			if err := NewAdmission().Admit(t.Context(), request(u, nil, kargoapi.FreightPlural, "", tc.op), nil); err != nil {
				t.Fatal(err)
			}
			alias, _, _ := unstructured.NestedString(u.Object, "alias")
			label, labelled := u.GetLabels()[kargoapi.LabelKeyAlias]
			if u.GetName() != tc.wantName || alias != tc.wantAlias || label != tc.wantAlias ||
				labelled != (tc.wantAlias != "") || u.GetLabels()["team"] != "blue" {
				t.Errorf("name %q, alias %q, labels %v; want name %q, alias %q", u.GetName(), alias, u.GetLabels(), tc.wantName, tc.wantAlias)
			}
		})
	}
}

func TestValidateFreight(t *testing.T) {
	tests := []struct {
		name   string
		op     admission.Operation
		change func(u *unstructured.Unstructured)
		want   string
	}{
		{name: "create", op: admission.Create, change: func(*unstructured.Unstructured) {}},
		{name: "create without artifacts", op: admission.Create, change: func(u *unstructured.Unstructured) {
			delete(u.Object, "images")
		}, want: "freight must contain at least one commit, image, or chart"},
		{name: "update of the alias", op: admission.Update, change: func(u *unstructured.Unstructured) {
			u.Object["alias"] = "calm-cat"
		}},
		{name: "update of an image", op: admission.Update, change: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"repoURL": "example.com/app", "tag": "v2"}}, "images")
		}, want: "images[0]: Invalid value: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := object(t, freightDoc)
			u := old.DeepCopy()
			tc.change(u)
			err := NewAdmission().Validate(t.Context(), request(u, old, kargoapi.FreightPlural, "", tc.op), nil)
			checkInvalid(t, err, "Freight", tc.want)
		})
	}
}

// checkInvalid: err is nil when want is empty, else a 422 Invalid of kind
// whose message contains want.
func checkInvalid(t *testing.T, err error, kind, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Errorf("rejected: %v", err)
		}
		return
	}
	var se *apierrors.StatusError
	if !errors.As(err, &se) || !apierrors.IsInvalid(err) || se.ErrStatus.Code != 422 || se.ErrStatus.Details.Kind != kind {
		t.Fatalf("got %v, want 422 Invalid of a %s", err, kind)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("%q does not contain %q", err, want)
	}
}
