package cluster_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"taskactions/test/cluster"
)

// user is a ServiceAccount granted rules in one namespace, with a token.
func user(t *testing.T, name, namespace string, rules ...rbacv1.PolicyRule) string {
	t.Helper()
	ctx := t.Context()
	const home = "authz-users"
	for _, ns := range []string{home, namespace} {
		if err := kube.EnsureNamespace(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := kube.Kube.CoreV1().ServiceAccounts(home).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rbac := kube.Kube.RbacV1()
	if _, err := rbac.Roles(namespace).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: home}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}}
	if _, err := rbac.RoleBindings(namespace).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	token, err := kube.ServiceAccountToken(ctx, home, name)
	if err != nil {
		t.Fatal(err)
	}
	return token
}

func rule(group, resource string, verbs ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, Verbs: verbs}
}

// TestClusterAuthorization: with the chart's --auth=kubernetes, a user's
// own ServiceAccount token works, and each request is allowed exactly as
// a SubjectAccessReview on the resource in the action's namespace, with
// the route's verb, decides; a refusal is 403 problem+json naming the verb
// and the resource. Abort and promote are verbs of their own; a stream is
// authorized when it opens.
func TestClusterAuthorization(t *testing.T) {
	ctx := t.Context()
	s := startChartServer(t)
	f := &features{s: s, project: "authz", domain: "dev"}
	if err := f.enqueueAction(ctx, "r1", "long", "", "sleep", map[string]any{"duration": "1h"}); err != nil {
		t.Fatal(err)
	}
	if err := f.createStage(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.createFreight(ctx); err != nil {
		t.Fatal(err)
	}

	reader := user(t, "reader", "authz-dev", rule("flyte.org", "taskactions", "get", "list", "watch"))
	aborter := user(t, "aborter", "authz-dev", rule("flyte.org", "taskactions", "abort"))
	promoter := user(t, "promoter", "authz", rule("kargo.akuity.io", "stages", "promote"))

	action := f.runPath("r1") + "/actions/long"
	enqueue := map[string]any{"action": map[string]any{
		"actionId": map[string]any{"run": map[string]any{"project": "authz", "domain": "dev", "name": "r2"}, "name": "a0"},
		"task":     map[string]any{"taskTemplate": map[string]any{"type": "echo"}},
	}}
	promote := map[string]any{"freight": f.freight}
	for _, tc := range []struct {
		name, token, method, path string
		body                      any
		status                    int
		names                     string // in the refusal's detail
	}{
		{"reader gets", reader, http.MethodGet, action, nil, http.StatusOK, ""},
		{"reader lists", reader, http.MethodGet, f.runPath("r1") + "/actions", nil, http.StatusOK, ""},
		{"reader may not enqueue", reader, http.MethodPost, "/api/v1/actions", enqueue, http.StatusForbidden, `may not create taskactions.flyte.org in namespace "authz-dev"`},
		{"reader may not abort", reader, http.MethodPost, action + "/abort", map[string]any{}, http.StatusForbidden, `may not abort taskactions.flyte.org`},
		{"reader may not report status", reader, http.MethodPut, action + "/status", map[string]any{"attempt": 1, "status": map[string]any{"phase": "RUNNING"}}, http.StatusForbidden, `may not update taskactions/status.flyte.org`},
		{"reader reads nothing in another domain", reader, http.MethodGet, "/api/v1/projects/authz/domains/prod/runs/r1/actions", nil, http.StatusForbidden, `may not list taskactions.flyte.org in namespace "authz-prod"`},
		{"reader may not read Stages", reader, http.MethodGet, "/api/v1/projects/authz/stages", nil, http.StatusForbidden, `may not list stages.kargo.akuity.io in namespace "authz"`},
		{"reader may not promote", reader, http.MethodPost, "/api/v1/projects/authz/stages/test/promotions", promote, http.StatusForbidden, `may not promote stages.kargo.akuity.io`},
		{"aborter may not read", aborter, http.MethodGet, action, nil, http.StatusForbidden, `may not get taskactions.flyte.org`},
		{"aborter aborts", aborter, http.MethodPost, action + "/abort", map[string]any{"reason": "test"}, http.StatusAccepted, ""},
		{"promoter promotes", promoter, http.MethodPost, "/api/v1/projects/authz/stages/test/promotions", promote, http.StatusCreated, ""},
		{"an unknown token", "not-a-token-of-anyone", http.MethodGet, action, nil, http.StatusUnauthorized, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body, err := s.DoAs(ctx, tc.token, tc.method, tc.path, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			if status != tc.status {
				t.Fatalf("%s %s: %d %s; want %d", tc.method, tc.path, status, body, tc.status)
			}
			if tc.names != "" {
				var p struct{ Detail string }
				if err := json.Unmarshal(body, &p); err != nil || !strings.Contains(p.Detail, tc.names) {
					t.Fatalf("refusal %s; want a problem whose detail names %q", body, tc.names)
				}
			}
		})
	}

	// A stream is authorized when it opens: 403 before any event.
	for _, tc := range []struct {
		token  string
		status int
	}{{reader, http.StatusOK}, {aborter, http.StatusForbidden}} {
		status := openStatus(ctx, t, s, tc.token, f.runPath("r1")+"/events")
		if status != tc.status {
			t.Errorf("stream of the run: %d, want %d", status, tc.status)
		}
	}
}

// The dashboard logs in with a cluster's token: the session acts as the
// identity the cluster gave it, and the cluster's RBAC decides each of its
// requests (TokenReview at login, SubjectAccessReview at each request).
func TestClusterTokenSession(t *testing.T) {
	ctx := t.Context()
	s := startChartServer(t)
	f := &features{s: s, project: "authzs", domain: "dev"}
	if err := f.enqueueAction(ctx, "r1", "a0", "", "echo", nil); err != nil {
		t.Fatal(err)
	}
	reader := user(t, "session-reader", "authzs-dev", rule("flyte.org", "taskactions", "get", "list", "watch"))
	cookie, body := sessionCookie(ctx, t, s, reader)
	var session struct{ Subject string }
	if err := json.Unmarshal(body, &session); err != nil || session.Subject != "system:serviceaccount:authz-users:session-reader" {
		t.Fatalf("session %s (%v)", body, err)
	}
	for _, tc := range []struct {
		path   string
		status int
	}{
		{f.runPath("r1") + "/actions/a0", http.StatusOK},
		{"/api/v1/projects/authzs/domains/prod/runs/r1/actions", http.StatusForbidden},
		{"/api/v1/projects/authzs/stages", http.StatusForbidden},
	} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+tc.path, nil)
		req.AddCookie(cookie)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("GET %s with the session: %d, want %d", tc.path, resp.StatusCode, tc.status)
		}
	}
	if status := login(ctx, t, s, "not-a-token-of-anyone"); status.StatusCode != http.StatusUnauthorized {
		t.Errorf("log in with a token the cluster refuses: %d, want 401", status.StatusCode)
	}
}

// login posts a token to the session endpoint, as the login form does.
func login(ctx context.Context, t *testing.T, s *cluster.Server, token string) *http.Response {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"token": token})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/api/v1/session", strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// sessionCookie logs in with token and returns the session cookie and
// the answer's body.
func sessionCookie(ctx context.Context, t *testing.T, s *cluster.Server, token string) (*http.Cookie, []byte) {
	t.Helper()
	resp := login(ctx, t, s, token)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("log in with the cluster's token: %d %s", resp.StatusCode, body)
	}
	for _, c := range resp.Cookies() {
		if strings.HasPrefix(c.Name, "taskactions-session") && c.Value != "" {
			if c.MaxAge > 3600 {
				t.Errorf("a cluster token's session lasts %ds, more than an hour", c.MaxAge)
			}
			return c, body
		}
	}
	t.Fatalf("no session cookie: %v", resp.Cookies())
	return nil, nil
}

// openStatus opens a stream and returns the status of its response.
func openStatus(ctx context.Context, t *testing.T, s *cluster.Server, token, path string) int {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return resp.StatusCode
}
