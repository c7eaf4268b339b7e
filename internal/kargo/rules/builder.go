package rules

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

const (
	// promotionNameSeparator separates the parts of a Promotion's name.
	promotionNameSeparator = "."
	// promotionShortHashLength is how much of the Freight's name ends a
	// Promotion's name.
	promotionShortHashLength = 7
	// maxStageNamePrefixLength is the longest Stage name prefix that keeps a
	// Promotion's name within Kubernetes' limit of 253.
	maxStageNamePrefixLength = 253 - len(promotionNameSeparator) - ulid.EncodedSize -
		len(promotionNameSeparator) - promotionShortHashLength
)

// ErrPromotionTaskUnsupported is the cause of BuildPromotion's error for a
// promotion step that references a (Cluster)PromotionTask: inflating task
// steps is not served here.
var ErrPromotionTaskUnsupported = errors.New("promotion steps referencing a PromotionTask are not supported")

// BuildPromotion builds the Promotion of freight (a Freight name) into
// stage, as Kargo's PromotionBuilder.Build and its Promotion defaulting
// webhook do (v1.6.4):
//
//   - name "<stage>.<ULID>.<first 7 characters of freight>", lowercased,
//     the Stage part truncated so the name fits 253 characters; the ULID
//     is made from now and entropy (nil: ulid.DefaultEntropy()), so names
//     order by creation;
//   - namespace = the Stage's; annotation kargo.akuity.io/create-actor =
//     actor when actor is not empty; label kargo.akuity.io/shard =
//     spec.shard when set; the Stage as controller owner when it has a UID;
//   - spec.vars = the Stage's vars then the promotion template's;
//     spec.steps = the template's steps, each with its alias written into
//     "as" (PromotionStep.GetAlias: "as", else "step-<i+1>").
//
// A step that references a task is not inflated: the error wraps
// ErrPromotionTaskUnsupported and names the step.
func BuildPromotion(stage *kargoapi.Stage, freight string, actor string, now time.Time, entropy io.Reader) (*kargoapi.Promotion, error) {
	if stage == nil || stage.Name == "" {
		return nil, errors.New("stage is required")
	}
	if stage.Spec.PromotionTemplate == nil {
		return nil, errors.New(MsgNoPromotionSteps(stage.Name, stage.Namespace))
	}
	if freight == "" {
		return nil, errors.New("freight is required")
	}
	tmpl := stage.Spec.PromotionTemplate.Spec
	if len(tmpl.Steps) == 0 {
		return nil, errors.New(MsgNoPromotionSteps(stage.Name, stage.Namespace))
	}

	steps, err := inflateSteps(tmpl.Steps)
	if err != nil {
		return nil, err
	}
	vars := make([]kargoapi.ExpressionVariable, 0, len(stage.Spec.Vars)+len(tmpl.Vars))
	vars = append(vars, stage.Spec.Vars...)
	vars = append(vars, tmpl.Vars...)

	name, err := promotionName(stage.Name, freight, now, entropy)
	if err != nil {
		return nil, err
	}
	promo := &kargoapi.Promotion{
		TypeMeta: metav1.TypeMeta{APIVersion: kargoapi.SchemeGroupVersion.String(), Kind: "Promotion"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: stage.Namespace,
		},
		Spec: kargoapi.PromotionSpec{
			Stage:   stage.Name,
			Freight: freight,
			Vars:    vars,
			Steps:   steps,
		},
	}
	if actor != "" {
		promo.Annotations = map[string]string{kargoapi.AnnotationKeyCreateActor: actor}
	}
	if stage.Spec.Shard != "" {
		promo.Labels = map[string]string{kargoapi.LabelKeyShard: stage.Spec.Shard}
	}
	if stage.UID != "" {
		promo.OwnerReferences = []metav1.OwnerReference{
			*metav1.NewControllerRef(stage, kargoapi.SchemeGroupVersion.WithKind("Stage")),
		}
	}
	return promo, nil
}

// inflateSteps is the template's steps as a Promotion's, each with its
// alias written into "as". A step that references a task is not inflated.
func inflateSteps(tmpl []kargoapi.PromotionStep) ([]kargoapi.PromotionStep, error) {
	steps := make([]kargoapi.PromotionStep, 0, len(tmpl))
	for i := range tmpl {
		step := tmpl[i].DeepCopy()
		alias := step.GetAlias(i)
		if step.Task != nil {
			kind := step.Task.Kind
			if kind == "" {
				kind = "PromotionTask"
			}
			return nil, fmt.Errorf("failed to inflate Promotion steps: step %q references %s %q: %w",
				alias, kind, step.Task.Name, ErrPromotionTaskUnsupported)
		}
		step.As = alias
		steps = append(steps, *step)
	}
	return steps, nil
}

// promotionName is Kargo's generatePromotionName with the ULID made from
// now and entropy.
func promotionName(stageName, freight string, now time.Time, entropy io.Reader) (string, error) {
	if entropy == nil {
		entropy = ulid.DefaultEntropy()
	}
	id, err := ulid.New(ulid.Timestamp(now), entropy)
	if err != nil {
		return "", fmt.Errorf("generate Promotion name: %w", err)
	}
	shortHash := freight
	if len(shortHash) > promotionShortHashLength {
		shortHash = shortHash[:promotionShortHashLength]
	}
	shortStageName := stageName
	if len(shortStageName) > maxStageNamePrefixLength {
		shortStageName = shortStageName[:maxStageNamePrefixLength]
	}
	return strings.ToLower(strings.Join([]string{shortStageName, id.String(), shortHash}, promotionNameSeparator)), nil
}

// Messages of Kargo's promotion API (v1.6.4 internal/server
// promote_to_stage_v1alpha1.go, promote_downstream_v1alpha1.go) and
// Promotion webhook.
const (
	// MsgFreightOrAlias rejects a promotion request naming both or neither
	// of a Freight and a Freight alias.
	MsgFreightOrAlias = "exactly one of freight or freightAlias should not be empty"
	// MsgSpecImmutable rejects an update of a Promotion's spec.
	MsgSpecImmutable = "spec is immutable"
)

// MsgNoPromotionSteps rejects a Promotion of a Stage without promotion steps.
func MsgNoPromotionSteps(stage, namespace string) string {
	return fmt.Sprintf("Stage %q in namespace %q defines no promotion steps", stage, namespace)
}

// MsgFreightNotAvailable rejects promoting Freight not available to a Stage.
func MsgFreightNotAvailable(freight, stage string) string {
	return fmt.Sprintf("Freight %q is not available to Stage %q", freight, stage)
}

// MsgFreightNotAvailableDownstream rejects promoting Freight downstream when
// it is not available to one of the downstream Stages.
func MsgFreightNotAvailableDownstream(freight, stage string) string {
	return fmt.Sprintf("Freight %q is not available to downstream Stage %q", freight, stage)
}

// MsgNoDownstreamStages rejects promoting downstream of a Stage no Stage
// takes Freight from.
func MsgNoDownstreamStages(stage string) string {
	return fmt.Sprintf("stage %q has no downstream stages", stage)
}

// MsgFreightNotFound is the not-found message for a Freight name.
func MsgFreightNotFound(freight, namespace string) string {
	return fmt.Sprintf("freight %q not found in namespace %q", freight, namespace)
}

// MsgFreightAliasNotFound is the not-found message for a Freight alias.
func MsgFreightAliasNotFound(alias, namespace string) string {
	return fmt.Sprintf("freight with alias %q not found in namespace %q", alias, namespace)
}

// ValidatePromotionUpdate is the Promotion validating webhook's update rule
// (Kargo v1.6.4): a Promotion's spec is immutable. The error is
// "spec: Invalid value: ...: spec is immutable".
func ValidatePromotionUpdate(oldPromo, newPromo *kargoapi.Promotion) field.ErrorList {
	if reflect.DeepEqual(newPromo.Spec, oldPromo.Spec) {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("spec"), newPromo.Spec, MsgSpecImmutable)}
}
