package e2e

import (
	"bytes"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"taskactions/internal/app"
)

// docPages are the pages whose commands TestDocumented runs: the README,
// then every page of docs/, each as a user would type it top to bottom.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"../../README.md"}, pages...)
}

// skipMarker keeps a line out of TestDocumented: for a line that needs a
// value the reader must supply (a host of their own, a cluster).
const skipMarker = "# docs-test: skip"

var (
	// assignment is a shell line that sets a variable (H=..., export
	// KUBECONFIG=...): the later lines of the page rely on it.
	assignment = regexp.MustCompile(`^(export\s+)?[A-Za-z_][A-Za-z0-9_]*=`)
	// streamFlag is curl's -N (no buffering), which the docs use only for
	// event streams: those never end by themselves.
	streamFlag = regexp.MustCompile(`(^|\s)-[a-zA-Z]*N`)
	httpCode   = regexp.MustCompile(`docs-test-http-code=(\d{3})`)
)

// shellLines returns the logical lines (continuations joined) of the ```sh
// blocks of a Markdown page.
func shellLines(page string) []string {
	var lines []string
	in, cont := false, ""
	for _, l := range strings.Split(page, "\n") {
		switch {
		case !in && strings.TrimSpace(l) == "```sh":
			in = true
		case in && strings.TrimSpace(l) == "```":
			in = false
		case in && strings.HasSuffix(l, `\`):
			cont += strings.TrimSuffix(l, `\`)
		case in:
			lines = append(lines, strings.TrimSpace(cont+l))
			cont = ""
		}
	}
	return lines
}

// checked says whether a documented line is a curl or kubectl command
// (kubectl by name or as bin/kubectl). Other lines (make run, helm
// install, a script) start servers or need a cluster: they are not run.
func checked(line string) bool {
	f := strings.Fields(line)
	if len(f) == 0 || strings.Contains(line, skipMarker) {
		return false
	}
	return f[0] == "curl" || f[0] == "kubectl" || strings.HasSuffix(f[0], "/kubectl")
}

// TestDocumented runs every curl and kubectl line of README.md and
// docs/*.md, as typed there, against a server of its own started with the
// defaults `make run` has, from a directory that looks like the
// repository's root to the commands: data/ is the server's data dir (its
// api-token and kubeconfig), examples/ and bin/ (bin/kubectl, from make
// kubectl) are the repository's, and localhost:8080 is the server. A line
// that stops working, or whose file is not shipped, fails the test.
func TestDocumented(t *testing.T) {
	s, err := startServer(filepath.Join(t.TempDir(), "data"), func(c *app.Config) {
		// The tests' config claims a list of task types and allows the
		// loopback for http steps; a user's `make run` does neither.
		d := app.Defaults()
		c.ExecutorTaskTypes, c.PromotionHTTPAllow = d.ExecutorTaskTypes, d.PromotionHTTPAllow
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	})
	u, err := url.Parse(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	root := repoDir(t)
	work := t.TempDir()
	// bin/kubectl is the tests' kubectl (make kubectl's, or
	// TASKACTIONS_KUBECTL), also first on PATH for the lines that type
	// kubectl.
	bin := filepath.Join(work, "bin")
	if err := os.Mkdir(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"data": s.dataDir, "examples": filepath.Join(root, "examples"), "bin/kubectl": kubectlBin(t)} {
		if err := os.Symlink(target, filepath.Join(work, link)); err != nil {
			t.Fatal(err)
		}
	}
	home := t.TempDir()

	ran := 0
	for _, page := range docPages(t) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(page, "../../")
		t.Run(name, func(t *testing.T) {
			// Each page is read in a shell of its own: what it sets (H,
			// KUBECONFIG) lasts to the end of the page.
			preamble := ""
			for _, line := range shellLines(string(b)) {
				line = strings.NewReplacer("localhost:8080", u.Host, "127.0.0.1:8080", u.Host).Replace(line)
				if assignment.MatchString(line) {
					preamble += line + "\n"
					continue
				}
				if !checked(line) {
					continue
				}
				ran++
				runDocumented(t, work, home, preamble, line)
			}
		})
	}
	if ran == 0 {
		t.Fatal("no curl or kubectl line found in the docs")
	}
	// What the docs say of examples/action.yaml's base64 template: the
	// natural YAML is refused, naming the field.
	natural := "apiVersion: flyte.org/v1\nkind: TaskAction\nmetadata: {name: r3-a0, namespace: demo-dev}\n" +
		"spec: {project: demo, domain: dev, runName: r3, actionName: a0, taskType: echo, taskTemplate: {type: echo}}\n"
	cmd := exec.Command(kubectlBin(t), "--kubeconfig", filepath.Join(s.dataDir, "kubeconfig"), "apply", "-f", "-")
	cmd.Env = append(os.Environ(), "HOME="+home, "KUBECONFIG=")
	cmd.Stdin = strings.NewReader(natural)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), `unknown field "spec.taskTemplate.type"`) {
		t.Errorf("kubectl apply of a YAML taskTemplate: %v %s; the docs say it is refused as unknown field \"spec.taskTemplate.type\"", err, out)
	}
	t.Logf("ran %d documented commands", ran)
}

// runDocumented runs one documented line with bash and fails the test
// unless it exits 0 and, for curl, every response was 2xx.
func runDocumented(t *testing.T, work, home, preamble, line string) {
	t.Helper()
	// curl exits 0 on a 4xx or 5xx answer, so its exit status alone would
	// not see a refused request: --fail-with-body makes it exit 22 (keeping
	// the problem body for the message), and the status code written to
	// stderr tells a 3xx (exit 0 too) and a stream cut off by --max-time
	// (exit 28) that had answered 200 from a failure.
	maxTime := ""
	stream := strings.HasPrefix(line, "curl") && streamFlag.MatchString(line)
	if stream {
		maxTime = "--max-time 3"
	}
	script := "set -o pipefail\n" +
		"curl() { command curl --fail-with-body --write-out '%{stderr}docs-test-http-code=%{http_code}\\n' " + maxTime + ` "$@"; }` + "\n" +
		preamble + line + "\n"
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "HOME="+home, "KUBECONFIG=", "PATH="+filepath.Join(work, "bin")+":"+os.Getenv("PATH"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	rc := cmd.ProcessState.ExitCode()
	codes := httpCode.FindAllStringSubmatch(errb.String(), -1)
	ok := err == nil || (stream && rc == 28 && len(codes) > 0)
	for _, c := range codes {
		ok = ok && c[1][0] == '2'
	}
	if strings.HasPrefix(line, "curl") && len(codes) == 0 {
		ok = false
	}
	if !ok {
		t.Errorf("documented command failed (exit %d):\n%s\nstdout: %.2000s\nstderr: %.2000s", rc, line, out.String(), errb.String())
	}
}

// repoDir is the repository's root, absolute.
func repoDir(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`^#+ (.*)`)
	notSlug   = regexp.MustCompile(`[^\p{L}\p{N}_\- ]`)
)

// headingAnchors are the anchors GitHub gives a page's headings: lower
// case, punctuation dropped, spaces as dashes.
func headingAnchors(page string) map[string]bool {
	out := map[string]bool{}
	in := false
	for _, l := range strings.Split(page, "\n") {
		if strings.HasPrefix(l, "```") {
			in = !in
		}
		if m := mdHeading.FindStringSubmatch(l); m != nil && !in {
			out[strings.ReplaceAll(notSlug.ReplaceAllString(strings.ToLower(strings.TrimSpace(m[1])), ""), " ", "-")] = true
		}
	}
	return out
}

// TestDocumentedLinks checks that every relative link of README.md and
// docs/*.md names a file that exists and, into a page, a heading it has:
// the docs were split into pages, and a moved section must not leave a
// link pointing nowhere.
func TestDocumentedLinks(t *testing.T) {
	for _, page := range docPages(t) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			link := m[1]
			if u, err := url.Parse(link); err != nil || u.Scheme != "" {
				continue
			}
			path, anchor, _ := strings.Cut(link, "#")
			target := page
			if path != "" {
				target = filepath.Join(filepath.Dir(page), path)
			}
			tb, err := os.ReadFile(target)
			switch {
			case err != nil && !strings.Contains(err.Error(), "is a directory"):
				t.Errorf("%s: link %s: %v", page, link, err)
			case anchor != "" && strings.HasSuffix(target, ".md") && !headingAnchors(string(tb))[anchor]:
				t.Errorf("%s: link %s: %s has no heading with that anchor", page, link, target)
			}
		}
	}
}
