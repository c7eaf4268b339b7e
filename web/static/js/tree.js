// @ts-check
// The run page's action tree: one row per action under its parent, kept in
// step with the run stream's changes, with the keyboard of a tree view.
import { h, setAttr, setText } from './dom.js';
import { actionSpan, badge, cacheName, compareNames, isTerminal, ms, phaseName, spanDuration, updateBadge } from './format.js';

/** @typedef {import('./types.js').ActionEvent} ActionEvent */

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
export class ActionTree {
  /**
   * @param {HTMLElement} root
   * @param {{onSelect: (a: ActionEvent | null, removed?: string) => void, onChange: () => void}} o
   */
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

  /** close stops watching the rows (the page goes). */
  close() {
    if (this.io) this.io.disconnect();
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
    const wrap = /** @type {HTMLElement} */ (rowTemplate.cloneNode(true));
    const row = /** @type {HTMLElement} */ (wrap.firstElementChild);
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
