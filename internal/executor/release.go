package executor

import (
	"context"
	"errors"
	"fmt"
	"slices"

	v1 "taskactions/api/v1"
	"taskactions/internal/executor/plugins"
	"taskactions/internal/taskactions"
)

// What an attempt holds (a process) is released when its action ends or
// goes. An action with the executor's finalizer stays until then (finish
// releases it, then the finalizer). One without (plugins.Swept: its
// plugin swept at start what an earlier server left) is gone from the
// cache as soon as it is deleted; so the executor remembers, for each
// action whose attempt may hold something of this process, the object
// its last round read, and a round of its key that finds the action
// gone, or another under its name, ends that attempt first (the plugin's
// Abort, then Finalize), and is retried until it could. Rounds of a key
// never overlap, so none can start anything under it meanwhile.

// hold remembers ta, read by a round about to run its plugin, unless the
// plugin holds nothing between rounds.
func (c *Controller) hold(key string, ta *v1.TaskAction, plugin plugins.Plugin) {
	if _, nothing := plugin.(plugins.HoldsNothing); nothing {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held[key] = ta
}

// heldAt is the action whose attempt may hold something under key.
func (c *Controller) heldAt(key string) *v1.TaskAction {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held[key]
}

// unhold forgets ta's attempt, over.
func (c *Controller) unhold(ta *v1.TaskAction) {
	key := ta.Namespace + "/" + ta.Name
	c.mu.Lock()
	defer c.mu.Unlock()
	if h := c.held[key]; h != nil && h.UID == ta.UID {
		delete(c.held, key)
	}
}

// releaseGone ends the attempt held under key when cur (nil: none) is no
// longer its action: deleted, or another action by the same name.
func (c *Controller) releaseGone(ctx context.Context, key string, cur *v1.TaskAction) error {
	h := c.heldAt(key)
	if h == nil || (cur != nil && cur.UID == h.UID) {
		return nil
	}
	return c.end(ctx, key, h)
}

// finish runs when the action is over (or being deleted): the plugin
// aborts whatever may still run, finalizes, and the finalizer goes.
func (c *Controller) finish(ctx context.Context, key string, ta *v1.TaskAction) error {
	if !slices.Contains(ta.Finalizers, v1.FinalizerPlugin) {
		// Nothing waits for the release: only this process's own
		// attempts hold anything (an earlier server's were swept).
		if h := c.heldAt(key); h != nil {
			if err := c.end(ctx, key, h); err != nil {
				return err
			}
		}
		c.forget(key)
		return nil
	}
	if err := c.end(ctx, key, ta); err != nil {
		return err
	}
	out, err := c.mgr.UpdateMeta(ctx, taskactions.IDOf(ta), func(t *v1.TaskAction) error {
		i := slices.Index(t.Finalizers, v1.FinalizerPlugin)
		if i < 0 {
			return taskactions.ErrNoChange
		}
		t.Finalizers = slices.Delete(t.Finalizers, i, i+1)
		return nil
	})
	if errors.Is(err, taskactions.ErrNotFound) {
		c.forget(key)
		return nil
	}
	if err == nil {
		c.expect(key, out)
	}
	return err
}

// end has the plugin abort and finalize the attempt of ta. An action
// without a plugin here, or whose template cannot be read, never ran one.
func (c *Controller) end(ctx context.Context, key string, ta *v1.TaskAction) error {
	plugin := c.cfg.Plugins[ta.Spec.TaskType]
	if plugin == nil {
		return nil
	}
	tmpl, err := parseTemplate(ta)
	if err != nil {
		return nil // reconcile failed it for that before anything ran
	}
	tc := c.taskContext(key, ta, tmpl)
	if err := plugin.Abort(ctx, tc); err != nil {
		return fmt.Errorf("abort: %w", err)
	}
	if err := plugin.Finalize(ctx, tc); err != nil {
		return fmt.Errorf("finalize: %w", err)
	}
	c.attemptOver(ta)
	return nil
}

// addFinalizer adds the executor's finalizer to an action whose plugin
// needs it (plugins.NeedsFinalizer), before anything runs for it: from
// then on, deletion waits for the attempt's cleanup. added: the write's
// event brings the action back for its round.
func (c *Controller) addFinalizer(ctx context.Context, key string, ta *v1.TaskAction, plugin plugins.Plugin) (added bool, err error) {
	if !plugins.NeedsFinalizer(plugin) || slices.Contains(ta.Finalizers, v1.FinalizerPlugin) {
		return false, nil
	}
	out, err := c.mgr.UpdateMeta(ctx, taskactions.IDOf(ta), func(ta *v1.TaskAction) error {
		if slices.Contains(ta.Finalizers, v1.FinalizerPlugin) {
			return taskactions.ErrNoChange
		}
		ta.Finalizers = append(ta.Finalizers, v1.FinalizerPlugin)
		return nil
	})
	if err != nil {
		return false, err
	}
	c.expect(key, out)
	return true, nil
}
