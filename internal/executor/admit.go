package executor

import (
	"context"
	"time"

	v1 "taskactions/api/v1"
	"taskactions/internal/executor/plugins"
)

// Admit, when set (Config.Admit), is asked before every round of an action
// whether the round may run now. Another part of the server may know
// better than the plugin whether an action's work is still wanted: a
// Promotion's step action of an earlier start, resumed by this executor
// after a failover, must not run again (package steps' Gate). An action
// held back is asked about again after admitRetry, writing nothing
// meanwhile; one refused fails for good with the refusal's code and
// message, before anything ran.
type Admit func(tc *plugins.TaskContext) (wait string, refused *plugins.ExecutionError)

// admitRetry is how soon an action held back is asked about again.
const admitRetry = 200 * time.Millisecond

// admit asks Config.Admit about a round of ta: held (true) with when to
// come back, or ended when refused.
func (c *Controller) admit(ctx context.Context, key string, ta *v1.TaskAction) (held bool, after time.Duration, err error) {
	if c.cfg.Admit == nil {
		return false, 0, nil
	}
	s := &ta.Spec
	wait, refused := c.cfg.Admit(&plugins.TaskContext{
		Project: s.Project, Domain: s.Domain, Run: s.RunName, Action: s.ActionName,
		UID: string(ta.UID), Attempt: max(ta.Status.Attempts, 1),
	})
	switch {
	case refused != nil:
		return true, 0, c.fail(ctx, key, ta, v1.ReasonPermanentFailure, v1.ErrorKindUser, refused.Code, refused.Message)
	case wait != "":
		return true, admitRetry, nil
	}
	return false, 0, nil
}
