package resources

import (
	"context"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/cache"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
	"taskactions/internal/analysis/rules"
	"taskactions/internal/pipeline"
)

// kind is what one of the three kinds has of its own.
type kind[T pipeline.Object] struct {
	name     string // "AnalysisTemplate", for messages
	cluster  bool   // cluster-scoped: no project
	pipeline pipeline.Kind[T, *View[T]]
	// client is the kind's typed client in a project's namespace.
	client func(project string) client[T]
	// validate is Rollouts' rules for a write.
	validate func(T) field.ErrorList
	// created, if set, clears what a create does not take from the body.
	created func(T)
}

// client is what the generated typed clients of the three kinds have in
// common.
type client[T any] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

func templateKind(cfg Config) kind[*rolloutsapi.AnalysisTemplate] {
	c := cfg.Client.ArgoprojV1alpha1()
	return kind[*rolloutsapi.AnalysisTemplate]{
		name:     "AnalysisTemplate",
		pipeline: pipelineKind[rolloutsapi.AnalysisTemplate]("AnalysisTemplate", rolloutsapi.AnalysisTemplatePlural, cfg),
		client:   func(p string) client[*rolloutsapi.AnalysisTemplate] { return c.AnalysisTemplates(p) },
		validate: func(t *rolloutsapi.AnalysisTemplate) field.ErrorList { return rules.ValidateTemplateSpec(&t.Spec) },
	}
}

func clusterTemplateKind(cfg Config) kind[*rolloutsapi.ClusterAnalysisTemplate] {
	c := cfg.Client.ArgoprojV1alpha1()
	return kind[*rolloutsapi.ClusterAnalysisTemplate]{
		name:     "ClusterAnalysisTemplate",
		cluster:  true,
		pipeline: pipelineKind[rolloutsapi.ClusterAnalysisTemplate]("ClusterAnalysisTemplate", rolloutsapi.ClusterAnalysisTemplatePlural, cfg),
		client:   func(string) client[*rolloutsapi.ClusterAnalysisTemplate] { return c.ClusterAnalysisTemplates() },
		validate: func(t *rolloutsapi.ClusterAnalysisTemplate) field.ErrorList {
			return rules.ValidateTemplateSpec(&t.Spec)
		},
	}
}

func runKind(cfg Config) kind[*rolloutsapi.AnalysisRun] {
	c := cfg.Client.ArgoprojV1alpha1()
	return kind[*rolloutsapi.AnalysisRun]{
		name:     "AnalysisRun",
		pipeline: pipelineKind[rolloutsapi.AnalysisRun]("AnalysisRun", rolloutsapi.AnalysisRunPlural, cfg),
		client:   func(p string) client[*rolloutsapi.AnalysisRun] { return c.AnalysisRuns(p) },
		validate: func(r *rolloutsapi.AnalysisRun) field.ErrorList { return rules.ValidateRunSpec(&r.Spec) },
		// The status is the analysis controller's, which starts from none.
		created: func(r *rolloutsapi.AnalysisRun) { r.Status = rolloutsapi.AnalysisRunStatus{} },
	}
}

// pipelineKind describes a kind to the pipeline: by namespace (a
// cluster-scoped kind's objects all in ""), each namespace's objects
// sorted by name, served as the objects they are.
func pipelineKind[P any, T interface {
	*P
	pipeline.Object
}](name, plural string, cfg Config) pipeline.Kind[T, *View[T]] {
	rest := cfg.Client.ArgoprojV1alpha1().RESTClient()
	return pipeline.ByNamespace(pipeline.Kind[T, *View[T]]{
		Name:      name,
		ListWatch: cache.NewListWatchFromClient(rest, plural, metav1.NamespaceAll, fields.Everything()),
		Example:   T(new(P)),
		Compare:   func(a, b T) int { return strings.Compare(a.GetName(), b.GetName()) },
		View:      pipeline.ObjectViews[P, T](rolloutsapi.GroupVersion.WithKind(name)),
		Same:      pipeline.SameObject[T],
		Journal:   cfg.Journal,
	})
}
