package taskactions

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// namespaces names the namespace of a project and domain from the
// template, keeps which pair owns each (owners.go), and creates them on an
// external cluster.
type namespaces struct {
	template string
	// kube creates namespaces; nil on the embedded control plane, which
	// has no Namespace objects.
	kube   kubernetes.Interface
	log    zerolog.Logger
	owners *namespaceOwners
	known  sync.Map // namespaces made or found, once per process
	// none: the API serves no Namespace objects (another server's
	// embedded control plane), so there are none to create.
	none atomic.Bool
}

func newNamespaces(template string, kube kubernetes.Interface, log zerolog.Logger) *namespaces {
	return &namespaces{template: template, kube: kube, log: log, owners: newNamespaceOwners()}
}

func (n *namespaces) of(project, domain string) string {
	return NamespaceFor(n.template, project, domain)
}

// perPair: the template gives each project and domain a namespace of its
// own, which two pairs must then not share.
func (n *namespaces) perPair() bool {
	return strings.Contains(n.template, "{project}") && strings.Contains(n.template, "{domain}")
}

// ensure creates the namespace on an external cluster, once per process.
func (n *namespaces) ensure(ctx context.Context, ns string) error {
	if n.kube == nil || n.none.Load() {
		return nil
	}
	if _, ok := n.known.Load(ns); ok {
		return nil
	}
	_, err := n.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	switch {
	case apierrors.IsNotFound(err):
		// Creating a namespace cannot miss it: the API has no namespaces at
		// all, as when this replica uses another server's embedded control
		// plane through its kubeconfig. Nothing to make, then or later.
		if !n.none.Swap(true) {
			n.log.Info().Msg("the API serves no namespaces: none to create")
		}
		return nil
	case err != nil && !apierrors.IsAlreadyExists(err):
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	n.known.Store(ns, struct{}{})
	return nil
}
