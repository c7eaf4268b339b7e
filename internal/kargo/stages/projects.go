package stages

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/pipeline"
)

// projects decides what a project is. A project is a namespace (Kargo's
// convention). On the embedded control plane, which has no Namespace
// objects, any valid name is one. On a cluster with Kargo, a namespace is
// a project only with the label kargo.akuity.io/project=true; on a cluster
// without Kargo the namespace is created on the first write.
type projects struct {
	kube  kubernetes.Interface
	kargo bool
}

func (p projects) check(ctx context.Context, project string, writing bool) error {
	if p.kube == nil {
		return nil // the route's pattern has already checked the name
	}
	ns, err := p.kube.CoreV1().Namespaces().Get(ctx, project, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) && (p.kargo || !writing):
		return pipeline.Errorf(pipeline.ErrNotFound, "project %q not found", project)
	case apierrors.IsNotFound(err):
		_, err = p.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: project}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %q: %w", project, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("read namespace %q: %w", project, err)
	case p.kargo && ns.Labels[kargoapi.LabelKeyProject] != kargoapi.LabelValueTrue:
		// Kargo's words (internal/server/validation).
		return pipeline.Errorf(pipeline.ErrInvalid, "namespace %q is not a project", project)
	}
	return nil
}
