package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"taskactions/test/cluster"
)

// The repository's binaries: make builds bin/taskactions, bin/kubectl,
// bin/helm and bin/cluster/* before these tests run.
var (
	repo       = filepath.Join("..", "..")
	serverBin  = filepath.Join(repo, "bin", "taskactions")
	kubectlBin = filepath.Join(repo, "bin", "kubectl")
	helmBin    = filepath.Join(repo, "bin", "helm")
	chartDir   = filepath.Join(repo, "charts", "taskactions")
)

// release is the chart's installation every test but the permission test
// runs as.
const (
	releaseNamespace = "taskactions-system"
	releaseName      = "taskactions"
)

// One control plane for the package (TestMain), the chart installed on it.
var (
	kube     *cluster.Cluster
	kubeDir  string
	manifest string // the chart as rendered and applied
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	for _, b := range []string{serverBin, kubectlBin, helmBin, filepath.Join(repo, "bin", "cluster", "kube-apiserver")} {
		if _, err := os.Stat(b); err != nil {
			fmt.Fprintf(os.Stderr, "%s is missing: run these tests through make test-cluster\n", b)
			return 1
		}
	}
	var err error
	if kubeDir, err = os.MkdirTemp("", "taskactions-cluster-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := 1
	defer func() {
		if code == 0 {
			os.RemoveAll(kubeDir)
		} else {
			fmt.Fprintf(os.Stderr, "cluster and server logs kept in %s\n", kubeDir)
		}
	}()
	ctx := context.Background()
	kube, err = cluster.Start(ctx, cluster.Config{BinDir: filepath.Join(repo, "bin", "cluster"), Dir: kubeDir})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the test cluster:", err)
		return 1
	}
	defer kube.Stop()
	if manifest, err = installChart(ctx, releaseNamespace, releaseName); err != nil {
		fmt.Fprintln(os.Stderr, "install the chart:", err)
		return 1
	}
	if err := kube.StartGarbageCollector(); err != nil {
		fmt.Fprintln(os.Stderr, "start the garbage collector:", err)
		return 1
	}
	code = m.Run()
	return code
}

// installChart renders the chart with Helm and applies it with kubectl
// (server-side), as the admin, into namespace (created first). It returns the manifest.
func installChart(ctx context.Context, namespace, release string, set ...string) (string, error) {
	if err := kube.EnsureNamespace(ctx, namespace); err != nil {
		return "", err
	}
	args := []string{"template", release, chartDir, "--namespace", namespace, "--include-crds"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out, err := command(ctx, nil, helmBin, args...)
	if err != nil {
		return "", err
	}
	// Server-side: a client-side apply keeps the whole object in an
	// annotation, and Argo Rollouts' AnalysisRun CRD is larger than an
	// annotation may be (256 KiB). Forced, as a client-side apply
	// overwrites what another manager set.
	if _, err := kubectl(ctx, []byte(out), "apply", "--server-side", "--force-conflicts", "-f", "-"); err != nil {
		return "", err
	}
	return out, nil
}

// kubectl runs the genuine kubectl as the admin.
func kubectl(ctx context.Context, stdin []byte, args ...string) (string, error) {
	return command(ctx, stdin, kubectlBin, append([]string{"--kubeconfig", kube.AdminKubeconfig()}, args...)...)
}

func command(ctx context.Context, stdin []byte, bin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", filepath.Base(bin), strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}
