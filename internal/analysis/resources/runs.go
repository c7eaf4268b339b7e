package resources

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	kargoapi "taskactions/api/kargo/v1alpha1"
	rolloutsapi "taskactions/api/rollouts/v1alpha1"
	"taskactions/internal/pipeline"
)

// What Kargo's verifications and the runner read and write of
// AnalysisRuns, besides what the REST API does: the newest run of a
// Stage's Freight, reads that fall back on the API server, spec.terminate
// and the status.

// Latest is the newest cached AnalysisRun in project labelled for the
// Stage and the Freight collection (Kargo's findExistingAnalysisRun), nil
// when there is none.
func (m *Manager) Latest(ctx context.Context, project, stage, freightCollection string) (*rolloutsapi.AnalysisRun, error) {
	views, err := m.Runs.cache.InNamespace(ctx, project)
	if err != nil {
		return nil, err
	}
	var latest *rolloutsapi.AnalysisRun
	for _, v := range views {
		ar := v.Object
		if ar.Labels[kargoapi.LabelKeyStage] != stage || ar.Labels[kargoapi.LabelKeyFreightCollection] != freightCollection {
			continue
		}
		if latest == nil || latest.CreationTimestamp.Before(&ar.CreationTimestamp) {
			latest = ar
		}
	}
	return latest, nil
}

// Run reads one AnalysisRun: from the cache, else from the API server
// (Kargo retries a read its cache misses); pipeline.ErrNotFound when
// neither has it.
func (m *Manager) Run(ctx context.Context, project, name string) (*rolloutsapi.AnalysisRun, error) {
	if v, ok, err := m.Runs.cache.Named(ctx, project, name); err == nil && ok {
		return v.Object, nil
	}
	ar, err := m.client.ArgoprojV1alpha1().AnalysisRuns(project).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, pipeline.Errorf(pipeline.ErrNotFound, "AnalysisRun %q not found in project %q", name, project)
	}
	return ar, err
}

// CreateRun creates an AnalysisRun (Rollouts' rules first, as for the
// REST API).
func (m *Manager) CreateRun(ctx context.Context, ar *rolloutsapi.AnalysisRun) (*rolloutsapi.AnalysisRun, error) {
	v, err := m.Runs.Create(ctx, ar.Namespace, ar)
	if err != nil {
		return nil, err
	}
	return v.Object, nil
}

// Terminate sets an AnalysisRun's spec.terminate, as Kargo's abort does.
func (m *Manager) Terminate(ctx context.Context, project, name string) error {
	out, err := m.client.ArgoprojV1alpha1().AnalysisRuns(project).Patch(ctx, name, types.MergePatchType,
		[]byte(`{"spec":{"terminate":true}}`), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("terminate AnalysisRun %s/%s: %w", project, name, err)
	}
	m.Runs.cache.Wrote(out)
	return nil
}

// UpdateRunStatus writes an AnalysisRun's status (the CRD has no status
// subresource: the whole object is written, from ar's resource version,
// so a concurrent change is a conflict).
func (m *Manager) UpdateRunStatus(ctx context.Context, ar *rolloutsapi.AnalysisRun) (*rolloutsapi.AnalysisRun, error) {
	out, err := m.client.ArgoprojV1alpha1().AnalysisRuns(ar.Namespace).Update(ctx, ar, metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	m.Runs.cache.Wrote(out)
	return out, nil
}

// Template and ClusterTemplate read the templates a verification names.
func (m *Manager) Template(ctx context.Context, project, name string) (*rolloutsapi.AnalysisTemplate, error) {
	v, err := m.Templates.Get(ctx, project, name)
	if err != nil {
		return nil, err
	}
	return v.Object, nil
}

func (m *Manager) ClusterTemplate(ctx context.Context, name string) (*rolloutsapi.ClusterAnalysisTemplate, error) {
	v, err := m.ClusterTemplates.Get(ctx, "", name)
	if err != nil {
		return nil, err
	}
	return v.Object, nil
}

// RunInformer is the informer of AnalysisRuns (controllers wake on it).
func (m *Manager) RunInformer() cache.SharedIndexInformer { return m.Runs.cache.Informer() }
