package taskactions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"

	v1 "taskactions/api/v1"
	"taskactions/internal/history"
)

// Reads are seamless: an action retired from the control plane is read
// from history, with the view it had when it was recorded, so a client
// gets the same JSON either way. A live object wins over its history row
// (the row may say retired a moment before the object goes).

// archive is the history store as the manager reads it: the actions
// retired from the control plane. Without a store it is empty.
type archive struct {
	store *history.Store // nil: there is none
}

// Page asks for one page of a list.
type Page struct {
	Limit    int    // 0 or more than MaxPage: MaxPage (history.PageSize)
	Continue string // the token of the previous page; "" for the first
	// Filter keeps only the actions it matches, and pages over those.
	Filter Filter
}

// MaxPage bounds a page of actions.
const MaxPage = history.MaxLimit

// ActionPage is one page of a list of actions, oldest first.
type ActionPage struct {
	Items    []*ActionUpdate
	Continue string // "" on the last page
}

// Action returns an action's view: live from the cache, else retired
// from history.
func (m *Manager) Action(ctx context.Context, id ActionID) (*ActionUpdate, error) {
	ta, err := m.GetTaskAction(ctx, id)
	if err == nil {
		return m.actions.View(ta), nil
	}
	if !errors.Is(err, ErrNotFound) || m.history.store == nil {
		return nil, err
	}
	return m.history.action(ctx, id)
}

// action reads an action from history (ErrNotFound when it has none).
func (h archive) action(ctx context.Context, id ActionID) (*ActionUpdate, error) {
	if h.store == nil {
		return nil, fmt.Errorf("action %s: %w", id, ErrNotFound)
	}
	rec, err := h.store.Action(ctx, id.RunID(), id.Name)
	if errors.Is(err, history.ErrNotFound) {
		return nil, fmt.Errorf("action %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return updateOfRecord(rec)
}

// retired is the view of an action that finished and left the control
// plane, from history; nil when history has no retired record of it (a
// live action's record, or none).
func (h archive) retired(ctx context.Context, id ActionID) (*ActionUpdate, error) {
	if h.store == nil {
		return nil, nil
	}
	rec, err := h.store.Action(ctx, id.RunID(), id.Name)
	switch {
	case errors.Is(err, history.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("action %s: %w", id, err) // ErrHistory
	case !rec.Retired:
		return nil, nil
	}
	return updateOfRecord(rec)
}

// gone is the error of a write to an action that is not live: ErrRetired
// when it finished and was retired (its state is final), else not found.
func (h archive) gone(ctx context.Context, id ActionID) error {
	u, err := h.retired(ctx, id)
	switch {
	case err != nil:
		return err
	case u != nil:
		return fmt.Errorf("action %s (%s): %w", id, u.Phase, ErrRetired)
	}
	return fmt.Errorf("action %s: %w", id, ErrNotFound)
}

// RunActions returns a page of a run's actions, live and retired.
func (m *Manager) RunActions(ctx context.Context, run v1.RunID, p Page) (ActionPage, error) {
	m.actions.CatchUp(ctx)
	live, err := m.cached.runViews(run)
	if err != nil {
		return ActionPage{}, err
	}
	return m.history.page(ctx, live, history.ActionQuery{Run: run, Retired: true}, p)
}

// ChildActions returns a page of an action's direct children, live and
// retired. The action must exist.
func (m *Manager) ChildActions(ctx context.Context, parent ActionID, p Page) (ActionPage, error) {
	if _, err := m.Action(ctx, parent); err != nil {
		return ActionPage{}, err
	}
	m.actions.CatchUp(ctx)
	live, err := m.cached.childViews(parent)
	if err != nil {
		return ActionPage{}, err
	}
	name := parent.Name
	return m.history.page(ctx, live, history.ActionQuery{Run: parent.RunID(), Retired: true, Parent: &name}, p)
}

// page merges the live actions (sorted oldest first) with the retired
// ones q selects, and cuts one page after p.Continue.
func (h archive) page(ctx context.Context, views []*ActionUpdate, q history.ActionQuery, p Page) (ActionPage, error) {
	limit := history.PageSize(p.Limit)
	var after *history.ActionKey
	if p.Continue != "" {
		var err error
		if after, err = history.ParseActionKey(p.Continue); err != nil {
			return ActionPage{}, fmt.Errorf("continue: %w", err)
		}
	}
	start := 0
	if after != nil {
		start = sort.Search(len(views), func(i int) bool { return after.Less(listKey(views[i])) })
	}
	live := views[start:]
	if !p.Filter.IsZero() {
		live = slices.DeleteFunc(slices.Clone(live), func(u *ActionUpdate) bool { return !p.Filter.Match(u) })
	}
	retired, err := h.after(ctx, q, after, views, limit+1, p.Filter)
	if err != nil {
		return ActionPage{}, err
	}
	items := mergeByKey(live, retired, limit+1)
	out := ActionPage{Items: items}
	if len(items) > limit {
		out.Items = items[:limit]
		out.Continue = listKey(items[limit-1]).Token()
	}
	return out, nil
}

// after reads up to n retired actions after the key that are not live (a
// row marked retired whose object has not gone yet is live) and that f
// matches.
func (h archive) after(ctx context.Context, q history.ActionQuery, after *history.ActionKey, live []*ActionUpdate, n int, f Filter) ([]*ActionUpdate, error) {
	if h.store == nil {
		return nil, nil
	}
	var isLive map[string]bool // built on the first row: most runs have none retired
	var out []*ActionUpdate
	q.After, q.Limit = after, n
	for len(out) < n {
		recs, err := h.store.Actions(ctx, q)
		if err != nil {
			return nil, err
		}
		if len(recs) > 0 && isLive == nil {
			isLive = make(map[string]bool, len(live))
			for _, u := range live {
				isLive[u.ID.Name] = true
			}
		}
		for _, rec := range recs {
			if isLive[rec.Name] {
				continue
			}
			u, err := updateOfRecord(rec)
			if err != nil {
				return nil, err
			}
			if f.Match(u) {
				out = append(out, u)
			}
		}
		if len(recs) < q.Limit {
			break
		}
		k := recs[len(recs)-1].Key()
		q.After = &k
	}
	return out, nil
}

// mergeByKey merges two lists sorted by key, up to n items.
func mergeByKey(a, b []*ActionUpdate, n int) []*ActionUpdate {
	out := make([]*ActionUpdate, 0, min(n, len(a)+len(b)))
	for len(out) < n && (len(a) > 0 || len(b) > 0) {
		if len(b) == 0 || (len(a) > 0 && listKey(a[0]).Less(listKey(b[0]))) {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return out
}

func listKey(u *ActionUpdate) history.ActionKey {
	return history.ActionKey{CreatedAt: u.CreatedAt, Name: u.ID.Name}
}

// snapshot adds to a stream's snapshot the retired actions of its scope:
// a stream of a retired run sends its final state, then synced. It fails
// when history does not answer: a snapshot without them would pass for
// the whole.
func (h archive) snapshot(ctx context.Context, s Scope, snap []*ActionUpdate) ([]*ActionUpdate, error) {
	if h.store == nil {
		return snap, nil
	}
	q := history.ActionQuery{Run: s.Run, Retired: true}
	if s.Action != "" {
		q.Parent = &s.Action
		self, err := h.store.Action(ctx, q.Run, s.Action)
		switch {
		case err == nil && self.Retired && !hasName(snap, s.Action):
			if u, err := updateOfRecord(self); err == nil {
				snap = append(snap, u)
			}
		case err != nil && !errors.Is(err, history.ErrNotFound):
			return nil, err
		}
	}
	more, err := h.after(ctx, q, nil, snap, MaxPage, Filter{})
	if err != nil {
		return nil, err
	}
	return append(snap, more...), nil
}

func hasName(us []*ActionUpdate, name string) bool {
	for _, u := range us {
		if u.ID.Name == name {
			return true
		}
	}
	return false
}

func updateOfRecord(rec history.Action) (*ActionUpdate, error) {
	u := &ActionUpdate{}
	if err := json.Unmarshal(rec.View, &u.Action); err != nil {
		return nil, fmt.Errorf("history: action %s/%s/%s/%s: %w", rec.Project, rec.Domain, rec.Run, rec.Name, err)
	}
	return u, nil
}

// Window is the first view of a stream's snapshot: its first n actions
// in the order of the run's list (oldest first, then by name), and the
// list's continue token for the rest ("" when none is left), so a client
// pages on with RunActions from where the snapshot stopped.
func Window(snapshot []*ActionUpdate, n int) (shown []*ActionUpdate, more string) {
	sorted := slices.Clone(snapshot)
	slices.SortFunc(sorted, func(a, b *ActionUpdate) int {
		ka, kb := listKey(a), listKey(b)
		switch {
		case ka.Less(kb):
			return -1
		case kb.Less(ka):
			return 1
		}
		return 0
	})
	if len(sorted) <= n {
		return sorted, ""
	}
	return sorted[:n], listKey(sorted[n-1]).Token()
}
