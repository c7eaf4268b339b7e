package credentials

import (
	"context"
	"fmt"
	"regexp"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
)

// Secrets is Kargo's credentials Secrets as a Source: the Secrets of the
// project's namespace labelled kargo.akuity.io/cred-type=<type>, read
// from the cluster at each lookup (a promotion step looks up a few times;
// no watch of every Secret of the cluster is kept).
type Secrets struct {
	Kube kubernetes.Interface
	// GlobalNamespaces are also searched, in order, after the project's
	// (Kargo's GLOBAL_CREDENTIALS_NAMESPACES).
	GlobalNamespaces []string
}

// Lookup implements Source.
func (s *Secrets) Lookup(ctx context.Context, project string, credType Type, repoURL string) (*Credentials, error) {
	if s == nil || s.Kube == nil {
		return nil, nil
	}
	for _, ns := range append([]string{project}, s.GlobalNamespaces...) {
		e, err := s.match(ctx, ns, credType, repoURL)
		if err != nil {
			return nil, err
		}
		if e != nil {
			return e.credentials(), nil
		}
	}
	return nil, nil
}

// match is the first matching Secret of a namespace (Kargo's
// getCredentialsSecret: sorted by name).
func (s *Secrets) match(ctx context.Context, ns string, credType Type, repoURL string) (*entry, error) {
	list, err := s.Kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{
		LabelSelector: labels.Set{LabelCredType: string(credType)}.String(),
	})
	if apierrors.IsForbidden(err) {
		// Not granted there (the chart grants no Secrets): no credentials
		// from this namespace, the file may still have some.
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list the credentials Secrets of namespace %s: %w", ns, err)
	}
	entries := make([]entry, 0, len(list.Items))
	for _, sec := range list.Items {
		if sec.Data == nil {
			continue
		}
		u, ok := sec.Data[FieldRepoURL]
		e := entry{
			name: sec.Name, repoURL: string(u), hasRepoURL: ok, isRegex: string(sec.Data[FieldRepoURLIsRegex]) == "true",
			username: string(sec.Data[FieldUsername]), password: string(sec.Data[FieldPassword]), sshKey: string(sec.Data[FieldSSHPrivateKey]),
		}
		if e.isRegex {
			e.regex, _ = regexp.Compile(e.repoURL) // Kargo passes over one that does not compile
		}
		entries = append(entries, e)
	}
	return firstMatch(entries, credType, repoURL), nil
}
