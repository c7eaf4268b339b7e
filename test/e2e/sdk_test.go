package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The TypeScript SDKs generated from the document, against this server:
// hack/openapi/e2e (built by make lint-openapi, which generates the SDKs
// with openapi-typescript and @hey-api/openapi-ts and compiles it) calls
// every operation and reads every stream through openapi-fetch with a
// plain EventSource and through hey-api's SDK, with the token and nothing
// else, and fails for any that does not answer as the document says, or
// that the document has and it does not call.
func TestTypeScriptSDKs(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is needed to run the TypeScript SDKs: %v", err)
	}
	dir, err := filepath.Abs("../../hack/openapi")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "build", "e2e", "main.js")
	if _, err := os.Stat(script); err != nil {
		t.Fatalf("%v: make lint-openapi generates the SDKs and builds it (make test does)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, srv.URL(), srv.token, fmt.Sprintf("ts%d", seq.Add(1)))
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		t.Log(line)
	}
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
}
