// Package auth decides who a request comes from and what they may do.
//
// Authentication reads a bearer token (a static token of the tokens file or
// the data dir, or a token the server signed for a running task) or a
// signed session cookie (what the dashboard and a plain EventSource use).
// Authorization asks an Authorizer whether a subject may take a verb in a
// project and domain; the built-in one reads the subject's grants. Both are
// interfaces, so a cluster can plug in Kubernetes' TokenReview and
// SubjectAccessReview instead.
//
// The package knows HTTP only to read credentials; what its errors mean as
// status codes is decided by the handlers.
package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
)

// Verb is what a caller does.
type Verb string

// The verbs. Execute is needed, besides write, to enqueue a task type that
// runs commands on the server's machine (the process plugin).
const (
	VerbRead    Verb = "read"    // get, list, stream
	VerbWrite   Verb = "write"   // enqueue, report status
	VerbAbort   Verb = "abort"   // abort an action and its descendants
	VerbExecute Verb = "execute" // enqueue a task that runs a command here
)

// Verbs lists every verb, in the order the docs give them.
var Verbs = []Verb{VerbRead, VerbWrite, VerbAbort, VerbExecute}

// Any matches every project, domain or verb in a grant.
const Any = "*"

// Grant allows some verbs in some projects and domains.
type Grant struct {
	Project string `json:"project"`
	Domain  string `json:"domain"`
	Verbs   []Verb `json:"verbs"`
}

// Allows reports whether the grant covers a.
func (g Grant) Allows(a Attributes) bool {
	return (g.Project == Any || g.Project == a.Project) &&
		(g.Domain == Any || g.Domain == a.Domain) &&
		(slices.Contains(g.Verbs, a.Verb) || slices.Contains(g.Verbs, Any))
}

// Subject is an authenticated caller.
type Subject struct {
	Name string
	// Groups are for authorizers outside (SubjectAccessReview).
	Groups []string
	// Grants are what the built-in authorizer allows.
	Grants []Grant
	// Cluster: the cluster authenticated the subject (TokenReview), and
	// authorizes it (SubjectAccessReview); its grants do not count.
	Cluster bool
	// Task is set for a task token: the subject is one attempt of an
	// action, and may act only within its run (the handlers check).
	Task *TaskScope
	// session is the browser session the request came with (nil for a
	// token): a logout ends the streams it holds open (Sessions.Hold).
	session *claims
}

// Attributes is what a request asks to do.
type Attributes struct {
	Verb            Verb
	Project, Domain string
	// Kube is the same request as the cluster authorizes it.
	Kube KubeAttributes
}

// KubeAttributes is a request as Kubernetes RBAC sees it: a verb on a
// resource in a namespace. Verbs beyond Kubernetes' own: abort, execute,
// and promote (Kargo's).
type KubeAttributes struct {
	Verb, Group, Resource, Subresource string
	// Namespace is set by the authorizer, from the project and domain.
	Namespace string
}

func (k KubeAttributes) resource() string {
	r := k.Resource
	if k.Subresource != "" {
		r += "/" + k.Subresource
	}
	if k.Group != "" {
		r += "." + k.Group
	}
	return r
}

// Authenticator tells who sent a request. It returns ErrUnauthenticated
// (wrapped, with the reason) when the request carries no valid credential.
type Authenticator interface {
	Authenticate(r *http.Request) (*Subject, error)
}

// Authorizer decides. It returns nil when s may do a, a *Denied when not,
// and another error when it cannot tell (a review API is down).
type Authorizer interface {
	Authorize(ctx context.Context, s *Subject, a Attributes) error
}

// Errors. Handlers map them to 401 and 403.
var (
	ErrUnauthenticated = errors.New("authentication required")
	ErrForbidden       = errors.New("forbidden")
	// ErrUnavailable: the cluster that reviews tokens and requests cannot
	// be asked now.
	ErrUnavailable = errors.New("authentication or authorization is unavailable")
)

// Denied is a refusal that names what was refused.
type Denied struct {
	Subject string
	Attributes
}

func (d *Denied) Error() string {
	if d.Project == Any && d.Kube.Resource != "" { // cluster-scoped (ClusterAnalysisTemplates)
		return fmt.Sprintf("%s may not %s %s, which belong to no project: that takes a grant of every project and domain, or a ClusterRole", d.Subject, d.Kube.Verb, d.Kube.resource())
	}
	if d.Kube.Namespace != "" {
		return fmt.Sprintf("%s may not %s %s in namespace %q (project %q, domain %q)", d.Subject, d.Kube.Verb, d.Kube.resource(), d.Kube.Namespace, d.Project, d.Domain)
	}
	return fmt.Sprintf("%s may not %s in project %q, domain %q", d.Subject, d.Verb, d.Project, d.Domain)
}

// Unwrap makes a Denied an ErrForbidden.
func (d *Denied) Unwrap() error { return ErrForbidden }

// GrantAuthorizer allows what the subject's grants allow.
type GrantAuthorizer struct{}

// Authorize implements Authorizer.
func (GrantAuthorizer) Authorize(_ context.Context, s *Subject, a Attributes) error {
	for _, g := range s.Grants {
		if g.Allows(a) {
			return nil
		}
	}
	return &Denied{Subject: s.Name, Attributes: a}
}

// Admin is the subject of the data dir's token: every verb everywhere.
func Admin() *Subject {
	return &Subject{Name: "admin", Grants: []Grant{{Project: Any, Domain: Any, Verbs: []Verb{Any}}}}
}

// Anonymous is the subject of every request when authentication is off
// (--auth=none, loopback only): it may do everything, as before there was
// authentication.
func Anonymous() *Subject {
	return &Subject{Name: "anonymous", Grants: Admin().Grants}
}

type subjectKey struct{}

// WithSubject returns ctx carrying the subject of its request.
func WithSubject(ctx context.Context, s *Subject) context.Context {
	return context.WithValue(ctx, subjectKey{}, s)
}

// SubjectFrom returns the subject of the request ctx belongs to, or nil.
func SubjectFrom(ctx context.Context) *Subject {
	s, _ := ctx.Value(subjectKey{}).(*Subject)
	return s
}
