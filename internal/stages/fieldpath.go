package stages

import "strings"

// fieldPath splits a Kubernetes field path (spec.steps[1].as, or
// metadata.labels[kargo.akuity.io/shard]) into the segments of a JSON
// pointer: spec, steps, 1, as.
func fieldPath(p string) []string {
	if p == "<nil>" { // field.Path's String of no path
		return nil
	}
	var segs []string
	for p != "" {
		switch {
		case p[0] == '.':
			p = p[1:]
		case p[0] == '[':
			end := strings.IndexByte(p, ']')
			if end < 0 {
				return append(segs, p[1:])
			}
			segs = append(segs, p[1:end])
			p = p[end+1:]
		default:
			end := strings.IndexAny(p, ".[")
			if end < 0 {
				end = len(p)
			}
			segs = append(segs, p[:end])
			p = p[end:]
		}
	}
	return segs
}
