// Package webhooks does in process what Kargo's Stage, Promotion, Freight,
// Warehouse and ProjectConfig webhooks (v1.6) do in a cluster, as an
// admission plugin of the embedded API server: that server has no
// Services, so it cannot call admission webhooks. The rules themselves
// are package rules'; this package reads them off admission requests and
// answers as the webhooks would. The control plane only chains the plugin
// into its API server.
package webhooks

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/rules"
)

var (
	stageResource      = kargoapi.Resource(kargoapi.StagePlural)
	stageGroupKind     = schema.GroupKind{Group: kargoapi.GroupName, Kind: "Stage"}
	promotionResource  = kargoapi.Resource(kargoapi.PromotionPlural)
	promotionGroupKind = schema.GroupKind{Group: kargoapi.GroupName, Kind: "Promotion"}
	freightResource    = kargoapi.Resource(kargoapi.FreightPlural)
	freightGroupKind   = schema.GroupKind{Group: kargoapi.GroupName, Kind: "Freight"}
	warehouseResource  = kargoapi.Resource(kargoapi.WarehousePlural)
	warehouseGroupKind = schema.GroupKind{Group: kargoapi.GroupName, Kind: "Warehouse"}
	configResource     = kargoapi.Resource(kargoapi.ProjectConfigPlural)
	configGroupKind    = schema.GroupKind{Group: kargoapi.GroupName, Kind: "ProjectConfig"}
)

// Admission is Kargo's webhooks as one admission plugin. The schema rules
// are the CRDs', enforced by the API server between its two phases. Writes
// of the status subresource are not admitted here. It rejects with 422
// Invalid and Kargo's field errors.
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
//   - Warehouse, on create and update: defaults the shard label and
//     rejects what Kargo's validating webhook rejects.
//   - ProjectConfig, on create and update: rejects what Kargo's
//     validating webhook rejects (on create, a name that is not the
//     project's too).
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
		admitStage(a)
	case freightResource:
		return admitFreight(a)
	case warehouseResource:
		admitWarehouse(a)
	}
	return nil
}

// Validate rejects a Stage, Promotion, Freight, Warehouse or ProjectConfig
// write Kargo's validating webhooks would reject.
func (k *Admission) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetSubresource() != "" {
		return nil
	}
	switch a.GetResource().GroupResource() {
	case stageResource:
		return validateStage(a)
	case promotionResource:
		return validatePromotion(a)
	case freightResource:
		return validateFreight(a)
	case warehouseResource:
		return validateWarehouse(a)
	case configResource:
		return validateProjectConfig(a)
	}
	return nil
}

// admitStage is Kargo's Stage defaulting webhook: the shard label.
func admitStage(a admission.Attributes) {
	u, stage, ok := objectOf[kargoapi.Stage](a.GetObject())
	if ok && rules.DefaultStage(stage) {
		u.SetLabels(stage.Labels)
	}
}

// admitWarehouse is Kargo's Warehouse defaulting webhook: the shard label.
func admitWarehouse(a admission.Attributes) {
	u, w, ok := objectOf[kargoapi.Warehouse](a.GetObject())
	if ok && rules.DefaultWarehouse(w) {
		u.SetLabels(w.Labels)
	}
}

func validateWarehouse(a admission.Attributes) error {
	_, w, ok := objectOf[kargoapi.Warehouse](a.GetObject())
	if !ok {
		return nil
	}
	if errs := rules.ValidateWarehouse(w); len(errs) > 0 {
		return apierrors.NewInvalid(warehouseGroupKind, w.Name, errs)
	}
	return nil
}

func validateProjectConfig(a admission.Attributes) error {
	_, cfg, ok := objectOf[kargoapi.ProjectConfig](a.GetObject())
	if !ok {
		return nil
	}
	if cfg.Namespace == "" { // the request's, on a create
		cfg.Namespace = a.GetNamespace()
	}
	if errs := rules.ValidateProjectConfig(cfg, a.GetOperation() == admission.Create); len(errs) > 0 {
		return apierrors.NewInvalid(configGroupKind, cfg.Name, errs)
	}
	return nil
}

// admitFreight is Kargo's Freight defaulting webhook: the name and the
// alias label, written back into the request's object.
func admitFreight(a admission.Attributes) error {
	u, f, ok := objectOf[kargoapi.Freight](a.GetObject())
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
	return nil
}

func validateStage(a admission.Attributes) error {
	_, stage, ok := objectOf[kargoapi.Stage](a.GetObject())
	if !ok {
		return nil
	}
	if errs := rules.ValidateStageWebhook(stage); len(errs) > 0 {
		return apierrors.NewInvalid(stageGroupKind, stage.Name, errs)
	}
	return nil
}

func validatePromotion(a admission.Attributes) error {
	if a.GetOperation() != admission.Update {
		return nil
	}
	_, promo, ok := objectOf[kargoapi.Promotion](a.GetObject())
	_, old, oldOK := objectOf[kargoapi.Promotion](a.GetOldObject())
	if !ok || !oldOK {
		return nil
	}
	if errs := rules.ValidatePromotionUpdate(old, promo); len(errs) > 0 {
		return apierrors.NewInvalid(promotionGroupKind, promo.Name, errs)
	}
	return nil
}

func validateFreight(a admission.Attributes) error {
	_, f, ok := objectOf[kargoapi.Freight](a.GetObject())
	if !ok {
		return nil
	}
	var errs field.ErrorList
	if a.GetOperation() == admission.Update {
		if _, old, oldOK := objectOf[kargoapi.Freight](a.GetOldObject()); oldOK {
			errs = rules.ValidateFreightUpdate(old, f)
		}
	} else {
		errs = rules.ValidateFreight(f)
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(freightGroupKind, f.Name, errs)
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
