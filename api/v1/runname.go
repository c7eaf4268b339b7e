package v1

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// RunNameOf is the name of the run that stands for an object named as
// Kargo names its Promotions and AnalysisRuns, <prefix>.<ULID>.<suffix>:
// the ULID, lower-cased (26 characters, a valid run name). An object
// named otherwise (by hand, through kubectl) gets prefix and the first
// 25 hex digits of its name's SHA-256, one run per name; prefix is one
// letter, so that the two kinds' runs never share a name.
func RunNameOf(name, prefix string) string {
	parts := strings.Split(name, ".")
	if len(parts) >= 3 && len(parts[len(parts)-2]) == 26 {
		return strings.ToLower(parts[len(parts)-2])
	}
	sum := sha256.Sum256([]byte(name))
	return prefix + hex.EncodeToString(sum[:])[:25]
}
