// /projects/{p}/domains/{d}/runs/{r}: the run's action tree, kept live by the
// run stream (`action` events carry Action + deleted), with a detail panel
// for the selected action and abort.
import { h, setAttr, setText } from './dom.js';
import { abortAction, deleteRun, getRun, pages, streams } from './api.js';
import { LiveCollection, keepCurrent } from './live.js';
import {
  actionSpan, badge, compareNames, fullTime, isTerminal, ms, phaseName,
  duration, shortTime, spanDuration, timeEl, updateBadge,
} from './format.js';
import { phaseChips } from './runs.js';
import { confirmAbort, toast } from './dialog.js';
import { LogView } from './logs.js';
import * as store from './store.js';

export function runPage(main, { project, domain, run }, ui) {
  store.remember(project, domain);
  ui.setTitle(`${run} · ${project}/${domain}`);
  ui.setCrumbs([{ label: `${project} / ${domain}`, href: pages.runs(project, domain) }, { label: run }]);

  // Page head: the run, its root's phase, counts, and abort.
  const runBadge = badge('UNSPECIFIED');
  runBadge.hidden = true;
  // The root's phase alone would hide what else happened in the run.
  const runNote = h('span', { class: 'run-note', id: 'run-note', hidden: true });
  const started = h('span', { text: '–' });
  const runDur = h('span', { text: '–' });
  // Counted once the stream's snapshot is in, not before: "0 actions"
  // while a large run loads would not be so.
  const count = h('span', { id: 'run-count', text: 'Loading…' });
  const chips = h('div', { class: 'head-chips', role: 'group', 'aria-label': 'Actions per phase' });
  const abortRun = h('button', { type: 'button', class: 'btn danger', id: 'abort-run', disabled: true, text: 'Abort run' });
  const deleteRunBtn = h('button', { type: 'button', class: 'btn danger', id: 'delete-run', hidden: true, text: 'Delete run' });
  main.append(h('div', { class: 'page-head' },
    h('div', null,
      h('p', { class: 'eyebrow', text: `${project} / ${domain} · run` }),
      h('h1', null, h('span', { class: 'mono', text: run }), runBadge, runNote),
      h('p', { class: 'meta' }, h('span', null, 'Started ', started), h('span', null, 'Duration ', runDur), count)),
    h('div', { class: 'head-actions' }, abortRun, deleteRunBtn)), chips);

  // The tree and the detail panel.
  const treeEl = h('div', { class: 'tree', role: 'tree', id: 'tree', 'aria-labelledby': 'tree-title' });
  const loading = h('p', { class: 'empty', text: 'Loading actions…' });
  const empty = h('p', { class: 'empty', hidden: true, text: 'No actions in this run yet. They appear here as soon as they are enqueued.' });
  // A run the server does not know (a mistyped URL): said so, not "no
  // actions yet" forever. Its actions would still appear if enqueued.
  const missing = h('div', { class: 'empty', id: 'run-missing', role: 'status', hidden: true },
    h('p', { text: `There is no run ${run} in ${project} / ${domain}.` }),
    h('p', null, h('a', { href: pages.runs(project, domain), text: `The runs of ${project} / ${domain}` })));
  const detail = h('aside', { class: 'panel detail', id: 'detail', 'aria-labelledby': 'detail-title' });
  main.append(h('div', { class: 'layout' },
    h('section', { class: 'panel tree-panel', 'aria-labelledby': 'tree-title' },
      h('div', { class: 'panel-head' },
        h('h2', { id: 'tree-title', text: 'Actions' }),
        h('div', { class: 'tools' },
          h('button', { type: 'button', class: 'btn small', text: 'Expand all', onclick: () => tree.expandAll(true) }),
          h('button', { type: 'button', class: 'btn small', text: 'Collapse all', onclick: () => tree.expandAll(false) }))),
      h('div', { class: 'tree-cols', 'aria-hidden': 'true' },
        h('span', { text: 'Action' }), h('span', { class: 'c-type', text: 'Type' }), h('span', { text: 'Phase' }),
        h('span', { class: 'num' }, h('span', { class: 'long', text: 'Attempts' }), h('span', { class: 'short', text: '#' })),
        h('span', { class: 'c-cache', text: 'Cache' }),
        h('span', { class: 'num' }, h('span', { class: 'long', text: 'Duration' }), h('span', { class: 'short', text: 'Time' }))),
      treeEl, loading, empty, missing),
    detail));

  const abort = (name, what) => confirmAbort({
    heading: `Abort ${what} ${what === 'run' ? run : name}?`,
    text: `${name === tree.rootName ? 'Every action of the run' : `Action ${name} and every action under it`} that has not finished will end ABORTED. This cannot be undone.`,
    confirm: `Abort ${what}`,
    run: (reason) => abortAction(project, domain, run, name, reason),
    done: () => toast(`Abort requested for ${what} ${what === 'run' ? run : name}.`),
  });
  abortRun.addEventListener('click', () => tree.rootName && abort(tree.rootName, 'run'));
  deleteRunBtn.addEventListener('click', () => confirmAbort({
    heading: `Delete run ${run}?`,
    text: `Every action of the run and its record here go. This cannot be undone.`,
    confirm: 'Delete run',
    noReason: true,
    run: () => deleteRun(project, domain, run),
    done: () => location.assign(pages.runs(project, domain)),
  }));

  const panel = new DetailPanel(detail, {
    ids: { project, domain, run },
    abort: (name) => abort(name, 'action'),
    select: (name) => tree.select(name, { focus: true, reveal: true }),
  });

  const tree = new ActionTree(treeEl, {
    onSelect: (a, removed) => {
      panel.show(a, removed);
      const hash = a ? `#action=${encodeURIComponent(a.actionId.name)}` : '';
      if (location.hash !== hash) history.replaceState(null, '', location.pathname + location.search + hash);
    },
    onChange: () => updateHead(),
  });

  function updateHead() {
    const root = tree.rootName ? tree.nodes.get(tree.rootName) : null;
    if (root) {
      runBadge.hidden = false;
      updateBadge(runBadge, root.a.phase);
      setText(started, shortTime(root.a.createdAt));
      setAttr(started, 'title', fullTime(root.a.createdAt));
      setText(runDur, spanDuration(root.span));
    }
    // A finished run (every action finished) may be deleted; until then it
    // may be aborted, even when its root has finished.
    const finished = tree.nodes.size > 0 && [...tree.counts.keys()].every(isTerminal);
    abortRun.disabled = !root || finished;
    deleteRunBtn.hidden = !finished;
    setAttr(abortRun, 'title', !root ? 'The run has no root action yet' : finished ? 'The run has finished' : null);
    const note = root && isTerminal(root.a.phase) ? runNoteText(tree.counts, root.a.phase) : '';
    setText(runNote, note);
    runNote.hidden = !note;
    const n = tree.nodes.size;
    setText(count, loading.hidden ? `${n} action${n === 1 ? '' : 's'}` : 'Loading…');
    const key = JSON.stringify([...tree.counts]);
    if (chips.dataset.key !== key) {
      chips.dataset.key = key;
      chips.replaceChildren(phaseChips(Object.fromEntries(tree.counts)));
    }
    empty.hidden = n > 0 || !loading.hidden || !missing.hidden;
    if (n > 0) missing.hidden = true;
  }

  // checkExists asks, when the run has no actions, whether the server
  // knows it at all.
  function checkExists() {
    if (tree.nodes.size > 0) return;
    getRun(project, domain, run).then(() => {}, (e) => {
      if (e.status !== 404 || tree.nodes.size > 0) return;
      missing.hidden = false;
      updateHead();
    });
  }

  let first = true;
  const live = new LiveCollection({
    url: streams.run(project, domain, run),
    event: 'action',
    key: (a) => a.actionId.name,
    deleted: (a) => a.deleted === true,
    apply: (changes) => tree.apply(changes),
    onSynced: () => {
      loading.hidden = true;
      updateHead();
      if (first) {
        first = false;
        checkExists();
        // An action named in the URL (#action=name) is selected on arrival.
        const name = hashAction();
        if (name && tree.nodes.has(name)) tree.select(name, { focus: false, reveal: true });
      }
    },
    onState: ui.setConn,
  });
  live.start();
  keepCurrent(live);

  // A link or a person may change #action=name: select it.
  window.addEventListener('hashchange', () => {
    const name = hashAction();
    if (name && name !== tree.selected && tree.nodes.has(name)) tree.select(name, { focus: true, reveal: true });
  });

  setInterval(() => {
    tree.tick();
    panel.tick();
    updateHead();
  }, 1000);
}

/** runNoteText says what else happened in a run whose root finished in
 * rootPhase: "with 1 failed, 1 timed out, 1 aborted, 1 not started" (the
 * root not counted); empty when every other action succeeded. */
export function runNoteText(counts, rootPhase) {
  const n = (phases) => phases.reduce((sum, p) => sum + (counts.get(p) || 0), 0) - (phases.includes(rootPhase) ? 1 : 0);
  const parts = [
    [n(['FAILED']), 'failed'],
    [n(['TIMED_OUT']), 'timed out'],
    [n(['ABORTED']), 'aborted'],
    [n(['INITIALIZING', 'RUNNING', 'PAUSED']), 'still running'],
    [n(['UNSPECIFIED', 'QUEUED', 'WAITING_FOR_RESOURCES']), 'not started'],
  ].filter(([k]) => k > 0).map(([k, what]) => `${k} ${what}`);
  return parts.length ? 'with ' + parts.join(', ') : '';
}

/** hashAction is the action named by the URL's #action=name, or null. */
function hashAction() {
  const m = /^#action=(.+)$/.exec(location.hash);
  try {
    return m ? decodeURIComponent(m[1]) : null;
  } catch {
    return null; // not an encoding we made
  }
}

// A row's template, cloned for each action: cloning is much cheaper than
// building 2,000 rows element by element.
// The row's accessible name is set apart (see label), without the ticking
// duration.
const rowTemplate = h('div', { class: 'node', role: 'none' },
  h('div', { class: 'row', role: 'treeitem', tabindex: '-1', 'aria-selected': 'false' },
    h('span', { class: 'c-name' }, h('span', { class: 'twisty', 'aria-hidden': 'true' }), h('span', { class: 'v mono' })),
    h('span', { class: 'c-type' }),
    h('span', { class: 'c-phase' }, badge('UNSPECIFIED')),
    h('span', { class: 'c-att num' }),
    h('span', { class: 'c-cache' }),
    h('span', { class: 'c-dur num' })),
  h('div', { class: 'kids', role: 'none' }));

/** label is what assistive technology says for a row. */
function label(a) {
  const cache = cacheName(a.cacheStatus);
  return `${a.actionId.name}, ${phaseName(a.phase)}, attempt ${a.attempts ?? 0}${cache === '–' ? '' : `, cache ${cache}`}, ${a.taskType || 'no type'}`;
}

/**
 * ActionTree shows the actions as a tree (parent -> children). It keeps a map
 * from name to row and changes only the rows whose action changed. The DOM
 * nests children under their parent (so collapsing hides one element); the
 * accessibility tree is flat, with aria-level on each treeitem.
 */
class ActionTree {
  constructor(root, { onSelect, onChange }) {
    this.root = root;
    this.onSelect = onSelect;
    this.onChange = onChange;
    this.nodes = new Map(); // name -> node
    this.byWrap = new WeakMap(); // .node element -> node
    this.waiting = new Map(); // parent name -> names shown at the top until the parent arrives
    this.counts = new Map(); // phase -> number of actions
    this.active = new Set(); // names of unfinished actions, whose duration ticks
    this.rootName = null;
    // Rows on screen (or nearly): only their durations tick, so 2,000
    // running actions cost no more per second than the few one can see.
    this.visible = new Set();
    this.io = typeof IntersectionObserver === 'function' ? new IntersectionObserver((entries) => {
      const now = Date.now();
      for (const e of entries) {
        const node = this.byWrap.get(e.target.parentElement);
        if (!node) continue;
        if (e.isIntersecting) {
          this.visible.add(node.name);
          setText(node.cells.dur, spanDuration(node.span, now));
        } else {
          this.visible.delete(node.name);
        }
      }
    }, { rootMargin: '200px 0px' }) : null;
    this.focused = null; // the row in the tab order (roving tabindex)
    this.selected = null;
    root.addEventListener('click', (ev) => this.onClick(ev));
    root.addEventListener('keydown', (ev) => this.onKey(ev));
    root.addEventListener('focusin', (ev) => {
      const node = this.nodeOfRow(ev.target);
      if (node) this.setFocusable(node);
    });
  }

  /** apply takes a batch of changes: name -> action, or null when it went away. */
  apply(changes) {
    const added = new Map();
    for (const [name, a] of changes) {
      const node = this.nodes.get(name);
      if (a === null) {
        if (node) this.remove(node);
      } else if (node) {
        this.update(node, a);
      } else {
        added.set(name, a);
      }
    }
    // Parents before their children, whatever order the batch came in.
    const add = (name) => {
      const a = added.get(name);
      if (!a) return;
      added.delete(name);
      if (a.parentActionName) add(a.parentActionName);
      this.add(a);
    };
    // In display order, so that each insert is an append: the server sends
    // names in byte order (c10 before c2), the page shows c2 first.
    const order = [...added.values()].sort((x, y) => ((ms(x.createdAt) || 0) - (ms(y.createdAt) || 0)) || compareNames(x.actionId.name, y.actionId.name));
    for (const a of order) add(a.actionId.name);
    this.onChange();
  }

  add(a) {
    const name = a.actionId.name;
    const wrap = rowTemplate.cloneNode(true);
    const row = wrap.firstElementChild;
    const [nameCell, typeCell, phaseCell, attCell, cacheCell, durCell] = row.children;
    const node = {
      name, a, wrap, row, kids: wrap.lastElementChild, depth: 0, expanded: true, span: actionSpan(a),
      order: ms(a.createdAt) || 0,
      cells: { badge: phaseCell.firstElementChild, type: typeCell, att: attCell, cache: cacheCell, dur: durCell },
    };
    nameCell.lastElementChild.textContent = name;
    row.dataset.action = name;
    this.byWrap.set(wrap, node);
    this.nodes.set(name, node);
    this.fill(node, null);
    if (this.io) this.io.observe(row);

    const parent = a.parentActionName ? this.nodes.get(a.parentActionName) : null;
    if (a.parentActionName && !parent) this.wait(a.parentActionName, name);
    this.insert(parent, node);
    if (!a.parentActionName && (!this.rootName || !this.nodes.has(this.rootName))) this.rootName = name;
    // Children that arrived before this parent move under it.
    const orphans = this.waiting.get(name);
    if (orphans) {
      this.waiting.delete(name);
      for (const child of orphans) {
        const c = this.nodes.get(child);
        if (c) this.insert(node, c);
      }
    }
    if (!this.focused) this.setFocusable(node);
  }

  wait(parent, child) {
    let set = this.waiting.get(parent);
    if (!set) this.waiting.set(parent, (set = new Set()));
    set.add(child);
  }

  // insert puts node among parent's children (or at the top level), ordered
  // by creation time then name. New actions are usually the newest, so the
  // search starts from the end.
  insert(parent, node) {
    const container = parent ? parent.kids : this.root;
    const oldParent = this.parentOf(node);
    let ref = null;
    for (let sib = container.lastElementChild; sib; sib = sib.previousElementSibling) {
      const other = this.byWrap.get(sib);
      if (other === node) continue;
      if (compareNodes(node, other) >= 0) break;
      ref = sib;
    }
    container.insertBefore(node.wrap, ref);
    this.setDepth(node, parent ? parent.depth + 1 : 0);
    if (oldParent && oldParent !== parent) this.kidsChanged(oldParent);
    if (parent) this.kidsChanged(parent);
  }

  setDepth(node, depth) {
    if (node.depth === depth && node.row.hasAttribute('aria-level')) return;
    node.depth = depth;
    node.row.style.setProperty('--depth', String(depth));
    node.row.setAttribute('aria-level', String(depth + 1));
    for (const w of node.kids.children) this.setDepth(this.byWrap.get(w), depth + 1);
  }

  kidsChanged(node) {
    const has = node.kids.firstElementChild !== null;
    node.wrap.classList.toggle('has-kids', has);
    setAttr(node.row, 'aria-expanded', has ? String(node.expanded) : null);
  }

  update(node, a) {
    const prev = node.a;
    node.a = a;
    node.span = actionSpan(a);
    this.fill(node, prev);
    if (this.selected === node.name) this.onSelect(a);
  }

  // fill writes the action into its row, touching only what changed.
  fill(node, prev) {
    const a = node.a;
    if (!prev || prev.phase !== a.phase) {
      if (prev) this.count(prev.phase, -1);
      this.count(a.phase, 1);
      node.row.dataset.phase = a.phase;
      updateBadge(node.cells.badge, a.phase);
      if (isTerminal(a.phase)) this.active.delete(node.name);
      else this.active.add(node.name);
    }
    setText(node.cells.type, a.taskType || '–');
    setText(node.cells.att, String(a.attempts ?? 0));
    setText(node.cells.cache, cacheName(a.cacheStatus));
    setText(node.cells.dur, spanDuration(node.span));
    setAttr(node.row, 'aria-label', label(a));
  }

  count(phase, d) {
    const n = (this.counts.get(phase) || 0) + d;
    if (n > 0) this.counts.set(phase, n);
    else this.counts.delete(phase);
  }

  remove(node) {
    const parent = this.parentOf(node);
    // Its children stay, at the top, until it comes back.
    for (const w of [...node.kids.children]) {
      const child = this.byWrap.get(w);
      this.wait(node.name, child.name);
      this.insert(null, child);
    }
    if (node.a.parentActionName) this.waiting.get(node.a.parentActionName)?.delete(node.name);
    const next = this.focused === node ? (this.next(node) || this.prev(node)) : null;
    node.wrap.remove();
    if (this.io) this.io.unobserve(node.row);
    this.visible.delete(node.name);
    if (parent) this.kidsChanged(parent);
    this.nodes.delete(node.name);
    this.count(node.a.phase, -1);
    this.active.delete(node.name);
    if (this.rootName === node.name) {
      this.rootName = [...this.nodes.values()].find((n) => !n.a.parentActionName)?.name || null;
    }
    if (this.focused === node) {
      this.focused = null;
      const target = next || this.firstNode();
      if (target) this.setFocusable(target);
    }
    if (this.selected === node.name) {
      this.selected = null;
      this.onSelect(null, node.name);
    }
  }

  /** tick moves the durations of unfinished actions on. */
  tick() {
    const now = Date.now();
    for (const name of this.io ? this.visible : this.active) {
      const node = this.nodes.get(name);
      if (node && this.active.has(name)) setText(node.cells.dur, spanDuration(node.span, now));
    }
  }

  parentOf(node) {
    const up = node.wrap.parentElement && node.wrap.parentElement.parentElement;
    return (up && this.byWrap.get(up)) || null;
  }

  nodeOfRow(el) {
    const row = el instanceof Element ? el.closest('.row') : null;
    return row ? this.byWrap.get(row.parentElement) || null : null;
  }

  firstNode() {
    return this.root.firstElementChild ? this.byWrap.get(this.root.firstElementChild) : null;
  }

  // next and prev walk the visible rows, as the arrow keys do.
  next(node) {
    if (node.expanded && node.kids.firstElementChild) return this.byWrap.get(node.kids.firstElementChild);
    for (let n = node; n; n = this.parentOf(n)) {
      if (n.wrap.nextElementSibling) return this.byWrap.get(n.wrap.nextElementSibling);
    }
    return null;
  }

  prev(node) {
    const sib = node.wrap.previousElementSibling;
    if (!sib) return this.parentOf(node);
    return this.lastVisible(this.byWrap.get(sib));
  }

  lastVisible(node) {
    let n = node;
    while (n.expanded && n.kids.lastElementChild) n = this.byWrap.get(n.kids.lastElementChild);
    return n;
  }

  setFocusable(node) {
    if (this.focused === node) return;
    if (this.focused) this.focused.row.tabIndex = -1;
    this.focused = node;
    node.row.tabIndex = 0;
  }

  focus(node) {
    if (!node) return;
    this.setFocusable(node);
    node.row.focus();
  }

  setExpanded(node, open) {
    if (!node.kids.firstElementChild || node.expanded === open) return;
    // Focus inside a subtree that closes goes to its parent row.
    const refocus = !open && node.kids.contains(document.activeElement);
    if (!open && this.focused && node.kids.contains(this.focused.wrap)) this.setFocusable(node);
    node.expanded = open;
    node.wrap.classList.toggle('collapsed', !open);
    node.row.setAttribute('aria-expanded', String(open));
    if (refocus) this.focus(node);
  }

  expandAll(open) {
    for (const node of this.nodes.values()) this.setExpanded(node, open);
  }

  /** select shows an action in the detail panel. */
  select(name, { focus = false, reveal = false } = {}) {
    const node = this.nodes.get(name);
    if (!node) return;
    if (reveal) {
      for (let p = this.parentOf(node); p; p = this.parentOf(p)) this.setExpanded(p, true);
      node.row.scrollIntoView({ block: 'nearest' });
    }
    if (this.selected !== name) {
      const old = this.selected && this.nodes.get(this.selected);
      if (old) old.row.setAttribute('aria-selected', 'false');
      node.row.setAttribute('aria-selected', 'true');
      this.selected = name;
    }
    if (focus) this.focus(node);
    else this.setFocusable(node);
    this.onSelect(node.a);
  }

  onClick(ev) {
    const node = this.nodeOfRow(ev.target);
    if (!node) return;
    if (ev.target.closest('.twisty') && node.kids.firstElementChild) {
      this.setExpanded(node, !node.expanded);
      this.focus(node);
      return;
    }
    this.select(node.name, { focus: true });
  }

  onKey(ev) {
    const node = this.nodeOfRow(ev.target);
    if (!node || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    const hasKids = node.kids.firstElementChild !== null;
    let handled = true;
    switch (ev.key) {
      case 'ArrowDown': this.focus(this.next(node)); break;
      case 'ArrowUp': this.focus(this.prev(node)); break;
      case 'ArrowRight':
        if (hasKids && !node.expanded) this.setExpanded(node, true);
        else if (hasKids) this.focus(this.byWrap.get(node.kids.firstElementChild));
        break;
      case 'ArrowLeft':
        if (hasKids && node.expanded) this.setExpanded(node, false);
        else this.focus(this.parentOf(node));
        break;
      case 'Home': this.focus(this.firstNode()); break;
      case 'End': {
        const last = this.root.lastElementChild;
        if (last) this.focus(this.lastVisible(this.byWrap.get(last)));
        break;
      }
      case 'Enter':
      case ' ':
        this.select(node.name, { focus: true });
        break;
      default: handled = false;
    }
    if (handled) ev.preventDefault();
  }
}

function compareNodes(x, y) {
  return (x.order - y.order) || compareNames(x.name, y.name);
}

function cacheName(c) {
  return !c || c === 'DISABLED' ? '–' : c.replaceAll('_', ' ').toLowerCase();
}

/**
 * DetailPanel shows one action: a Details tab (facts, abort reason, error,
 * timeline, conditions) and a Logs tab (its attempts' output, live).
 */
class DetailPanel {
  constructor(el, { abort, select, ids }) {
    this.el = el;
    this.abort = abort;
    this.selectAction = select;
    this.ids = ids;
    this.a = null;
    this.durEl = null;
    this.tab = 'details';
    this.logs = null; // the LogView of the action shown, once its tab opened
    this.headBox = h('div');
    this.bodyBox = h('div', { id: 'detail-body', role: 'tabpanel' });
    this.show(null);
  }

  setTab(tab) {
    this.tab = tab;
    this.show(this.a);
    const t = document.getElementById(`tab-${tab}`);
    if (t) t.focus();
  }

  // logView is the Logs tab's content: kept while the same action is
  // shown, so that a status change does not restart the log.
  logView(a) {
    if (this.logs && this.logs.id.action !== a.actionId.name) {
      this.logs.close();
      this.logs = null;
    }
    if (!this.logs) this.logs = new LogView({ ...this.ids, action: a.actionId.name });
    this.logs.setAttempts(a.attempts);
    return this.logs.el;
  }

  show(a, removedName) {
    // Keep the keyboard where it was when the panel is redrawn.
    const focusId = this.el.contains(document.activeElement) ? document.activeElement.id : '';
    this.a = a;
    this.durEl = null;
    if (!a) {
      if (this.logs) this.logs.close();
      this.logs = null;
      this.el.replaceChildren(
        h('h2', { id: 'detail-title', class: 'sr-only', text: 'Action details' }),
        h('div', { class: 'placeholder' },
          h('p', { text: removedName ? `Action ${removedName} was deleted.` : 'Select an action to see its phase history, errors and conditions.' }),
          h('p', { class: 'muted', text: 'Rows take the keyboard too: arrows move, Enter selects, ←/→ collapse and expand.' })));
      return;
    }
    const name = a.actionId.name;
    const done = isTerminal(a.phase);
    this.durEl = h('dd', { text: spanDuration(actionSpan(a)) });
    const facts = [
      ['Task type', a.actionType === 'condition' ? 'condition' : (a.taskType || '–')],
      a.taskTemplate ? ['Task template', `${a.taskTemplate.size} bytes, ${a.taskTemplate.encoding === 'json' ? 'JSON' : 'binary (opaque here)'}`] : null,
      ['Parent', a.parentActionName ? h('button', { type: 'button', class: 'linklike mono', text: a.parentActionName, onclick: () => this.selectAction(a.parentActionName) }) : '– (root)'],
      ['Attempts', String(a.attempts ?? 0)],
      ['System failures', String(a.systemFailures ?? 0)],
      ['Cache', cacheName(a.cacheStatus)],
      ['Created', timeEl(a.createdAt)],
      ['Updated', timeEl(a.updatedAt)],
      ['Duration', this.durEl],
      // Only while it can change: a finished action's last plugin phase
      // ("sleeping until …") would contradict its phase.
      a.pluginPhase && !done ? ['Plugin phase', a.pluginPhase] : null,
      a.shortName ? ['Short name', a.shortName] : null,
      a.group ? ['Group', a.group] : null,
      a.outputUri ? ['Output', h('span', { class: 'mono wrap', text: a.outputUri })] : null,
    ].filter(Boolean);
    const dl = h('dl', { class: 'facts' }, facts.map(([k, v]) => [h('dt', { text: k }), v instanceof HTMLElement && v.tagName === 'DD' ? v : h('dd', null, v)]));

    const sections = [];
    if (a.phase === 'ABORTED' || a.abortReason) {
      sections.push(h('div', { class: 'callout ph-ABORTED', role: 'note' },
        h('h3', { text: 'Abort reason' }),
        h('p', { class: a.abortReason ? 'wrap' : 'muted', text: a.abortReason || 'No reason given.' })));
    }
    // Nothing here runs its task type: say so while it waits.
    if (a.pendingReason) {
      sections.push(h('div', { class: 'callout', role: 'note' },
        h('h3', { text: 'Waiting for an executor' }),
        h('p', { class: 'wrap', text: a.pendingReason })));
    }
    // An abort is said once, by its reason above, not again as an error.
    if (a.phase !== 'ABORTED' && a.errorState && (a.errorState.code || a.errorState.message)) {
      const e = a.errorState;
      sections.push(h('div', { class: 'callout ph-FAILED', role: 'note' },
        h('h3', null, 'Error', e.kind ? h('span', { class: 'tag', text: e.kind.toLowerCase() }) : null),
        e.code ? h('p', { class: 'mono', text: e.code }) : null,
        e.message ? h('pre', { class: 'wrap', text: e.message }) : null));
    }
    sections.push(h('section', { 'aria-labelledby': 'timeline-title' },
      h('h3', { id: 'timeline-title', text: 'Phase history' }),
      timeline(a.phaseHistory || [])));
    if (a.conditions && a.conditions.length) {
      sections.push(h('section', { 'aria-labelledby': 'conditions-title' },
        h('h3', { id: 'conditions-title', text: 'Conditions' }),
        h('ul', { class: 'conds' }, a.conditions.map((c) => h('li', null,
          h('div', { class: 'cond-line' },
            h('strong', { text: c.type }),
            h('span', { class: 'cond-status cond-' + String(c.status).toLowerCase(), text: c.status }),
            c.reason ? h('span', { text: c.reason }) : null,
            timeEl(c.lastTransitionTime)),
          c.message ? h('p', { class: 'tl-msg wrap', text: c.message }) : null)))));
    }

    const tabs = h('div', { class: 'tabs', role: 'tablist', 'aria-label': 'Action views' },
      ['details', 'logs'].map((t) => h('button', {
        type: 'button', role: 'tab', id: `tab-${t}`, class: 'tab', 'aria-selected': String(this.tab === t),
        'aria-controls': 'detail-body', tabindex: this.tab === t ? '0' : '-1',
        text: t === 'details' ? 'Details' : 'Logs', onclick: () => this.setTab(t),
      })));
    tabs.addEventListener('keydown', (ev) => {
      if (ev.key === 'ArrowRight' || ev.key === 'ArrowLeft') this.setTab(this.tab === 'details' ? 'logs' : 'details');
    });
    this.headBox.replaceChildren(
      h('div', { class: 'detail-head' },
        h('div', null,
          h('p', { class: 'eyebrow', text: 'Action' }),
          h('h2', { id: 'detail-title', class: 'mono', text: name })),
        badge(a.phase)),
      h('div', { class: 'detail-actions' },
        h('button', {
          type: 'button', class: 'btn danger', id: 'abort-action', disabled: done,
          title: done ? `Already ${phaseName(a.phase).toLowerCase()}` : null,
          text: 'Abort action', onclick: () => this.abort(name),
        })),
      tabs);
    if (this.tab === 'logs') {
      const view = this.logView(a);
      if (this.bodyBox.firstChild !== view) this.bodyBox.replaceChildren(view);
    } else {
      if (this.logs) this.logs.close();
      this.logs = null;
      this.bodyBox.replaceChildren(dl, ...sections);
    }
    this.bodyBox.setAttribute('aria-labelledby', `tab-${this.tab}`);
    if (this.el.firstChild !== this.headBox) this.el.replaceChildren(this.headBox, this.bodyBox);
    if (focusId) {
      const el = document.getElementById(focusId);
      if (el && !el.disabled) el.focus();
    }
  }

  tick() {
    if (this.a && this.durEl && !isTerminal(this.a.phase)) setText(this.durEl, spanDuration(actionSpan(this.a)));
  }
}

function timeline(history) {
  if (!history.length) return h('p', { class: 'muted', text: 'No transitions yet.' });
  const ol = h('ol', { class: 'timeline' });
  let prev = NaN;
  for (const t of history) {
    const at = ms(t.occurredAt);
    const delta = Number.isFinite(prev) && Number.isFinite(at) ? `+${duration(at - prev)}` : '';
    prev = at;
    ol.append(h('li', { class: 'ph-' + t.phase },
      h('span', { class: 'marker', 'aria-hidden': 'true' }),
      h('div', { class: 'tl-body' },
        h('div', { class: 'tl-line' },
          h('strong', { text: phaseName(t.phase) }),
          timeEl(t.occurredAt),
          delta ? h('span', { class: 'muted delta', text: delta }) : null),
        t.message ? h('p', { class: 'tl-msg wrap', text: t.message }) : null)));
  }
  return ol;
}
