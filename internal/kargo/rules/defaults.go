package rules

import kargoapi "taskactions/api/kargo/v1alpha1"

// DefaultStage applies what Kargo v1.6.3's Stage mutating webhook defaults:
// the kargo.akuity.io/shard label follows spec.shard (set to it, or removed
// when spec.shard is empty). It reports whether it changed the labels.
//
// Kargo's webhook also stamps the actor onto the reverify/abort
// annotations; that needs the requesting user and is the caller's.
func DefaultStage(s *kargoapi.Stage) bool {
	if s.Spec.Shard != "" {
		if s.Labels[kargoapi.LabelKeyShard] == s.Spec.Shard {
			return false
		}
		if s.Labels == nil {
			s.Labels = make(map[string]string, 1)
		}
		s.Labels[kargoapi.LabelKeyShard] = s.Spec.Shard
		return true
	}
	if _, ok := s.Labels[kargoapi.LabelKeyShard]; !ok {
		return false
	}
	delete(s.Labels, kargoapi.LabelKeyShard)
	return true
}
