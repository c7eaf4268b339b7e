package auth

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/client-go/kubernetes"
)

// Cluster is authentication and authorization by the cluster's own
// machinery (--auth=kubernetes): a bearer token this server does not know
// is checked with a TokenReview, and what its subject asks is decided by a
// SubjectAccessReview, as kubectl's requests are. Decisions are cached for
// a few seconds, so a stream of requests costs the API server little.
type Cluster struct {
	client    atomic.Pointer[kubernetes.Interface] // set once the cluster is up
	namespace func(project, domain string) string
	ttl       time.Duration
	tokens    *cache.LRUExpireCache // sha256 of a token -> *Subject or error
	decisions *cache.LRUExpireCache // subject and attributes -> error (nil: allowed)
}

// clusterCacheTTL is how long a review's answer is reused: a revoked
// token or a removed RoleBinding takes effect within it.
const clusterCacheTTL = 10 * time.Second

// NewCluster returns the cluster's reviews; namespace maps an action's
// project and domain to its namespace. Use it after SetClient.
func NewCluster(namespace func(project, domain string) string) *Cluster {
	return &Cluster{namespace: namespace, ttl: clusterCacheTTL,
		tokens: cache.NewLRUExpireCache(4096), decisions: cache.NewLRUExpireCache(16384)}
}

// SetClient gives the reviews their API client, once the cluster answers.
func (c *Cluster) SetClient(k kubernetes.Interface) { c.client.Store(&k) }

var errNoCluster = fmt.Errorf("%w: the cluster is not connected yet", ErrUnavailable)

func (c *Cluster) kube() (kubernetes.Interface, error) {
	if k := c.client.Load(); k != nil {
		return *k, nil
	}
	return nil, errNoCluster
}

// Review authenticates a bearer token with a TokenReview.
func (c *Cluster) Review(ctx context.Context, token string) (*Subject, error) {
	key := sha256.Sum256([]byte(token))
	if v, ok := c.tokens.Get(key); ok {
		return cachedSubject(v)
	}
	k, err := c.kube()
	if err != nil {
		return nil, err
	}
	tr, err := k.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("%w: token review: %w", ErrUnavailable, err)
	}
	var v any
	if tr.Status.Authenticated {
		v = &Subject{Name: tr.Status.User.Username, Groups: tr.Status.User.Groups, Cluster: true}
	} else {
		v = fmt.Errorf("%w: the cluster does not accept the bearer token", ErrUnauthenticated)
	}
	c.tokens.Add(key, v, c.ttl)
	return cachedSubject(v)
}

func cachedSubject(v any) (*Subject, error) {
	if s, ok := v.(*Subject); ok {
		return s, nil
	}
	return nil, v.(error)
}

// Authorize implements Authorizer: a subject the cluster authenticated is
// asked about with a SubjectAccessReview; any other (the admin token, the
// tokens file, a task token) by its grants.
func (c *Cluster) Authorize(ctx context.Context, s *Subject, a Attributes) error {
	if !s.Cluster {
		return GrantAuthorizer{}.Authorize(ctx, s, a)
	}
	switch {
	case a.Project == Any: // a cluster-scoped resource: a cluster-wide review
		a.Kube.Namespace = ""
	case a.Kube.Group == "flyte.org":
		a.Kube.Namespace = c.namespace(a.Project, a.Domain)
	default: // Kargo's and Rollouts' resources: the project's namespace
		a.Kube.Namespace = a.Project
	}
	key := s.Name + "\x00" + strings.Join(s.Groups, ",") + "\x00" + fmt.Sprint(a.Kube)
	if v, ok := c.decisions.Get(key); ok {
		return decision(v, s, a)
	}
	k, err := c.kube()
	if err != nil {
		return err
	}
	sar, err := k.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: s.Name, Groups: s.Groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: a.Kube.Namespace, Verb: a.Kube.Verb, Group: a.Kube.Group,
				Resource: a.Kube.Resource, Subresource: a.Kube.Subresource,
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("%w: subject access review: %w", ErrUnavailable, err)
	}
	c.decisions.Add(key, sar.Status.Allowed, c.ttl)
	return decision(sar.Status.Allowed, s, a)
}

func decision(allowed any, s *Subject, a Attributes) error {
	if allowed.(bool) {
		return nil
	}
	return &Denied{Subject: s.Name, Attributes: a}
}
