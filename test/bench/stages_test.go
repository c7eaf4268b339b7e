package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// stageBody is a Stage as Kargo's docs write one: Freight from a Warehouse
// (direct) or from the Stage before it, and a four-step promotion.
func stageBody(i int) []byte {
	sources := `{"direct":true}`
	if i%10 != 0 { // chains of ten from three Warehouses
		sources = fmt.Sprintf(`{"stages":["s%03d"]}`, i-1)
	}
	return fmt.Appendf(nil, `{"metadata":{"name":"s%03d"},"spec":{"requestedFreight":[{"origin":{"kind":"Warehouse","name":"w%d"},"sources":%s}],`+
		`"promotionTemplate":{"spec":{"vars":[{"name":"gitRepo","value":"https://github.com/example/kargo-demo.git"}],"steps":[`+
		`{"uses":"git-clone","config":{"repoURL":"${{ vars.gitRepo }}","checkout":[{"branch":"main","path":"./src"}]}},`+
		`{"uses":"kustomize-set-image","as":"update-image","config":{"path":"./src/base","images":[{"image":"nginx"}]}},`+
		`{"uses":"git-commit","as":"commit","config":{"path":"./out","message":"${{ outputs['update-image'].commitMessage }}"}},`+
		`{"uses":"argocd-update","config":{"apps":[{"name":"demo-s%03d"}]}}]}}}}`, i, i/10%3, sources, i)
}

// BenchmarkStages600 is the figure for a project of 600 Stages:
// REST list and get latency against a direct list from the Kubernetes API
// in the same run, the stream snapshot (connect to `synced`), and a
// refresh round trip through the embedded Stage controller.
func BenchmarkStages600(b *testing.B) {
	const n = 600
	s := startServer(b)
	httpc := s.client(&http.Transport{MaxIdleConnsPerHost: concurrency})
	base := s.url + "/api/v1/projects/big/stages"
	runConcurrently(b, n, func(i int) error { return post(httpc, base, stageBody(i-1), http.StatusCreated) })

	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	measure := func(reps int, op func() error) (p50, p99 float64) {
		lat := make([]time.Duration, 0, reps)
		for range reps {
			start := time.Now()
			if err := op(); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		return ms(lat[reps/2]), ms(lat[reps*99/100])
	}
	get := func(url string) func() error {
		return func() error {
			resp, err := httpc.Get(url)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				return err
			}
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s: %s", url, resp.Status)
			}
			return nil
		}
	}
	listP50, listP99 := measure(200, get(base))
	getP50, getP99 := measure(1000, get(base+"/s300"))
	directP50, directP99 := measure(200, func() error {
		l, err := s.kube.KargoV1alpha1().Stages("big").List(context.Background(), metav1.ListOptions{})
		if err == nil && len(l.Items) != n {
			err = fmt.Errorf("direct list: %d Stages", len(l.Items))
		}
		return err
	})
	snapP50, snapP99 := measure(50, func() error { return snapshot(httpc, s.url+"/api/v1/projects/big/stage-events", n) })
	refreshP50, refreshP99 := measure(50, func() error {
		return post(httpc, base+"/s300/refresh?wait=true", nil, http.StatusOK)
	})
	b.ReportMetric(listP50, "list600-p50-ms")
	b.ReportMetric(listP99, "list600-p99-ms")
	b.ReportMetric(directP50, "direct-list600-p50-ms")
	b.ReportMetric(directP99, "direct-list600-p99-ms")
	b.ReportMetric(directP50/listP50, "direct/rest-p50")
	b.ReportMetric(getP50, "get-p50-ms")
	b.ReportMetric(getP99, "get-p99-ms")
	b.ReportMetric(snapP50, "snapshot600-p50-ms")
	b.ReportMetric(snapP99, "snapshot600-p99-ms")
	b.ReportMetric(refreshP50, "refresh-wait-p50-ms")
	b.ReportMetric(refreshP99, "refresh-wait-p99-ms")
}

// snapshot opens a stream and reads it until `synced`, checking that the
// snapshot had want items.
func snapshot(c *http.Client, url string, want int) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	items := 0
	for sc.Scan() {
		switch line := sc.Text(); {
		case line == "event: stage":
			items++
		case line == "event: synced":
			if items != want {
				return fmt.Errorf("snapshot of %d Stages, want %d", items, want)
			}
			return nil
		case strings.HasPrefix(line, "event: reset"):
			return fmt.Errorf("unexpected reset")
		}
	}
	return fmt.Errorf("stream ended before synced: %v", sc.Err())
}
