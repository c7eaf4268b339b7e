package controlplane

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"taskactions/config/crd"
)

// EnsureCRD installs the TaskAction CRD, or updates it to this binary's
// schema, and waits until the API server has established it.
func EnsureCRD(ctx context.Context, cfg *rest.Config) error {
	var want apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(crd.TaskActions, &want); err != nil {
		return fmt.Errorf("decode embedded CRD: %w", err)
	}
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("apiextensions client: %w", err)
	}
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		have, err := crds.Get(ctx, want.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = crds.Create(ctx, &want, metav1.CreateOptions{})
		case err == nil:
			want.ResourceVersion = have.ResourceVersion
			_, err = crds.Update(ctx, &want, metav1.UpdateOptions{})
		}
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
			return false, nil // another replica got there first; read again
		}
		return err == nil, err
	})
	if err != nil {
		return fmt.Errorf("install CRD %s: %w", want.Name, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		have, err := crds.Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return established(have), nil
	})
	if err != nil {
		return fmt.Errorf("wait for CRD %s to be established: %w", want.Name, err)
	}
	// Established comes a moment before the resource is served; an informer
	// listing in that moment backs off for a second. Wait for a list to work.
	rc := client.ApiextensionsV1().RESTClient()
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		status := 0
		rc.Get().AbsPath("/apis/flyte.org/v1/taskactions").Param("limit", "1").Do(ctx).StatusCode(&status)
		return status == 200, nil
	})
	if err != nil {
		return fmt.Errorf("wait for %s to be served: %w", want.Name, err)
	}
	return nil
}

func established(c *apiextensionsv1.CustomResourceDefinition) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}
