// @ts-check
// The run page's action tree: a model of the run's actions (each under its
// parent), kept in step with the run stream's changes, shown through a
// VirtualList so that a run of 50,000 actions puts no more rows in the DOM
// than one of 50, with the keyboard of a tree view.
import { h, setAttr, setText } from './dom.js';
import { actionSpan, badge, cacheName, compareNames, isTerminal, phaseName, spanDuration, updateBadge } from './format.js';
import { VirtualList } from './vlist.js';

/** @typedef {import('./types.js').ActionEvent} ActionEvent */

/**
 * @typedef {object} TreeNode
 * @property {string} name
 * @property {ActionEvent} a
 * @property {ReturnType<typeof actionSpan>} span
 * @property {number} order creation time, the first sort key among siblings
 * @property {TreeNode | null} parent
 * @property {boolean} placed whether it is in a list of kids (or the top level)
 * @property {TreeNode[]} kids in display order
 * @property {boolean} expanded
 * @property {number} depth set when flattened, as is i
 * @property {number} i its index among the rows shown
 * @property {number} fv the flattening that set i (older: not shown)
 * @property {number} pos its place among its siblings, from 1, kept by insert and detach
 */

// A row's template, cloned for each row element the window needs (a few
// dozen, whatever the run's size). The row's accessible name is set apart
// (see label), without the ticking duration.
const rowTemplate = h('div', { class: 'row', role: 'treeitem', tabindex: '-1', 'aria-selected': 'false' },
  h('span', { class: 'c-name' }, h('span', { class: 'twisty', 'aria-hidden': 'true' }), h('span', { class: 'v mono' })),
  h('span', { class: 'c-type' }),
  h('span', { class: 'c-phase' }, badge('UNSPECIFIED')),
  h('span', { class: 'c-att num' }),
  h('span', { class: 'c-cache' }),
  h('span', { class: 'c-dur num' }));

/** label is what assistive technology says for a row. */
function label(a) {
  const cache = cacheName(a.cacheStatus);
  return `${a.actionId.name}, ${phaseName(a.phase)}, attempt ${a.attempts ?? 0}${cache === '–' ? '' : `, cache ${cache}`}, ${a.taskType || 'no type'}`;
}

/**
 * ActionTree shows the actions as a tree (parent -> children). The model
 * is the nodes; what is shown is the flat list of the expanded tree in
 * order (rows), of which the VirtualList renders the window. A change from
 * the stream changes the model and asks for a render at the next frame,
 * which fills only the rows in the window.
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
    /** @type {Map<string, TreeNode>} */
    this.nodes = new Map();
    /** @type {TreeNode[]} the top level, in display order */
    this.tops = [];
    this.waiting = new Map(); // parent name -> names shown at the top until the parent arrives
    this.counts = new Map(); // phase -> number of actions
    this.active = new Set(); // names of unfinished actions, whose duration ticks
    this.rootName = null;
    /** @type {TreeNode[] | null} the rows shown, null when the structure changed since */
    this.flat = null;
    this.fv = 0;
    /** @type {TreeNode | null} the row in the tab order (roving tabindex) */
    this.focused = null;
    this.selected = null;
    /** @type {(node: TreeNode) => boolean} rows marked as matching the find box */
    this.marked = () => false;
    this.list = new VirtualList(root, {
      count: () => this.rows().length,
      keyAt: (i) => this.rows()[i].name,
      indexOf: (key) => this.indexOf(this.nodes.get(key)),
      make: () => /** @type {HTMLElement} */ (rowTemplate.cloneNode(true)),
      fill: (el, key) => this.fill(el, /** @type {TreeNode} */ (this.nodes.get(key))),
    });
    root.addEventListener('click', (ev) => this.onClick(ev));
    root.addEventListener('keydown', (ev) => this.onKey(ev));
    root.addEventListener('focusin', (ev) => {
      const node = this.nodeOfRow(ev.target);
      if (node) this.setFocusable(node);
    });
  }

  /** close stops following the page's scrolling (the page goes). */
  close() {
    this.list.close();
  }

  /** apply takes a batch of changes: name -> action, or null when it went away. */
  apply(changes) {
    /** @type {Map<string, {a: ActionEvent, span: ReturnType<typeof actionSpan>}>} */
    const added = new Map();
    for (const [name, a] of changes) {
      const node = this.nodes.get(name);
      if (a === null) {
        if (node) this.remove(node);
      } else if (node) {
        this.update(node, a);
      } else {
        added.set(name, { a, span: actionSpan(a) });
      }
    }
    // Parents before their children, whatever order the batch came in.
    const add = (name) => {
      const x = added.get(name);
      if (!x) return;
      added.delete(name);
      if (x.a.parentActionName) add(x.a.parentActionName);
      this.add(x.a, x.span);
    };
    // In display order, so that each insert is an append: the server sends
    // names in byte order (c10 before c2), the page shows c2 first.
    // Each time parsed once (the span's start), not in every comparison
    // (a page of 2,000 was some 44,000 parses).
    const keyed = [...added.values()];
    keyed.sort((x, y) => ((x.span.start || 0) - (y.span.start || 0)) || compareNames(x.a.actionId.name, y.a.actionId.name));
    for (const { a } of keyed) add(a.actionId.name);
    this.list.update();
    this.onChange();
  }

  /** @param {ActionEvent} a @param {ReturnType<typeof actionSpan>} span its span, worked out once */
  add(a, span = actionSpan(a)) {
    const name = a.actionId.name;
    /** @type {TreeNode} */
    const node = {
      name, a, span, order: span.start || 0, parent: null, placed: false, kids: [], expanded: true,
      depth: 0, i: -1, fv: -1, pos: 1,
    };
    this.nodes.set(name, node);
    this.count(a.phase, 1);
    if (!isTerminal(a.phase)) this.active.add(name);
    const parent = a.parentActionName ? this.nodes.get(a.parentActionName) || null : null;
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
    if (node.placed) this.detach(node);
    const kids = parent ? parent.kids : this.tops;
    let at = kids.length;
    while (at > 0 && compareNodes(node, kids[at - 1]) < 0) at--;
    // Where its row goes when it is a new last leaf: after the rows of the
    // sibling before it, or right after its parent's row.
    const row = at < kids.length || node.kids.length || !this.flat ? -1
      : at > 0 ? this.rowsEnd(kids[at - 1]) : parent ? parent.i + 1 : 0;
    kids.splice(at, 0, node);
    for (let j = at; j < kids.length; j++) kids[j].pos = j + 1;
    node.parent = parent;
    node.placed = true;
    this.placeRow(node, row);
  }

  // placeRow keeps the rows shown in step with an insert without walking
  // the tree again (a large run's actions arrive in slices, and each cost
  // a walk of every action at the next frame): a node under a parent whose
  // children are not shown changes no row, and a new last leaf whose row
  // goes at the end is appended; anything else is worked out again.
  /** @param {TreeNode} node @param {number} row its index when a new last leaf, else -1 */
  placeRow(node, row) {
    const flat = this.flat;
    if (!flat) return;
    const parent = node.parent;
    if (parent && (!parent.expanded || parent.fv !== this.fv)) return;
    if (row !== flat.length) {
      this.flat = null;
      return;
    }
    node.depth = parent ? parent.depth + 1 : 0;
    node.i = row;
    node.fv = this.fv;
    flat.push(node);
  }

  /** rowsEnd is the index after the rows of node's subtree, node shown. @param {TreeNode} node */
  rowsEnd(node) {
    let n = node;
    while (n.expanded && n.kids.length) n = n.kids[n.kids.length - 1];
    return n.i + 1;
  }

  detach(node) {
    const kids = node.parent ? node.parent.kids : this.tops;
    const at = kids.indexOf(node);
    if (at >= 0) kids.splice(at, 1);
    for (let j = Math.max(at, 0); j < kids.length; j++) kids[j].pos = j + 1;
    node.parent = null;
    node.placed = false;
    this.flat = null;
  }

  update(node, a) {
    const prev = node.a;
    node.a = a;
    node.span = actionSpan(a);
    if (prev.phase !== a.phase) {
      this.count(prev.phase, -1);
      this.count(a.phase, 1);
      if (isTerminal(a.phase)) this.active.delete(node.name);
      else this.active.add(node.name);
    }
    if (this.selected === node.name) this.onSelect(a);
  }

  count(phase, d) {
    const n = (this.counts.get(phase) || 0) + d;
    if (n > 0) this.counts.set(phase, n);
    else this.counts.delete(phase);
  }

  remove(node) {
    // Its children stay, at the top, until it comes back.
    for (const child of [...node.kids]) {
      this.wait(node.name, child.name);
      this.insert(null, child);
    }
    if (node.a.parentActionName) this.waiting.get(node.a.parentActionName)?.delete(node.name);
    const rows = this.rows();
    const at = this.indexOf(node);
    const next = this.focused === node ? (rows[at + 1] || rows[at - 1] || null) : null;
    this.detach(node);
    this.nodes.delete(node.name);
    this.count(node.a.phase, -1);
    this.active.delete(node.name);
    if (this.rootName === node.name) {
      this.rootName = [...this.nodes.values()].find((n) => !n.a.parentActionName)?.name || null;
    }
    if (this.focused === node) {
      this.focused = null;
      this.list.pinned.delete(node.name);
      const target = next || this.rows()[0];
      if (target) this.setFocusable(target);
    }
    if (this.selected === node.name) {
      this.selected = null;
      this.onSelect(null, node.name);
    }
  }

  /** rows is the flat list of what is shown: the tree in order, without
   * the subtrees of collapsed nodes. Worked out again only after the
   * structure changed (an add, a remove, an expand or collapse). */
  rows() {
    if (this.flat) return this.flat;
    const out = [];
    const fv = ++this.fv;
    const walk = (kids, depth) => {
      for (let j = 0; j < kids.length; j++) {
        const n = kids[j];
        n.depth = depth;
        n.i = out.length;
        n.fv = fv;
        out.push(n);
        if (n.expanded && n.kids.length) walk(n.kids, depth + 1);
      }
    };
    walk(this.tops, 0);
    this.flat = out;
    return out;
  }

  /** indexOf is node's row index, -1 when it is not shown (under a collapsed node). */
  indexOf(node) {
    if (!node) return -1;
    this.rows();
    return node.fv === this.fv ? node.i : -1;
  }

  /** inOrder is every action in the tree's order, collapsed or not (for find). */
  inOrder() {
    const out = [];
    const walk = (kids) => {
      for (const n of kids) {
        out.push(n);
        walk(n.kids);
      }
    };
    walk(this.tops);
    return out;
  }

  // fill writes node into a row element, touching only what changed: the
  // element may have shown another action before (it is reused).
  fill(el, node) {
    const a = node.a;
    const [nameCell, typeCell, phaseCell, attCell, cacheCell, durCell] = el.children;
    if (el.dataset.action !== node.name) {
      el.dataset.action = node.name;
      setText(/** @type {Element} */ (nameCell.lastElementChild), node.name);
    }
    setAttr(el, 'title', node.name);
    setAttr(el, 'data-phase', a.phase);
    updateBadge(/** @type {HTMLElement} */ (phaseCell.firstElementChild), a.phase);
    setText(typeCell, a.taskType || '–');
    setText(attCell, String(a.attempts ?? 0));
    setText(cacheCell, cacheName(a.cacheStatus));
    setText(durCell, spanDuration(node.span));
    setAttr(el, 'aria-label', label(a));
    setAttr(el, 'aria-level', String(node.depth + 1));
    setAttr(el, 'aria-posinset', String(node.pos));
    setAttr(el, 'aria-setsize', String((node.parent ? node.parent.kids : this.tops).length));
    setAttr(el, 'aria-expanded', node.kids.length ? String(node.expanded) : null);
    setAttr(el, 'aria-selected', String(this.selected === node.name));
    setAttr(el, 'tabindex', this.focused === node ? '0' : '-1');
    el.classList.toggle('match', this.marked(node));
    const depth = String(node.depth);
    if (el.style.getPropertyValue('--depth') !== depth) el.style.setProperty('--depth', depth);
  }

  /** tick moves the durations of the unfinished actions in the window on. */
  tick() {
    const now = Date.now();
    for (const [name, r] of this.list.rendered) {
      const node = this.nodes.get(name);
      if (node && this.active.has(name)) setText(/** @type {Element} */ (r.el.lastElementChild), spanDuration(node.span, now));
    }
  }

  /** refresh renders the window again (the marks of the find box changed). */
  refresh() {
    this.list.update();
  }

  nodeOfRow(el) {
    const row = el instanceof Element ? el.closest('.row') : null;
    return row instanceof HTMLElement ? this.nodes.get(row.dataset.action || '') || null : null;
  }

  /** row is the element of node's row, when it is rendered. */
  row(node) {
    return this.list.element(node.name);
  }

  setFocusable(node) {
    if (this.focused === node) return;
    const old = this.focused;
    if (old) this.list.pinned.delete(old.name);
    this.focused = node;
    // The focused row stays in the DOM when it scrolls out of the window:
    // the keyboard's place in the tree is kept, and Tab comes back to it.
    this.list.pinned.add(node.name);
    const oldRow = old && this.row(old);
    if (oldRow) oldRow.tabIndex = -1;
    const row = this.row(node);
    if (row) row.tabIndex = 0;
    this.list.update();
  }

  /** focus moves the keyboard to node's row, scrolling it into view. */
  focus(node, block = /** @type {'nearest' | 'center'} */ ('nearest')) {
    if (!node) return;
    this.setFocusable(node);
    const i = this.indexOf(node);
    if (i >= 0) this.list.scrollTo(i, block);
    const row = this.row(node);
    if (row) row.focus({ preventScroll: true });
  }

  setExpanded(node, open) {
    if (!node.kids.length || node.expanded === open) return;
    // Focus inside a subtree that closes goes to its parent row.
    let moved = false;
    if (!open && this.focused && this.isUnder(this.focused, node)) {
      const row = this.row(this.focused);
      moved = row !== null && row === document.activeElement;
      this.setFocusable(node);
    }
    node.expanded = open;
    this.flat = null;
    this.list.update();
    if (moved) this.focus(node);
  }

  isUnder(node, ancestor) {
    for (let p = node.parent; p; p = p.parent) if (p === ancestor) return true;
    return false;
  }

  expandAll(open) {
    for (const node of this.nodes.values()) if (node.kids.length) node.expanded = open;
    if (!open && this.focused) {
      let top = this.focused;
      while (top.parent) top = top.parent;
      this.setFocusable(top);
    }
    this.flat = null;
    this.list.update();
  }

  /** reveal expands node's ancestors, so that its row is shown. */
  reveal(node) {
    for (let p = node.parent; p; p = p.parent) {
      if (!p.expanded) {
        p.expanded = true;
        this.flat = null;
      }
    }
  }

  /** select shows an action in the detail panel. */
  select(name, { focus = false, reveal = false, block = /** @type {'nearest' | 'center'} */ ('nearest') } = {}) {
    const node = this.nodes.get(name);
    if (!node) return;
    if (reveal) this.reveal(node);
    if (this.selected !== name) {
      const old = this.selected && this.nodes.get(this.selected);
      const oldRow = old && this.row(old);
      if (oldRow) oldRow.setAttribute('aria-selected', 'false');
      this.selected = name;
    }
    if (focus) this.focus(node, block);
    else {
      this.setFocusable(node);
      if (reveal) this.list.scrollTo(this.indexOf(node), block);
    }
    const row = this.row(node);
    if (row) row.setAttribute('aria-selected', 'true');
    this.onSelect(node.a);
  }

  onClick(ev) {
    const node = this.nodeOfRow(ev.target);
    if (!node) return;
    if (ev.target.closest('.twisty') && node.kids.length) {
      this.setExpanded(node, !node.expanded);
      this.focus(node);
      return;
    }
    this.select(node.name, { focus: true });
  }

  onKey(ev) {
    const node = this.nodeOfRow(ev.target);
    if (!node || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    const hasKids = node.kids.length > 0;
    const rows = this.rows();
    const i = this.indexOf(node);
    let handled = true;
    switch (ev.key) {
      case 'ArrowDown': this.focus(rows[i + 1]); break;
      case 'ArrowUp': this.focus(rows[i - 1]); break;
      case 'ArrowRight':
        if (hasKids && !node.expanded) this.setExpanded(node, true);
        else if (hasKids) this.focus(node.kids[0]);
        break;
      case 'ArrowLeft':
        if (hasKids && node.expanded) this.setExpanded(node, false);
        else this.focus(node.parent);
        break;
      case 'Home': this.focus(rows[0]); break;
      case 'End': this.focus(rows[rows.length - 1]); break;
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
