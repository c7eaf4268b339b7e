// Package webhooks runs Kargo's webhooks in process, as an admission plugin
// of the embedded API server.
package webhooks

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"

	kargov1alpha1 "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/rules"
)

var (
	stageResource      = kargov1alpha1.Resource(kargov1alpha1.StagePlural)
	stageGroupKind     = schema.GroupKind{Group: kargov1alpha1.GroupName, Kind: "Stage"}
	promotionResource  = kargov1alpha1.Resource(kargov1alpha1.PromotionPlural)
	promotionGroupKind = schema.GroupKind{Group: kargov1alpha1.GroupName, Kind: "Promotion"}
	freightResource    = kargov1alpha1.Resource(kargov1alpha1.FreightPlural)
	freightGroupKind   = schema.GroupKind{Group: kargov1alpha1.GroupName, Kind: "Freight"}
)

// Admission does in process what Kargo's Stage, Promotion and Freight
// webhooks do in a cluster, which the embedded control plane (no Services,
// so no admission webhooks) cannot call. The schema rules are the CRDs',
// enforced by the API server between the two phases. Writes of the status
// subresource are not admitted here. It rejects with 422 Invalid and
// Kargo's field errors.
//
//   - Stage, on create and update: defaults the shard label (mutating) and
//     rejects what Kargo's validating webhook rejects.
//   - Promotion, on update: the spec is immutable. (Kargo's defaulting of a
//     new Promotion from its Stage needs the Stage; rules.BuildPromotion
//     builds Promotions whole.)
//   - Freight: on create the name becomes the Freight's ID (its content
//     hash) and the alias label follows the alias field (mutating); a
//     Freight without origin or artifacts is rejected; on update the alias
//     label follows the field and origin and artifacts are immutable. No
//     alias is generated: that, and rejecting an alias another Freight
//     has, needs a Freight lister.
type Admission struct {
	*admission.Handler
}

var (
	_ admission.MutationInterface   = (*Admission)(nil)
	_ admission.ValidationInterface = (*Admission)(nil)
)

// NewAdmission returns the plugin, for the API server's admission chain.
func NewAdmission() *Admission {
	return &Admission{Handler: admission.NewHandler(admission.Create, admission.Update)}
}

// Admit defaults the Stage or Freight in the request.
func (k *Admission) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetSubresource() != "" {
		return nil
	}
	switch a.GetResource().GroupResource() {
	case stageResource:
		u, stage, ok := objectOf[kargov1alpha1.Stage](a.GetObject())
		if ok && rules.DefaultStage(stage) {
			u.SetLabels(stage.Labels)
		}
	case freightResource:
		u, f, ok := objectOf[kargov1alpha1.Freight](a.GetObject())
		if !ok {
			return nil
		}
		if err := rules.DefaultFreight(f, a.GetOperation() == admission.Create, nil); err != nil {
			return apierrors.NewInternalError(err)
		}
		u.SetName(f.Name)
		u.SetLabels(f.Labels)
		if f.Alias != "" {
			u.Object["alias"] = f.Alias
		} else {
			delete(u.Object, "alias")
		}
	}
	return nil
}

// Validate rejects a Stage, Promotion or Freight write Kargo's validating
// webhooks would reject.
func (k *Admission) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetSubresource() != "" {
		return nil
	}
	update := a.GetOperation() == admission.Update
	switch a.GetResource().GroupResource() {
	case stageResource:
		_, stage, ok := objectOf[kargov1alpha1.Stage](a.GetObject())
		if !ok {
			return nil
		}
		if errs := rules.ValidateStageWebhook(stage); len(errs) > 0 {
			return apierrors.NewInvalid(stageGroupKind, stage.Name, errs)
		}
	case promotionResource:
		if !update {
			return nil
		}
		_, promo, ok := objectOf[kargov1alpha1.Promotion](a.GetObject())
		_, old, oldOK := objectOf[kargov1alpha1.Promotion](a.GetOldObject())
		if !ok || !oldOK {
			return nil
		}
		if errs := rules.ValidatePromotionUpdate(old, promo); len(errs) > 0 {
			return apierrors.NewInvalid(promotionGroupKind, promo.Name, errs)
		}
	case freightResource:
		_, f, ok := objectOf[kargov1alpha1.Freight](a.GetObject())
		if !ok {
			return nil
		}
		var errs field.ErrorList
		if update {
			if _, old, oldOK := objectOf[kargov1alpha1.Freight](a.GetOldObject()); oldOK {
				errs = rules.ValidateFreightUpdate(old, f)
			}
		} else {
			errs = rules.ValidateFreight(f)
		}
		if len(errs) > 0 {
			return apierrors.NewInvalid(freightGroupKind, f.Name, errs)
		}
	}
	return nil
}

// objectOf converts the custom resource a request writes (or replaces),
// which arrives as unstructured, to its Go type. One that does not convert
// is left to the API server's schema validation.
func objectOf[T any](obj runtime.Object) (*unstructured.Unstructured, *T, bool) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u == nil {
		return nil, nil, false
	}
	var t T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &t); err != nil {
		return nil, nil, false
	}
	return u, &t, true
}
