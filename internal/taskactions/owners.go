package taskactions

import (
	"fmt"
	"sync"
)

// Namespaces come from a template ({project}-{domain} by default), which
// is not one-to-one: team-1/prod and team/1-prod both map to team-1-prod.
// Access follows (project, domain), so two pairs must never share a
// namespace. The first pair with an action in a namespace owns it; an
// enqueue for another pair is refused, naming the owner. Reads check the
// spec's project and domain too (ActionID.matches), whatever the
// namespace.
type namespaceOwners struct {
	mu     sync.Mutex
	owners map[string]*nsOwner
}

type nsOwner struct {
	project, domain string
	// seen: the cache holds an action of the pair there, so the claim
	// stands even if the create it was made for failed.
	seen bool
}

func newNamespaceOwners() *namespaceOwners {
	return &namespaceOwners{owners: map[string]*nsOwner{}}
}

// saw records the pair of an action the informer delivered.
func (o *namespaceOwners) saw(ns, project, domain string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if own := o.owners[ns]; own == nil {
		o.owners[ns] = &nsOwner{project: project, domain: domain, seen: true}
	} else if own.project == project && own.domain == domain {
		own.seen = true
	}
}

// claim makes ns the pair's, or says whose it is (ErrConflict). release
// undoes the claim when the create it was for failed and nothing of the
// pair is in the namespace.
func (o *namespaceOwners) claim(ns, project, domain string) (release func(), err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if own := o.owners[ns]; own != nil {
		if own.project != project || own.domain != domain {
			return nil, fmt.Errorf("namespace %s holds the actions of project %q, domain %q; project %q, domain %q map to it too and cannot share it (rename one, or set a --namespace-template that keeps them apart): %w",
				ns, own.project, own.domain, project, domain, ErrConflict)
		}
		return func() {}, nil
	}
	own := &nsOwner{project: project, domain: domain}
	o.owners[ns] = own
	return func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.owners[ns] == own && !own.seen {
			delete(o.owners, ns)
		}
	}, nil
}

func (o *namespaceOwners) forget() {
	o.mu.Lock()
	defer o.mu.Unlock()
	clear(o.owners)
}
