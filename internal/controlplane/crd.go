package controlplane

import (
	"context"
	"fmt"
	"k8s.io/apimachinery/pkg/api/equality"
	"time"

	"golang.org/x/sync/errgroup"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsv1client "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// CRD is a CustomResourceDefinition this binary serves.
type CRD struct {
	YAML []byte
	// KeepForeign leaves in place a definition of the same name that this
	// binary did not install: Kargo's own Stage CRD on a cluster with Kargo
	// is the one to serve, whatever version it is.
	KeepForeign bool
}

// installedBy marks the CRDs this binary installed, so that it updates its
// own and leaves others' alone.
const installedBy = "taskactions.dev/installed-by"

// EnsureCRDs installs each CRD (or updates it to this binary's schema) and
// waits until the API server serves it. It reports which were kept as a
// foreign installation found them.
func EnsureCRDs(ctx context.Context, cfg *rest.Config, crds ...CRD) (foreign []string, err error) {
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("apiextensions client: %w", err)
	}
	// All at once: each waits for the API server to start serving it,
	// and one after the other those waits were a quarter of a second of
	// every start.
	kept := make([]string, len(crds))
	g, gctx := errgroup.WithContext(ctx)
	for i, c := range crds {
		var want apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(c.YAML, &want); err != nil {
			return nil, fmt.Errorf("decode embedded CRD: %w", err)
		}
		g.Go(func() error {
			k, err := ensureCRD(gctx, client, &want, c.KeepForeign)
			if k {
				kept[i] = want.Name
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for _, name := range kept {
		if name != "" {
			foreign = append(foreign, name)
		}
	}
	return foreign, nil
}

// ensureCRD installs one CRD and waits for it to be served.
func ensureCRD(ctx context.Context, client apiextensionsclient.Interface, want *apiextensionsv1.CustomResourceDefinition, keepForeign bool) (kept bool, err error) {
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	metav1.SetMetaDataAnnotation(&want.ObjectMeta, installedBy, "taskactions")
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		have, err := crds.Get(ctx, want.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = crds.Create(ctx, want, metav1.CreateOptions{})
		case err == nil && keepForeign && have.Annotations[installedBy] == "":
			kept = true
			return true, nil
		case err == nil && current(have, want):
			// Installed by the chart or an earlier start: no write, so a
			// server on a cluster needs no more than get on CRDs.
			return true, nil
		case err == nil:
			want.ResourceVersion = have.ResourceVersion
			_, err = crds.Update(ctx, want, metav1.UpdateOptions{})
		}
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
			return false, nil // another replica got there first; read again
		}
		return err == nil, err
	})
	if err != nil {
		return false, fmt.Errorf("install CRD %s: %w", want.Name, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		have, err := crds.Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return established(have), nil
	})
	if err != nil {
		return kept, fmt.Errorf("wait for CRD %s to be established: %w", want.Name, err)
	}
	// Established comes a moment before the resource is served; an informer
	// listing in that moment backs off for a second. Wait for a list to work.
	path := "/apis/" + want.Spec.Group + "/" + storageVersion(want) + "/" + want.Spec.Names.Plural
	rc := client.ApiextensionsV1().RESTClient()
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		status := 0
		rc.Get().AbsPath(path).Param("limit", "1").Do(ctx).StatusCode(&status)
		return status == 200, nil
	})
	if err != nil {
		return kept, fmt.Errorf("wait for %s to be served: %w", want.Name, err)
	}
	return kept, creatable(ctx, crds, want.Name)
}

// creatableAfter is how long after a CRD becomes Established the API
// server holds back creates of its objects: apiextensions-apiserver sleeps
// two seconds in every create it serves within that time (so that, in a
// cluster of API servers, one that has not yet seen the CRD cannot answer a
// follow-up read with 404). Without waiting here, the first enqueue after a
// first start took two seconds.
const creatableAfter = 2 * time.Second

// creatable waits until creates of the CRD's objects are served at once.
// Only a CRD established a moment ago (a first start) waits.
func creatable(ctx context.Context, crds apiextensionsv1client.CustomResourceDefinitionInterface, name string) error {
	have, err := crds.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read CRD %s: %w", name, err)
	}
	var since time.Time
	for _, cond := range have.Status.Conditions {
		if cond.Type == apiextensionsv1.Established {
			since = cond.LastTransitionTime.Time
		}
	}
	wait := time.Until(since.Add(creatableAfter))
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for CRD %s to take creates: %w", name, context.Cause(ctx))
	}
}

// current reports whether the installed CRD is this binary's: ours, and its
// spec what this binary would write (fields the API server defaults and
// this binary leaves unset do not count).
func current(have, want *apiextensionsv1.CustomResourceDefinition) bool {
	return have.Annotations[installedBy] == want.Annotations[installedBy] &&
		equality.Semantic.DeepDerivative(want.Spec, have.Spec)
}

func storageVersion(c *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range c.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return c.Spec.Versions[0].Name
}

func established(c *apiextensionsv1.CustomResourceDefinition) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}
