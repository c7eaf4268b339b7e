package taskactions

import (
	"fmt"
	"hash/fnv"

	v1 "taskactions/api/v1"
)

// An action is its spec's (project, domain, run, action), never the name
// of its object. Objects are looked up through an index on that identity;
// Flyte keeps all in one namespace, and names joined with "-" collide
// ("col"+"x-y" and "col-x"+"y" are both col-x-y). A new action gets the
// name Flyte's Actions service gives it (actions/k8s buildTaskActionName,
// which its GetTaskAction, PutStatus and AbortAction look up) when it is
// free, and <run>-<action>-<hash of its identity> when another action
// holds it: the same name again on a retry, so creation stays idempotent.

// IDOf is the identity of an action: its spec's, never its object's name.
func IDOf(ta *v1.TaskAction) ActionID {
	s := &ta.Spec
	return ActionID{Project: s.Project, Domain: s.Domain, Run: s.RunName, Name: s.ActionName}
}

// objectName is the natural object name of an action, Flyte's rule:
// <run>-<action>, but <run>-a0 for an action named as its run (Flyte's
// root, whose run service names it a0 or the run's name: either way
// <run>-a0).
// Objects that earlier versions of this server named <run>-<run> are
// found as ever, by identity (the cache has every object).
func objectName(run, action string) string {
	if action == run {
		return run + "-a0"
	}
	return run + "-" + action
}

// altName is the name of an action whose natural name is taken.
func altName(id ActionID) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(id.String()))
	return fmt.Sprintf("%s-%s-%08x", id.Run, id.Name, h.Sum64()&0xffffffff)
}
