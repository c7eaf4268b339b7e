// Command kube-controller-manager is Kubernetes' controller manager, built
// from k8s.io/kubernetes for the real-cluster tests, which run only its
// garbage collector (and what that needs).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
