package controlplane

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	kargov1alpha1 "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo"
)

var (
	stageResource  = kargov1alpha1.Resource(kargov1alpha1.StagePlural)
	stageGroupKind = schema.GroupKind{Group: kargov1alpha1.GroupName, Kind: "Stage"}
)

// kargoAdmission does in process what Kargo's Stage webhooks do in a
// cluster, which the embedded control plane (no Services, so no admission
// webhooks) cannot call: on create and update of a Stage it defaults the
// shard label (mutating) and rejects what Kargo's validating webhook
// rejects (422 Invalid with Kargo's field errors). The schema rules are the
// CRD's, enforced by the API server between the two phases.
type kargoAdmission struct {
	*admission.Handler
}

var (
	_ admission.MutationInterface   = (*kargoAdmission)(nil)
	_ admission.ValidationInterface = (*kargoAdmission)(nil)
)

func newKargoAdmission() *kargoAdmission {
	return &kargoAdmission{Handler: admission.NewHandler(admission.Create, admission.Update)}
}

// Admit defaults the Stage in the request.
func (k *kargoAdmission) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	u, stage, ok := stageOf(a)
	if !ok {
		return nil
	}
	if kargo.DefaultStage(stage) {
		u.SetLabels(stage.Labels)
	}
	return nil
}

// Validate rejects a Stage Kargo's validating webhook would reject.
func (k *kargoAdmission) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	_, stage, ok := stageOf(a)
	if !ok {
		return nil
	}
	if errs := kargo.ValidateStageWebhook(stage); len(errs) > 0 {
		return apierrors.NewInvalid(stageGroupKind, stage.Name, errs)
	}
	return nil
}

// stageOf returns the Stage a request writes (not its status). A custom
// resource arrives as unstructured; one that does not convert is left to
// the API server's schema validation.
func stageOf(a admission.Attributes) (*unstructured.Unstructured, *kargov1alpha1.Stage, bool) {
	if a.GetResource().GroupResource() != stageResource || a.GetSubresource() != "" {
		return nil, nil, false
	}
	u, ok := a.GetObject().(*unstructured.Unstructured)
	if !ok {
		return nil, nil, false
	}
	var stage kargov1alpha1.Stage
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &stage); err != nil {
		return nil, nil, false
	}
	return u, &stage, true
}
