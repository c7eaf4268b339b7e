package credentials

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestNormalizeGitURL(t *testing.T) {
	// Kargo's internal/git/git_test.go cases.
	for in, want := range map[string]string{
		"https://github.com/akuity/kargo.git/":          "https://github.com/akuity/kargo",
		"HTTPS://user:pass@GitHub.com/akuity/kargo.git": "https://github.com/akuity/kargo",
		"http://localhost:8080/repo":                    "http://localhost:8080/repo",
		"https://github.com/akuity/kargo?x=1":           "https://github.com/akuity/kargo?x=1",
		"ssh://git@github.com/akuity/kargo.git":         "ssh://git@github.com/akuity/kargo",
		"git@github.com:akuity/kargo.git":               "ssh://git@github.com/akuity/kargo",
		"git@github.com":                                "ssh://git@github.com",
		"not a url!":                                    "not a url!",
	} {
		if got := NormalizeGitURL(in); got != want {
			t.Errorf("NormalizeGitURL(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"oci://GHCR.io/akuity/kargo-charts/kargo": "ghcr.io/akuity/kargo-charts/kargo",
		"docker.io/library/nginx":                 "nginx",
		"nginx":                                   "nginx",
		"localhost:5000/charts/app":               "localhost:5000/charts/app",
	} {
		if got := NormalizeChartRepositoryURL(in); got != want {
			t.Errorf("NormalizeChartRepositoryURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "creds.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const fileBody = `
credentials:
  - name: exact
    type: git
    repoURL: https://git.example.com/org/app.git
    username: exact-user
    password: exact-pass
  - name: host-wide
    type: git
    repoURL: ^https://git\.example\.com/.*$
    repoURLIsRegex: true
    username: regex-user
    password: regex-pass
  - name: demo-only
    projects: [demo]
    type: helm
    repoURL: oci://ghcr.io/org/charts
    username: helm-user
    password: helm-pass
  - name: ssh
    type: git
    repoURL: git@git.example.com:org/infra.git
    sshPrivateKey: KEY
`

func TestFileLookup(t *testing.T) {
	f, err := LoadFile(writeFile(t, fileBody))
	if err != nil {
		t.Fatal(err)
	}
	db := &Chain{Sources: []Source{f}}
	for _, c := range []struct {
		project  string
		typ      Type
		url      string
		wantUser string
		wantKey  string
	}{
		{"p", TypeGit, "https://GIT.example.com/org/app", "exact-user", ""},       // normalized: case, .git
		{"p", TypeGit, "https://git.example.com/org/other.git", "regex-user", ""}, // the regex, on the normalized URL
		{"p", TypeGit, "https://elsewhere.example.com/org/app.git", "", ""},       // none
		{"demo", TypeHelm, "oci://ghcr.io/org/charts", "helm-user", ""},           // its project
		{"other", TypeHelm, "oci://ghcr.io/org/charts", "", ""},                   // not its project
		{"p", TypeHelm, "https://git.example.com/org/app.git", "", ""},            // not its type
		{"p", TypeGit, "ssh://git@git.example.com/org/infra", "", "KEY"},          // SCP-style = ssh://
		{"p", TypeGit, "http://git.example.com/org/app.git", "", ""},              // http: refused
	} {
		got, err := db.Get(context.Background(), c.project, c.typ, c.url)
		if err != nil {
			t.Fatal(err)
		}
		var user, key string
		if got != nil {
			user, key = got.Username, got.SSHPrivateKey
		}
		if user != c.wantUser || key != c.wantKey {
			t.Errorf("%s %s %s: user %q key %q, want %q %q", c.project, c.typ, c.url, user, key, c.wantUser, c.wantKey)
		}
	}
	// http:// only when allowed (Kargo's ALLOW_CREDENTIALS_OVER_HTTP).
	h, _ := LoadFile(writeFile(t, "credentials:\n  - type: git\n    repoURL: http://127.0.0.1:3000/a.git\n    username: u\n    password: p\n"))
	for allow, want := range map[bool]bool{false: false, true: true} {
		got, err := (&Chain{Sources: []Source{h}, AllowOverHTTP: allow}).Get(context.Background(), "p", TypeGit, "http://127.0.0.1:3000/a")
		if err != nil || (got != nil) != want {
			t.Errorf("http with AllowOverHTTP=%v: %v %v", allow, got, err)
		}
	}
}

// The file is read again when it changes; a broken one is an error at
// lookup; errors and String never show a secret.
func TestFileReloadAndSecrecy(t *testing.T) {
	p := writeFile(t, fileBody)
	f, err := LoadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	next := strings.ReplaceAll(fileBody, "exact-pass", "rotated-pass")
	if err := os.WriteFile(p, []byte(next), 0o600); err != nil {
		t.Fatal(err)
	}
	_ = os.Chtimes(p, time.Now().Add(time.Second), time.Now().Add(time.Second))
	got, err := f.Lookup(context.Background(), "p", TypeGit, "https://git.example.com/org/app.git")
	if err != nil || got.Password != "rotated-pass" {
		t.Fatalf("after a change: %v %v", got, err)
	}
	if s := fmt.Sprint(*got); strings.Contains(s, "rotated-pass") {
		t.Fatalf("String shows the password: %s", s)
	}
	_ = os.WriteFile(p, []byte("credentials:\n  - type: git\n    repoURL: x\n    username: u\n    password: hunter2\n    bogus: 1\n"), 0o600)
	_ = os.Chtimes(p, time.Now().Add(2*time.Second), time.Now().Add(2*time.Second))
	if _, err := f.Lookup(context.Background(), "p", TypeGit, "x"); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("a broken file: %v", err)
	}
}

func TestFileRefused(t *testing.T) {
	for body, want := range map[string]string{
		"credentials:\n  - type: svn\n    repoURL: x\n    username: u\n    password: p\n":                             "type must be git, helm, image or generic",
		"credentials:\n  - type: git\n    username: u\n    password: p\n":                                             "repoURL is required",
		"credentials:\n  - type: git\n    repoURL: x\n    username: u\n":                                              "needs a username and a password, or an sshPrivateKey",
		"credentials:\n  - type: git\n    repoURL: '('\n    repoURLIsRegex: true\n    username: u\n    password: p\n": "not a regular expression",
		"credential: []\n": "unknown field",
	} {
		if _, err := LoadFile(writeFile(t, body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
}

// Kargo's Secrets: the project's namespace, by label, sorted by name, the
// first match wins (even one without usable credentials), before the file.
func TestSecretsFirst(t *testing.T) {
	secret := func(name, typ string, data map[string]string) *corev1.Secret {
		d := map[string][]byte{}
		for k, v := range data {
			d[k] = []byte(v)
		}
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "demo", Labels: map[string]string{LabelCredType: typ}}, Data: d}
	}
	kube := fake.NewClientset(
		secret("b-exact", "git", map[string]string{"repoURL": "https://git.example.com/org/app", "username": "b", "password": "pb"}),
		secret("a-regex", "git", map[string]string{"repoURL": "^https://git.example.com/org/.*", "repoURLIsRegex": "true", "username": "a", "password": "pa"}),
		secret("c-helm", "helm", map[string]string{"repoURL": "https://git.example.com/org/app", "username": "c", "password": "pc"}),
	)
	f, _ := LoadFile(writeFile(t, fileBody))
	db := &Chain{Sources: []Source{&Secrets{Kube: kube}, f}}
	got, err := db.Get(context.Background(), "demo", TypeGit, "https://git.example.com/org/app.git")
	if err != nil || got == nil || got.Username != "a" {
		t.Fatalf("demo: %v %v, want a-regex's (first by name)", got, err)
	}
	got, err = db.Get(context.Background(), "other", TypeGit, "https://git.example.com/org/app.git")
	if err != nil || got == nil || got.Username != "exact-user" {
		t.Fatalf("other project: %v %v, want the file's", got, err)
	}
}

// Where the server may not list Secrets, the file still answers.
func TestSecretsForbidden(t *testing.T) {
	kube := fake.NewClientset()
	kube.PrependReactor("list", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", errors.New("no"))
	})
	f, _ := LoadFile(writeFile(t, fileBody))
	got, err := (&Chain{Sources: []Source{&Secrets{Kube: kube}, f}}).Get(context.Background(), "demo", TypeGit, "https://git.example.com/org/app.git")
	if err != nil || got == nil || got.Username != "exact-user" {
		t.Fatalf("%v %v, want the file's", got, err)
	}
}
