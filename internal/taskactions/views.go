package taskactions

import v1 "taskactions/api/v1"

// Views returns the current update of each of tas (from the reads above),
// in the same order. The updates are shared: treat them as read-only.
func (m *Manager) Views(tas []*v1.TaskAction) []*ActionUpdate {
	return m.actions.Views(tas)
}
