package history

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	v1 "taskactions/api/v1"
)

// TerminalLive returns, by uid, the phase of every action history holds
// as terminal whose object has not left the control plane (neither
// retired nor deleted through the API). A starting server reads it once
// instead of a label on each object: what history holds is what need not
// be recorded again, and a label would cost each action a write of its
// own.
func (s *Store) TerminalLive(ctx context.Context) (map[types.UID]v1.Phase, error) {
	rows, err := s.read.QueryContext(ctx, s.dialect.q(`SELECT uid, phase FROM actions
		WHERE retired = ? AND deleted_at IS NULL AND phase IN (`+terminalPhaseList()+`)`), false)
	if err != nil {
		return nil, s.fail("read terminal actions", err)
	}
	defer rows.Close()
	out := map[types.UID]v1.Phase{}
	for rows.Next() {
		var uid, phase string
		if err := rows.Scan(&uid, &phase); err != nil {
			return nil, fmt.Errorf("history: read terminal actions: %w", err)
		}
		out[types.UID(uid)] = v1.Phase(phase)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history: read terminal actions: %w", err)
	}
	return out, nil
}
