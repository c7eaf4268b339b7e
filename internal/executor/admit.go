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
// after a failover, must not run again (package steps' Gate). A round held
// back writes nothing, and is asked about again after admitRetry. A round
// refused ends the action FAILED with the refusal's code and message; its
// plugin is asked to abort and release the attempt first, in case an
// earlier round started it (the attempt's timeout is checked before, as
// for any round).
type Admit func(tc *plugins.TaskContext) (wait string, refused *plugins.ExecutionError)

// admitRetry is how soon an action held back is asked about again.
const admitRetry = 200 * time.Millisecond

// admit asks Config.Admit about a round of ta: held (true) with when to
// come back, or ended when refused.
func (c *Controller) admit(ctx context.Context, key string, ta *v1.TaskAction, tc *plugins.TaskContext, plugin plugins.Plugin) (held bool, after time.Duration, err error) {
	if c.cfg.Admit == nil {
		return false, 0, nil
	}
	wait, refused := c.cfg.Admit(tc)
	switch {
	case refused != nil:
		c.abortAttempt(ctx, plugin, tc, key)
		c.endAttempt(ctx, plugin, tc, ta)
		return true, 0, c.fail(ctx, key, ta, v1.ReasonPermanentFailure, v1.ErrorKindUser, refused.Code, refused.Message)
	case wait != "":
		c.cfg.Log.Debug().Str("action", key).Str("reason", wait).Msg("round held back")
		return true, admitRetry, nil
	}
	return false, 0, nil
}

// parentOf is the name of ta's parent action; "" for a run's root.
func parentOf(ta *v1.TaskAction) string {
	if p := ta.Spec.ParentActionName; p != nil {
		return *p
	}
	return ""
}
