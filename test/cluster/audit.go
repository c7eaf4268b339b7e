package cluster

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"time"
)

// auditPolicy logs every write of TaskActions, of Kargo's Stages,
// Promotions and Freight, and of Leases (who, when, what), and nothing
// else: the replica tests read it to tell which replica wrote, and
// whether it held the Lease then.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
    verbs: ["create", "update", "patch", "delete"]
    resources:
      - group: flyte.org
        resources: ["taskactions", "taskactions/status"]
      - group: kargo.akuity.io
        resources: ["stages", "stages/status", "promotions", "promotions/status", "freight", "freight/status"]
      - group: coordination.k8s.io
        resources: ["leases"]
  - level: None
`

// AuditLog is the path of the API server's audit log.
func (c *Cluster) AuditLog() string { return filepath.Join(c.cfg.Dir, "audit.log") }

// AuditEvent is one write as the API server's audit log has it.
type AuditEvent struct {
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef struct {
		APIGroup    string `json:"apiGroup"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceived time.Time `json:"requestReceivedTimestamp"`
}

// AuditEvents reads the audit log: every completed write of TaskActions,
// of Kargo's objects and of Leases.
func (c *Cluster) AuditEvents() ([]AuditEvent, error) {
	f, err := os.Open(c.AuditLog())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []AuditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev AuditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, err
		}
		if ev.Stage == "ResponseComplete" {
			out = append(out, ev)
		}
	}
	return out, sc.Err()
}
