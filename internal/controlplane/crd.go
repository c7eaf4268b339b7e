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
	// OwnedWith, with KeepForeign, names a CRD whose presence says another
	// installation owns this one even if it carries this binary's
	// annotation: Rollouts' Rollout CRD for its analysis CRDs, which this
	// binary may have installed before Rollouts was, and must not then
	// turn back into its own version.
	OwnedWith string
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
		g.Go(func() error {
			// Decoded here too, in parallel: Rollouts' CRDs are some 650 KB
			// of YAML each, a tenth of a second apiece.
			var want apiextensionsv1.CustomResourceDefinition
			if err := yaml.UnmarshalStrict(c.YAML, &want); err != nil {
				return fmt.Errorf("decode embedded CRD: %w", err)
			}
			owned, err := exists(gctx, client, c.OwnedWith)
			if err != nil {
				return err
			}
			k, err := ensureCRD(gctx, client, &want, c.KeepForeign, owned)
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

// exists reports whether the CRD of that name is installed (false for no
// name).
func exists(ctx context.Context, client apiextensionsclient.Interface, name string) (bool, error) {
	if name == "" {
		return false, nil
	}
	_, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read CRD %s: %w", name, err)
	}
	return true, nil
}

// ensureCRD installs one CRD and waits for it to be served. With
// keepForeign, one installed by someone else is kept as it is; owned says
// it is someone else's whatever its annotation says (CRD.OwnedWith).
func ensureCRD(ctx context.Context, client apiextensionsclient.Interface, want *apiextensionsv1.CustomResourceDefinition, keepForeign, owned bool) (kept bool, err error) {
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	have, kept, err := install(ctx, crds, want, keepForeign, owned)
	if err != nil {
		return false, fmt.Errorf("install CRD %s: %w", want.Name, err)
	}
	// A CRD read as it was (an earlier start's, or the chart's) is most
	// often established already: no need to read it again, which for
	// Rollouts' CRDs (650 KB each) is a tenth of a second apiece.
	if have == nil || !established(have) {
		if have, err = waitEstablished(ctx, crds, want.Name); err != nil {
			return kept, fmt.Errorf("wait for CRD %s to be established: %w", want.Name, err)
		}
	}
	if err := waitServed(ctx, client, want); err != nil {
		return kept, fmt.Errorf("wait for %s to be served: %w", want.Name, err)
	}
	return kept, creatable(ctx, have)
}

// install creates or updates the CRD until it is this binary's (or kept
// as someone else's). It returns the installed CRD when it was read and
// not written, nil when it was written.
func install(ctx context.Context, crds apiextensionsv1client.CustomResourceDefinitionInterface, want *apiextensionsv1.CustomResourceDefinition, keepForeign, owned bool) (read *apiextensionsv1.CustomResourceDefinition, kept bool, err error) {
	metav1.SetMetaDataAnnotation(&want.ObjectMeta, installedBy, "taskactions")
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		have, err := crds.Get(ctx, want.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = crds.Create(ctx, want, metav1.CreateOptions{})
		case err == nil && keepForeign && (owned || have.Annotations[installedBy] == ""):
			read, kept = have, true
			return true, nil
		case err == nil && current(have, want):
			// Installed by the chart or an earlier start: no write, so a
			// server on a cluster needs no more than get on CRDs.
			read = have
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
	return read, kept, err
}

// waitEstablished reads the CRD until it is established.
func waitEstablished(ctx context.Context, crds apiextensionsv1client.CustomResourceDefinitionInterface, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	var have *apiextensionsv1.CustomResourceDefinition
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		if have, err = crds.Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		return established(have), nil
	})
	return have, err
}

// waitServed lists the CRD's objects until a list works: Established
// comes a moment before the resource is served, and an informer listing
// in that moment backs off for a second.
func waitServed(ctx context.Context, client apiextensionsclient.Interface, want *apiextensionsv1.CustomResourceDefinition) error {
	path := "/apis/" + want.Spec.Group + "/" + storageVersion(want) + "/" + want.Spec.Names.Plural
	rc := client.ApiextensionsV1().RESTClient()
	return wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		status := 0
		rc.Get().AbsPath(path).Param("limit", "1").Do(ctx).StatusCode(&status)
		return status == 200, nil
	})
}

// creatableAfter is how long after a CRD becomes Established the API
// server holds back creates of its objects: apiextensions-apiserver sleeps
// two seconds in every create it serves within that time (so that, in a
// cluster of API servers, one that has not yet seen the CRD cannot answer a
// follow-up read with 404). Without waiting here, the first enqueue after a
// first start took two seconds.
const creatableAfter = 2 * time.Second

// creatable waits until creates of the established CRD's objects are
// served at once. Only a CRD established a moment ago (a first start)
// waits.
func creatable(ctx context.Context, have *apiextensionsv1.CustomResourceDefinition) error {
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
		return fmt.Errorf("wait for CRD %s to take creates: %w", have.Name, context.Cause(ctx))
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
