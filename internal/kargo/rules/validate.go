package rules

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

// Messages of the rules Kargo's Stage webhook and CRD enforce.
const (
	msgStepUsesOrTask        = "PromotionTemplate step must have exactly one of uses or task set"
	msgTaskContinueOnError   = "PromotionTemplate step referencing a task cannot set continueOnError"
	msgTaskRetry             = "PromotionTemplate step referencing a task cannot set retry"
	msgTaskIf                = "PromotionTemplate step referencing a task cannot have an 'if' condition"
	msgTaskConfig            = "PromotionTemplate step referencing a task cannot have a config"
	msgStepAliasReserved     = "step alias is reserved"
	msgStepAliasDuplicatesFm = "step alias duplicates that of %s"
	msgOriginDuplicateFmt    = "freight with origin %s requested multiple times in %s"
)

// Patterns of the CRD schema, spelled as the API server quotes them.
const (
	patternDuration  = `^([0-9]+(\.[0-9]+)?(s|m|h))+$`
	patternVarName   = `^[a-zA-Z_]\w*$`
	patternK8sName   = `^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	maxLengthK8sName = 253
)

// celFailureValue is the value the API server gives a failed CEL rule on an
// object: none ("Invalid value: <message>").
var celFailureValue = field.OmitValueType{}

var (
	// ReservedStepAliasRegex matches the aliases Kargo gives steps without
	// one (PromotionStep.GetAlias); a Stage may not use them
	// (Kargo internal/promotion/simple_engine.go).
	ReservedStepAliasRegex = regexp.MustCompile(`^(step|task)-\d+$`)

	durationRegex = regexp.MustCompile(patternDuration)
	varNameRegex  = regexp.MustCompile(patternVarName)
	k8sNameRegex  = regexp.MustCompile(patternK8sName)
)

// ValidateStage reports what Kargo v1.6.3 rejects in a Stage: the rules of
// its validating webhook (validateSpec; the project check is the caller's,
// see ValidateProjectName) and the schema rules its CRD makes the API server
// enforce (required fields, enums, patterns, lengths and the CEL rules on
// promotion steps), with the field paths and messages the API server gives,
// so that they can be answered before the object reaches it.
//
// A typed Stage cannot tell a missing field from an empty one, so the
// schema rules read empty as missing where the CRD requires the field
// (e.g. an empty origin.name is "Required value"), and they cannot see
// explicit zero values the CEL rules would (continueOnError: false on a
// task step); the API server still enforces those.
func ValidateStage(s *kargoapi.Stage) field.ErrorList {
	if s == nil {
		return field.ErrorList{field.Required(field.NewPath("spec"), "")}
	}
	specPath := field.NewPath("spec")
	errs := validateSpecSchema(specPath, &s.Spec)
	return append(errs, validateSpecWebhook(specPath, &s.Spec)...)
}

// ValidateStageWebhook runs only the rules of Kargo's Stage validating
// webhook (what the API server cannot enforce by the CRD schema).
func ValidateStageWebhook(s *kargoapi.Stage) field.ErrorList {
	return validateSpecWebhook(field.NewPath("spec"), &s.Spec)
}

// ValidateProjectName checks the name of a project. A Kargo project is a
// namespace, so its name must be a DNS-1123 label.
func ValidateProjectName(name string) field.ErrorList {
	p := field.NewPath("metadata", "namespace")
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(name) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

// validateSpecWebhook is Kargo's webhook validateSpec
// (internal/webhook/kubernetes/stage/webhook.go).
func validateSpecWebhook(f *field.Path, spec *kargoapi.StageSpec) field.ErrorList {
	errs := validateRequestedFreightOrigins(f.Child("requestedFreight"), spec.RequestedFreight)
	if spec.PromotionTemplate == nil {
		return errs
	}
	stepsPath := f.Child("promotionTemplate", "spec", "steps")
	errs = append(errs, validateStepAliases(stepsPath, spec.PromotionTemplate.Spec.Steps)...)
	return append(errs, validateStepTaskRefs(stepsPath, spec.PromotionTemplate.Spec.Steps)...)
}

// validateRequestedFreightOrigins rejects an origin requested twice. Like
// Kargo v1.6, it stops at the first duplicate.
func validateRequestedFreightOrigins(f *field.Path, reqs []kargoapi.FreightRequest) field.ErrorList {
	seen := make(map[string]struct{}, len(reqs))
	for _, req := range reqs {
		origin := req.Origin.String()
		if _, ok := seen[origin]; ok {
			return field.ErrorList{field.Invalid(f, reqs, fmt.Sprintf(msgOriginDuplicateFmt, origin, f.String()))}
		}
		seen[origin] = struct{}{}
	}
	return nil
}

// validateStepAliases is Kargo's ValidatePromotionSteps: aliases (trimmed,
// empty ones skipped) must be unique and not of the reserved form.
func validateStepAliases(f *field.Path, steps []kargoapi.PromotionStep) field.ErrorList {
	var errs field.ErrorList
	indexByAlias := make(map[string]int, len(steps))
	for i, step := range steps {
		alias := strings.TrimSpace(step.As)
		if alias == "" {
			continue
		}
		if j, ok := indexByAlias[alias]; ok {
			errs = append(errs, field.Invalid(f.Index(i).Child("as"), alias, fmt.Sprintf(msgStepAliasDuplicatesFm, f.Index(j))))
		} else {
			indexByAlias[alias] = i
		}
		if ReservedStepAliasRegex.MatchString(alias) {
			errs = append(errs, field.Invalid(f.Index(i).Child("as"), alias, msgStepAliasReserved))
		}
	}
	return errs
}

// validateStepTaskRefs forbids 'if' and config on steps that reference a
// task (webhook rules: 'if' is a reserved CEL word before Kubernetes 1.31).
func validateStepTaskRefs(f *field.Path, steps []kargoapi.PromotionStep) field.ErrorList {
	var errs field.ErrorList
	for i, step := range steps {
		if step.Task == nil {
			continue
		}
		if step.If != "" {
			errs = append(errs, field.Forbidden(f.Index(i).Child("if"), msgTaskIf))
		}
		if step.Config != nil {
			errs = append(errs, field.Forbidden(f.Index(i).Child("config"), msgTaskConfig))
		}
	}
	return errs
}

// validateSpecSchema enforces the CRD's OpenAPI schema and CEL rules.
func validateSpecSchema(f *field.Path, spec *kargoapi.StageSpec) field.ErrorList {
	if isZeroSpec(spec) {
		return field.ErrorList{field.Required(f, "")}
	}
	var errs field.ErrorList
	errs = append(errs, validateVars(f.Child("vars"), spec.Vars)...)

	rf := f.Child("requestedFreight")
	switch {
	case spec.RequestedFreight == nil:
		errs = append(errs, field.Required(rf, ""))
	case len(spec.RequestedFreight) == 0:
		errs = append(errs, minItems(rf, 0, 1))
	}
	for i := range spec.RequestedFreight {
		errs = append(errs, validateFreightRequest(rf.Index(i), &spec.RequestedFreight[i])...)
	}

	if pt := spec.PromotionTemplate; pt != nil {
		ps := f.Child("promotionTemplate", "spec")
		errs = append(errs, validateVars(ps.Child("vars"), pt.Spec.Vars)...)
		steps := ps.Child("steps")
		if pt.Spec.Steps != nil && len(pt.Spec.Steps) == 0 {
			errs = append(errs, minItems(steps, 0, 1))
		}
		for i := range pt.Spec.Steps {
			errs = append(errs, validateStepSchema(steps.Index(i), &pt.Spec.Steps[i])...)
		}
	}

	if v := spec.Verification; v != nil {
		vp := f.Child("verification")
		for i, t := range v.AnalysisTemplates {
			p := vp.Child("analysisTemplates").Index(i)
			if t.Name == "" {
				errs = append(errs, field.Required(p.Child("name"), ""))
			}
			if t.Kind != "" && t.Kind != "AnalysisTemplate" && t.Kind != "ClusterAnalysisTemplate" {
				errs = append(errs, field.NotSupported(p.Child("kind"), t.Kind, []string{"AnalysisTemplate", "ClusterAnalysisTemplate"}))
			}
		}
		for i, a := range v.Args {
			p := vp.Child("args").Index(i)
			if a.Name == "" {
				errs = append(errs, field.Required(p.Child("name"), ""))
			}
			if a.Value == "" {
				errs = append(errs, field.Required(p.Child("value"), ""))
			}
		}
	}
	return errs
}

func isZeroSpec(s *kargoapi.StageSpec) bool {
	return s.Shard == "" && s.Vars == nil && s.RequestedFreight == nil &&
		s.PromotionTemplate == nil && s.Verification == nil
}

func validateFreightRequest(f *field.Path, req *kargoapi.FreightRequest) field.ErrorList {
	var errs field.ErrorList
	op := f.Child("origin")
	switch o := req.Origin; {
	case o == kargoapi.FreightOrigin{}:
		errs = append(errs, field.Required(op, ""))
	default:
		switch o.Kind {
		case "":
			errs = append(errs, field.Required(op.Child("kind"), ""))
		case kargoapi.FreightOriginKindWarehouse:
		default:
			errs = append(errs, field.NotSupported(op.Child("kind"), string(o.Kind), []string{string(kargoapi.FreightOriginKindWarehouse)}))
		}
		if o.Name == "" {
			errs = append(errs, field.Required(op.Child("name"), ""))
		}
	}
	sp := f.Child("sources")
	switch a := req.Sources.AvailabilityStrategy; a {
	case "", kargoapi.FreightAvailabilityStrategyAll, kargoapi.FreightAvailabilityStrategyOneOf:
	default:
		errs = append(errs, field.NotSupported(sp.Child("availabilityStrategy"), string(a),
			[]string{string(kargoapi.FreightAvailabilityStrategyAll), string(kargoapi.FreightAvailabilityStrategyOneOf), ""}))
	}
	if d := req.Sources.RequiredSoakTime; d != nil {
		// The API server sees the duration as the string it was written as;
		// a typed Stage only has time.Duration.String() of it, which is what
		// the REST layer would send.
		if v := d.Duration.String(); !durationRegex.MatchString(v) {
			errs = append(errs, pattern(sp.Child("requiredSoakTime"), v, patternDuration))
		}
	}
	return errs
}

func validateStepSchema(f *field.Path, step *kargoapi.PromotionStep) field.ErrorList {
	var errs field.ErrorList
	// An empty uses is an absent one in a typed step: report what the API
	// server says for either (minLength for uses: "", the CEL rule below
	// for no uses and no task).
	if step.Uses == "" && step.Task == nil {
		errs = append(errs, field.Invalid(f.Child("uses"), "", fmt.Sprintf("%s in body should be at least 1 chars long", f.Child("uses"))))
	}
	// CEL rules (x-kubernetes-validations on the step), in the CRD's order.
	if (step.Uses != "") == (step.Task != nil) {
		errs = append(errs, field.Invalid(f, celFailureValue, msgStepUsesOrTask))
	}
	if step.Task != nil && step.ContinueOnError {
		errs = append(errs, field.Invalid(f, celFailureValue, msgTaskContinueOnError))
	}
	if step.Task != nil && step.Retry != nil {
		errs = append(errs, field.Invalid(f, celFailureValue, msgTaskRetry))
	}
	if t := step.Task; t != nil {
		tp := f.Child("task")
		np := tp.Child("name")
		switch {
		case t.Name == "":
			errs = append(errs, field.Required(np, ""))
		case len(t.Name) > maxLengthK8sName:
			errs = append(errs, field.TooLong(np, "", maxLengthK8sName))
		}
		if t.Name != "" && !k8sNameRegex.MatchString(t.Name) {
			errs = append(errs, pattern(np, t.Name, patternK8sName))
		}
		if t.Kind != "" && t.Kind != "PromotionTask" && t.Kind != "ClusterPromotionTask" {
			errs = append(errs, field.NotSupported(tp.Child("kind"), t.Kind, []string{"PromotionTask", "ClusterPromotionTask"}))
		}
	}
	return append(errs, validateVars(f.Child("vars"), step.Vars)...)
}

func validateVars(f *field.Path, vars []kargoapi.ExpressionVariable) field.ErrorList {
	var errs field.ErrorList
	for i, v := range vars {
		np := f.Index(i).Child("name")
		switch {
		case v.Name == "":
			errs = append(errs, field.Required(np, ""))
		case !varNameRegex.MatchString(v.Name):
			errs = append(errs, pattern(np, v.Name, patternVarName))
		}
	}
	return errs
}

// minItems, pattern: the field errors the API server makes of OpenAPI
// schema failures (kube-openapi's messages wrapped in field.Invalid).
func minItems(f *field.Path, have, min int) *field.Error {
	return field.Invalid(f, int64(have), fmt.Sprintf("%s in body should have at least %d items", f, min))
}

func pattern(f *field.Path, value, re string) *field.Error {
	return field.Invalid(f, value, fmt.Sprintf("%s in body should match '%s'", f, re))
}
