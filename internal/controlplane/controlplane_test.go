package controlplane

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "taskactions/api/v1"
	"taskactions/internal/kube/clientset/versioned"
	"taskactions/internal/logging"
)

// One control plane for the package; TestRestartKeepsObjects replaces it.
var (
	shared  *ControlPlane
	dataDir string
)

func TestMain(m *testing.M) {
	logging.RouteKlog(zerolog.Nop())
	dir, err := os.MkdirTemp("", "cp")
	if err != nil {
		panic(err)
	}
	dataDir = filepath.Join(dir, "data")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	shared, err = Start(ctx, Config{DataDir: dataDir, Log: zerolog.Nop()})
	cancel()
	if err != nil {
		panic(err)
	}
	code := m.Run()
	if err := shared.Stop(); err != nil {
		code = 1
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func client(t *testing.T) *versioned.Clientset {
	t.Helper()
	c, err := versioned.NewForConfig(shared.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newAction(name, run string) *v1.TaskAction {
	return &v1.TaskAction{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "p-d"},
		Spec: v1.TaskActionSpec{
			RunName: run, Project: "p", Domain: "d", ActionName: "a0", TaskType: "echo",
		},
	}
}

func TestCreateAndUpdateStatus(t *testing.T) {
	ctx := t.Context()
	tas := client(t).FlyteV1().TaskActions("p-d")
	created, err := tas.Create(ctx, newAction("r1-a0", "r1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	created.Status.Attempts = 1
	created.Status.CacheStatus = v1.CacheMiss
	created.Status.PluginState = []byte{1, 2, 3}
	created.Status.Conditions = []metav1.Condition{{
		Type: v1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: v1.ReasonExecuting,
		LastTransitionTime: metav1.Now(),
	}}
	created.Status.ErrorState = &v1.ErrorState{Kind: v1.ErrorKindUser, Code: "1", Message: "boom"}
	if _, err := tas.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update status: %v", err)
	}
	got, err := tas.Get(ctx, "r1-a0", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if got.Spec.RunName != "r1" || got.Spec.TaskType != "echo" {
		t.Errorf("spec read back as %+v", got.Spec)
	}
	s := got.Status
	if s.Attempts != 1 || s.CacheStatus != v1.CacheMiss || string(s.PluginState) != "\x01\x02\x03" ||
		len(s.Conditions) != 1 || s.Conditions[0].Reason != v1.ReasonExecuting ||
		s.ErrorState == nil || s.ErrorState.Message != "boom" {
		t.Errorf("status read back as %+v", s)
	}
}

func TestCRDValidationRejectsLongRunName(t *testing.T) {
	long := strings.Repeat("r", 31)
	_, err := client(t).FlyteV1().TaskActions("p-d").Create(t.Context(), newAction("too-long", long), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("create with 31-character runName: got %v, want Invalid", err)
	}
	if !strings.Contains(err.Error(), "spec.runName") {
		t.Errorf("error does not name the field: %v", err)
	}
}

func TestUnauthenticatedRequestIsRefused(t *testing.T) {
	cfg := shared.RESTConfig()
	cfg.BearerToken = ""
	c, err := versioned.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.FlyteV1().TaskActions("p-d").List(t.Context(), metav1.ListOptions{})
	if !apierrors.IsUnauthorized(err) {
		t.Fatalf("list without token: got %v, want 401 Unauthorized", err)
	}
}

func TestSecondControlPlaneOnSameDirIsRefused(t *testing.T) {
	_, err := Start(t.Context(), Config{DataDir: dataDir, Log: zerolog.Nop()})
	if !errors.Is(err, ErrDataDirLocked) {
		t.Fatalf("second start: got %v, want ErrDataDirLocked", err)
	}
	if !strings.Contains(err.Error(), dataDir) || !strings.Contains(err.Error(), "pid") {
		t.Errorf("message should name the dir and the holder: %v", err)
	}
	// The first one is unharmed.
	if _, err := client(t).FlyteV1().TaskActions("p-d").List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Fatalf("first control plane after refused second: %v", err)
	}
}

func TestDataDirIsPrivate(t *testing.T) {
	for _, name := range []string{"", fileToken, fileKubeconfig} {
		st, err := os.Stat(filepath.Join(dataDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm()&0o077 != 0 {
			t.Errorf("%q has mode %v, want no group/other access", name, st.Mode().Perm())
		}
	}
}

func TestRestartKeepsObjects(t *testing.T) {
	ctx := t.Context()
	if _, err := client(t).FlyteV1().TaskActions("p-d").Create(ctx, newAction("r2-a0", "r2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := shared.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	// As a shell left by docs/operations.md's kubectl section would have it: the
	// start is still the embedded control plane, not a client of itself.
	t.Setenv("KUBECONFIG", filepath.Join(dataDir, "..", filepath.Base(dataDir), "kubeconfig"))
	var err error
	shared, err = Start(ctx, Config{DataDir: dataDir, Log: zerolog.Nop()})
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	if !shared.Embedded() {
		t.Errorf("restarted with KUBECONFIG at its own kubeconfig: %s, want the embedded control plane", shared.Source())
	}
	got, err := client(t).FlyteV1().TaskActions("p-d").Get(ctx, "r2-a0", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get after restart: %v", err)
	}
	if got.Spec.RunName != "r2" {
		t.Errorf("object after restart: %+v", got.Spec)
	}
}

// A client outside the process (kubectl get -w, a second server on the
// kubeconfig) holding a watch must not hold up a stop: the API server
// waited for its watches for the whole request timeout (60 s).
func TestStopEndsOutsideWatches(t *testing.T) {
	ctx := t.Context()
	w, err := client(t).FlyteV1().TaskActions("p-d").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	stopped := make(chan error, 1)
	go func() { stopped <- shared.Stop() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("stop: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("stop still waiting after 20 s with a watch open")
	}
	for range w.ResultChan() { // ends: the server closed the watch
	}
	shared, err = Start(ctx, Config{DataDir: dataDir, Log: zerolog.Nop()})
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
}

// A first start of etcd stopped before it was ready (Ctrl-C in the first
// second of the first make run) leaves a dir the next start must still
// come up from: the member never elected itself there.
func TestFirstEtcdStartStoppedEarly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	var stopping atomic.Bool
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := startEtcd(stopped, dir, 0, zerolog.Nop(), &stopping); err == nil {
		t.Fatal("etcd started on a cancelled context")
	}
	if _, err := os.Stat(filepath.Join(dir, "etcd")); err != nil {
		t.Fatalf("the stopped first start left no etcd dir (the test proves nothing): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	e, _, err := startEtcd(ctx, dir, 0, zerolog.Nop(), &stopping)
	if err != nil {
		t.Fatalf("the start after it: %v", err)
	}
	e.Close()
	if _, err := os.Stat(filepath.Join(dir, fileEtcdBootstrap)); !os.IsNotExist(err) {
		t.Errorf("the first-start marker outlived a ready start: %v", err)
	}
}
