// Command kubectl is the upstream kubectl, built from this module's
// Kubernetes libraries, for testing the embedded API server.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
)

func main() {
	os.Exit(cli.Run(cmd.NewDefaultKubectlCommand()))
}
