package verification

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/oklog/ulid/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
	rolloutsapi "taskactions/api/rollouts/v1alpha1"
	"taskactions/internal/kargo/engine"
)

// Templates reads the AnalysisTemplates a verification names.
type Templates interface {
	Template(ctx context.Context, project, name string) (*rolloutsapi.AnalysisTemplate, error)
	ClusterTemplate(ctx context.Context, name string) (*rolloutsapi.ClusterAnalysisTemplate, error)
}

// request is what an AnalysisRun is built from.
type request struct {
	stage     *kargoapi.Stage
	freight   kargoapi.FreightCollection
	owners    []metav1.OwnerReference // the Freight's
	promotion string                  // annotated on the run, when set
	functions []expr.Option           // Kargo's freight functions over the collection
}

// build is Kargo's AnalysisRunBuilder.Build: the AnalysisRun that verifies
// req.freight in req.stage, named <stage>.<ulid>.<freight collection ID>,
// with the Stage's analysisRunMetadata, Kargo's labels, the templates'
// metrics flattened and their args given the Stage's values (evaluated as
// Kargo expressions with ctx.project, ctx.stage and the Stage's vars).
func build(ctx context.Context, t Templates, req request) (*rolloutsapi.AnalysisRun, error) {
	cfg := req.stage.Spec.Verification
	if cfg == nil {
		return nil, errors.New("missing verification configuration")
	}
	labels, annotations := map[string]string{}, map[string]string{}
	if md := cfg.AnalysisRunMetadata; md != nil {
		maps.Copy(labels, md.Labels)
		maps.Copy(annotations, md.Annotations)
	}
	if req.promotion != "" {
		annotations[kargoapi.AnnotationKeyPromotion] = req.promotion
	}
	labels[kargoapi.LabelKeyStage] = req.stage.Name
	labels[kargoapi.LabelKeyFreightCollection] = req.freight.ID

	specs, err := templates(ctx, t, req.stage.Namespace, cfg.AnalysisTemplates)
	if err != nil {
		return nil, fmt.Errorf("get analysis templates: %w", err)
	}
	env, err := envOf(req.stage, req.functions)
	if err != nil {
		return nil, fmt.Errorf("build spec: build arguments: %w", err)
	}
	spec, err := buildSpec(specs, cfg.Args, env, req.functions)
	if err != nil {
		return nil, fmt.Errorf("build spec: %w", err)
	}
	return &rolloutsapi.AnalysisRun{
		ObjectMeta: metav1.ObjectMeta{
			Name:            strings.ToLower(req.stage.Name + "." + ulid.Make().String() + "." + req.freight.ID),
			Namespace:       req.stage.Namespace,
			Labels:          labels,
			Annotations:     annotations,
			OwnerReferences: req.owners,
		},
		Spec: spec,
	}, nil
}

// templates reads the templates refs name, in order, cluster-scoped ones
// after the project's (as Kargo combines them).
func templates(ctx context.Context, t Templates, project string, refs []kargoapi.AnalysisTemplateReference) ([]*rolloutsapi.AnalysisTemplateSpec, error) {
	var own, cluster []*rolloutsapi.AnalysisTemplateSpec
	for _, ref := range refs {
		if ref.Kind == "ClusterAnalysisTemplate" {
			ct, err := t.ClusterTemplate(ctx, ref.Name)
			if err != nil {
				return nil, fmt.Errorf("get ClusterAnalysisRun %q: %w", ref.Name, err)
			}
			cluster = append(cluster, &ct.Spec)
			continue
		}
		at, err := t.Template(ctx, project, ref.Name)
		if err != nil {
			return nil, fmt.Errorf("get AnalysisRun %q in namespace %q: %w", ref.Name, project, err)
		}
		own = append(own, &at.Spec)
	}
	return append(own, cluster...), nil
}

// envOf is what a verification's expressions see besides the functions:
// ctx.project, ctx.stage, and the Stage's vars, each evaluated in order
// (a var sees those before it).
func envOf(s *kargoapi.Stage, fns []expr.Option) (map[string]any, error) {
	env := map[string]any{"ctx": map[string]any{"project": s.Namespace, "stage": s.Name}}
	if len(s.Spec.Vars) == 0 {
		return env, nil
	}
	vars := map[string]any{}
	env["vars"] = vars
	for _, v := range s.Spec.Vars {
		value, err := engine.EvaluateTemplate(v.Value, env, fns...)
		if err != nil {
			return nil, fmt.Errorf("evaluate variable %q: %w", v.Name, err)
		}
		vars[v.Name] = value
	}
	return env, nil
}

// buildSpec flattens the templates and evaluates the Stage's args into
// theirs.
func buildSpec(specs []*rolloutsapi.AnalysisTemplateSpec, args []kargoapi.AnalysisRunArgument, env map[string]any, fns []expr.Option) (rolloutsapi.AnalysisRunSpec, error) {
	flat, err := flattenTemplates(specs)
	if err != nil {
		return rolloutsapi.AnalysisRunSpec{}, fmt.Errorf("flatten templates: %w", err)
	}
	final, err := buildArgs(flat.Args, args, env, fns)
	if err != nil {
		return rolloutsapi.AnalysisRunSpec{}, fmt.Errorf("build arguments: %w", err)
	}
	return rolloutsapi.AnalysisRunSpec{
		Metrics: flat.Metrics, DryRun: flat.DryRun, MeasurementRetention: flat.MeasurementRetention, Args: final,
	}, nil
}

// buildArgs evaluates the Stage's args (an expression's result must be a
// string) and merges them into the templates'.
func buildArgs(template []rolloutsapi.Argument, args []kargoapi.AnalysisRunArgument, env map[string]any, fns []expr.Option) ([]rolloutsapi.Argument, error) {
	out := make([]rolloutsapi.Argument, len(args))
	for i, a := range args {
		out[i] = rolloutsapi.Argument{Name: a.Name}
		if a.Value == "" {
			continue
		}
		v, err := engine.EvaluateTemplate(a.Value, env, fns...)
		if err != nil {
			return nil, fmt.Errorf("evaluate argument %q: %w", a.Name, err)
		}
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("evaluated argument %q value is not a string but %T", a.Name, v)
		}
		out[i].Value = &s
	}
	merged, err := mergeArgs(out, template)
	if err != nil {
		return nil, fmt.Errorf("merge arguments: %w", err)
	}
	return merged, nil
}
