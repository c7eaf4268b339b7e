// Package cluster starts a real Kubernetes control plane for the tests that
// prove the server on a cluster: etcd, kube-apiserver with RBAC and
// ServiceAccount tokens, and kube-controller-manager running only the
// garbage collector, each its own process, built from k8s.io/kubernetes by
// this module (make cluster-bins). It hands out kubeconfigs for an admin
// and for ServiceAccounts.
package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Config says where the binaries are and where the cluster keeps its
// files.
type Config struct {
	// BinDir holds etcd, kube-apiserver and kube-controller-manager.
	BinDir string
	// Dir is the cluster's own directory (data, certificates, logs).
	Dir string
}

// Cluster is a running control plane. Stop it once.
type Cluster struct {
	cfg   Config
	url   string
	ca    []byte
	token string // the admin's, group system:masters
	procs []*process

	Admin *rest.Config
	Kube  kubernetes.Interface
}

// Start starts etcd and the API server, and returns once the API server is
// ready. StartGarbageCollector starts the collector.
func Start(ctx context.Context, cfg Config) (c *Cluster, err error) {
	c = &Cluster{cfg: cfg}
	defer func() {
		if err != nil {
			_ = c.Stop()
		}
	}()
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	if err := c.startEtcd(ctx, ports[0], ports[1]); err != nil {
		return nil, err
	}
	if err := c.startAPIServer(ctx, ports[0], ports[2]); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Cluster) bin(name string) string { return filepath.Join(c.cfg.BinDir, name) }

func (c *Cluster) startEtcd(ctx context.Context, client, peer int) error {
	clientURL, peerURL := "http://"+loopback(client), "http://"+loopback(peer)
	p, err := startProcess(c.cfg.Dir, "etcd", c.bin("etcd"), []string{
		"--name=test", "--data-dir=" + filepath.Join(c.cfg.Dir, "etcd"),
		"--listen-client-urls=" + clientURL, "--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=test=" + peerURL,
		// A test cluster: losing it in a power cut costs nothing.
		"--unsafe-no-fsync", "--log-level=warn",
	})
	if err != nil {
		return err
	}
	c.procs = append(c.procs, p)
	return p.waitHTTP(ctx, clientURL+"/health", nil, "", time.Minute)
}

func (c *Cluster) startAPIServer(ctx context.Context, etcdPort, port int) error {
	dir := c.cfg.Dir
	c.token = randomHex()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(c.token+",admin,admin,system:masters\n"), 0o600); err != nil {
		return err
	}
	saKey := filepath.Join(dir, "sa.key")
	if err := writeRSAKey(saKey); err != nil {
		return err
	}
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return err
	}
	certFile, keyFile := filepath.Join(dir, "apiserver.crt"), filepath.Join(dir, "apiserver.key")
	var err error
	if c.ca, err = writeServingCert(certFile, keyFile); err != nil {
		return err
	}
	p, err := startProcess(dir, "kube-apiserver", c.bin("kube-apiserver"), []string{
		"--etcd-servers=http://" + loopback(etcdPort),
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + certFile, "--tls-private-key-file=" + keyFile,
		"--token-auth-file=" + tokens,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + saKey, "--service-account-signing-key-file=" + saKey,
		"--api-audiences=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=10.96.0.0/16",
		// As hardened clusters do: setting blockOwnerDeletion needs update
		// on the owner's finalizers.
		"--enable-admission-plugins=OwnerReferencesPermissionEnforcement",
		"--endpoint-reconciler-type=none",
		"--audit-policy-file=" + policy, "--audit-log-path=" + c.AuditLog(), "--audit-log-format=json",
		"--audit-log-mode=blocking",
		"--profiling=false", "-v=0",
	})
	if err != nil {
		return err
	}
	c.procs = append(c.procs, p)
	c.url = "https://" + loopback(port)
	if err := p.waitHTTP(ctx, c.url+"/readyz", c.ca, c.token, 2*time.Minute); err != nil {
		return err
	}
	c.Admin = c.restConfig(c.token)
	if c.Kube, err = kubernetes.NewForConfig(c.Admin); err != nil {
		return err
	}
	_, err = c.WriteKubeconfig("admin", c.token)
	return err
}

// StartGarbageCollector starts kube-controller-manager with only the
// garbage collector. It learns of new resources by rediscovery every 30 s,
// so tests start it after installing their CRDs.
func (c *Cluster) StartGarbageCollector() error {
	p, err := startProcess(c.cfg.Dir, "kube-controller-manager", c.bin("kube-controller-manager"), []string{
		"--kubeconfig=" + c.AdminKubeconfig(),
		"--controllers=garbagecollector",
		"--leader-elect=false", "--secure-port=0",
		// The test cluster is small; the default of 20 workers is for large ones.
		"--concurrent-gc-syncs=4",
		"-v=0",
	})
	if err != nil {
		return err
	}
	c.procs = append(c.procs, p)
	return nil
}

// Stop stops the processes, last started first.
func (c *Cluster) Stop() error {
	var errs []error
	for i := len(c.procs) - 1; i >= 0; i-- {
		errs = append(errs, c.procs[i].stop(20*time.Second))
	}
	c.procs = nil
	return errors.Join(errs...)
}

func (c *Cluster) restConfig(token string) *rest.Config {
	return &rest.Config{
		Host: c.url, BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.ca},
		QPS:             -1,
	}
}

// WriteKubeconfig writes a kubeconfig for token into the cluster's dir, as
// name.kubeconfig, and returns its path.
func (c *Cluster) WriteKubeconfig(name, token string) (string, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: c.url, CertificateAuthorityData: c.ca}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: "test", AuthInfo: name}
	cfg.CurrentContext = name
	path := filepath.Join(c.cfg.Dir, name+".kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}

// AdminKubeconfig is the path of the admin's kubeconfig.
func (c *Cluster) AdminKubeconfig() string { return filepath.Join(c.cfg.Dir, "admin.kubeconfig") }

// ServiceAccountToken asks the API server for a token of namespace/name
// (TokenRequest), as a pod's projected token would be.
func (c *Cluster) ServiceAccountToken(ctx context.Context, namespace, name string) (string, error) {
	expiry := int64(time.Hour / time.Second)
	tr, err := c.Kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token of serviceaccount %s/%s: %w", namespace, name, err)
	}
	return tr.Status.Token, nil
}

// ServiceAccountKubeconfig writes a kubeconfig for namespace/name's token.
func (c *Cluster) ServiceAccountKubeconfig(ctx context.Context, namespace, name string) (string, error) {
	token, err := c.ServiceAccountToken(ctx, namespace, name)
	if err != nil {
		return "", err
	}
	return c.WriteKubeconfig("sa-"+namespace+"-"+name, token)
}

// EnsureNamespace creates a namespace unless it exists.
func (c *Cluster) EnsureNamespace(ctx context.Context, name string) error {
	_, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func randomHex() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
