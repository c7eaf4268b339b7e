// Command etcd is etcd's own server, at the version the product embeds, for
// the real-cluster tests' API server.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
