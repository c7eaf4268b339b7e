// @ts-check
// The pipeline graph of the Stages page: one SVG for every edge under a
// list of absolutely placed nodes (stagenode.js), both sized from the
// layout (graph.js).
//
// Built for 600+ Stages (akuity/kargo #5133, #4396): changes are worked
// off in slices of a few milliseconds; a status change rewrites only the
// texts of its node that changed; the graph is laid out again only when
// its edges or members change, by pure computation on fixed node sizes, so
// nothing reads layout; new nodes go in over a few frames.
//
// The Warehouses come from two places: the names the Stages request
// Freight from, and the project's Warehouse stream (applyWarehouses),
// which says what each shows (state, newest Freight, last discovery) and
// brings in the Warehouses no Stage requests from yet, as Kargo's UI
// shows them. A name no Warehouse has is shown missing.
import { h, setAttr } from './dom.js';
import { ApiError, refreshWarehouse } from './api.js';
import { toast } from './dialog.js';
import { GRID, edgePath, layout } from './graph.js';
import { refreshPending, sources } from './kargo.js';
import { discText, fillNode, fillWarehouse, fromText, makeNode, makeWarehouse, promoText } from './stagenode.js';

/** @typedef {import('./types.js').Stage} Stage */
/** @typedef {import('./types.js').Warehouse} Warehouse */
/** @typedef {import('./stagenode.js').StageNode} StageNode */
/** @typedef {import('./stagenode.js').WarehouseNode} WarehouseNode */

const BUDGET = 8; // ms per slice of work
const MOUNT = 80; // new nodes put on the page per frame

export class Pipeline {
  /**
   * @param {string} project
   * @param {() => void} onWorked after a batch of changes is on the page
   */
  constructor(project, onWorked) {
    this.project = project;
    this.onWorked = onWorked;
    const svgHost = h('div');
    svgHost.innerHTML = '<svg class="edges" aria-hidden="true" focusable="false"></svg>';
    this.svg = /** @type {SVGSVGElement} */ (svgHost.firstChild);
    this.list = h('ul', { class: 'nodes', 'aria-label': `Stages of ${project}, by column from the Warehouses` });
    this.canvas = h('div', { class: 'graph', id: 'graph' }, this.svg, this.list);
    for (const [k, v] of Object.entries({ '--node-w': GRID.nodeW, '--wh-w': GRID.whW, '--node-h': GRID.nodeH, '--plain-h': GRID.plainH, '--wh-h': GRID.whH })) {
      this.canvas.style.setProperty(k, v + 'px');
    }
    /** @type {Map<string, StageNode>} stage name -> node */
    this.nodes = new Map();
    /** @type {Map<string, WarehouseNode>} warehouse name -> node */
    this.whs = new Map();
    /** @type {Map<string, Warehouse>} warehouse name -> the project's Warehouse */
    this.warehouses = new Map();
    this.whSynced = false; // the Warehouses are known: a name without one is missing
    /** @type {Set<string>} Warehouses whose refresh request is on its way */
    this.refreshing = new Set();
    this.closed = false;
    /** @type {Map<string, {el: SVGPathElement, d: string}>} "from>to" (node ids) -> edge */
    this.edges = new Map();
    this.nEdges = 0;
    /** @type {Map<string, number>} phase -> number of Stages */
    this.counts = new Map();
    this.query = '';
    /** @type {Map<string, Stage | null>} stage name -> Stage or null, not yet shown */
    this.queue = new Map();
    this.working = false;
    this.topo = false; // membership or edges changed: lay out again when done
    // A message, not a timer, to yield: not throttled in a background tab.
    this.yieldPort = new MessageChannel();
    this.yieldPort.port1.onmessage = () => this.work();
    /** @type {{fresh: HTMLElement[], before: (HTMLElement | null)[], next: number, edges: DocumentFragment, all?: boolean} | null} */
    this.mountQueue = null;
    this.mountFrame = 0;
    this.mountTimer = 0;
    this.laidOut = false; // once: the head counts the nodes from then on
    // Refresh on a Warehouse's node (one listener for them all).
    this.list.addEventListener('click', (ev) => {
      const b = /** @type {Element} */ (ev.target).closest('button.wn-refresh');
      const wn = b && b.closest('[data-warehouse]');
      if (wn) this.refreshWarehouse(/** @type {HTMLElement} */ (wn).dataset.warehouse || '');
    });
  }

  /** close stops the work to come (the page goes). */
  close() {
    this.closed = true;
    this.queue.clear();
    this.yieldPort.port1.close();
    cancelAnimationFrame(this.mountFrame);
    clearTimeout(this.mountTimer);
    this.mountQueue = null;
  }

  /** @param {string} phase @param {number} d */
  count(phase, d) {
    const n = (this.counts.get(phase) || 0) + d;
    if (n > 0) this.counts.set(phase, n);
    else this.counts.delete(phase);
  }

  /**
   * apply takes the stream's changes (once per frame, or the whole
   * snapshot at once). They are worked off in slices, yielding in between,
   * so that no task runs long however big the burst: 600 new Stages cost
   * no frame more than ~BUDGET plus one layout.
   * @param {Map<string, Stage | null>} changes
   */
  apply(changes) {
    for (const [name, s] of changes) this.queue.set(name, s);
    if (!this.working) {
      this.working = true;
      this.work();
    }
  }

  /**
   * applyWarehouses takes the Warehouse stream's changes. A Warehouse that
   * came or went lays the graph out again (it may be one no Stage
   * requests from); a status change rewrites its node only.
   * @param {Map<string, Warehouse | null>} changes
   */
  applyWarehouses(changes) {
    const now = Date.now();
    for (const [name, w] of changes) {
      const have = this.warehouses.get(name);
      if (w === null) {
        if (!have) continue;
        this.warehouses.delete(name);
        this.topo = true;
      } else {
        if (have && !newer(w, have)) continue; // a refresh's answer came first
        this.warehouses.set(name, w);
        if (!have) this.topo = true;
      }
      this.fillWh(name, now);
    }
    this.kick();
  }

  /** warehousesSynced: the Warehouses are known (after each snapshot):
   * a name no Warehouse has is missing from now. */
  warehousesSynced() {
    if (this.whSynced) return;
    this.whSynced = true;
    const now = Date.now();
    for (const name of this.whs.keys()) this.fillWh(name, now);
  }

  /** kick lays out again, when due and no work is under way to do it. */
  kick() {
    if (this.topo && !this.working) {
      this.working = true;
      this.work();
    }
  }

  /** @param {string} name @param {number} now */
  fillWh(name, now) {
    const wn = this.whs.get(name);
    if (!wn) return;
    const w = this.warehouses.get(name);
    fillWarehouse(wn, w, {
      project: this.project, synced: this.whSynced, now,
      busy: this.refreshing.has(name) || (!!w && refreshPending(w)),
    });
  }

  /**
   * refreshWarehouse asks the controller to discover now, and waits for it
   * (the node shows it busy meanwhile); the Warehouse it answers with is
   * shown at once, the stream's events to it after.
   * @param {string} name
   */
  async refreshWarehouse(name) {
    const w = this.warehouses.get(name);
    if (!w || this.refreshing.has(name) || refreshPending(w)) return;
    this.refreshing.add(name);
    this.fillWh(name, Date.now());
    try {
      const out = await refreshWarehouse(this.project, name, true);
      if (this.closed) return;
      if (out && out.metadata && this.warehouses.has(name)) this.applyWarehouses(new Map([[name, out]]));
    } catch (e) {
      if (!this.closed) toast(`Refresh of warehouse ${name} failed: ${e instanceof ApiError ? e.message : e}`);
    } finally {
      this.refreshing.delete(name);
      if (!this.closed) this.fillWh(name, Date.now());
    }
  }

  work() {
    const end = performance.now() + BUDGET;
    const now = Date.now();
    for (const [name, s] of this.queue) {
      this.queue.delete(name);
      this.change(name, s, now);
      if (performance.now() > end) break;
    }
    if (this.queue.size) {
      this.yieldPort.port2.postMessage(0);
      return;
    }
    this.working = false;
    if (this.topo) {
      this.topo = false;
      this.relayout();
    }
    this.onWorked();
  }

  /** @param {string} name @param {Stage | null} s @param {number} now */
  change(name, s, now) {
    let node = this.nodes.get(name);
    if (s === null) {
      if (node) {
        node.el.remove();
        if (node.phase) this.count(node.phase, -1);
        this.nodes.delete(name);
        this.topo = true;
      }
      return;
    }
    if (!node) {
      node = makeNode(this.project, name);
      if (this.query) node.el.classList.toggle('dim', !name.includes(this.query));
      this.nodes.set(name, node);
      this.topo = true;
    }
    const src = sources(s);
    if (node.key !== src.key) {
      node.key = src.key;
      node.src = src;
      this.topo = true;
      node.from.textContent = fromText(src);
    }
    fillNode(node, s, now, (phase, d) => this.count(phase, d));
  }

  // relayout places every node and redraws the edges: only when a Stage
  // came, went or changed what it takes Freight from.
  relayout() {
    const graph = new Map();
    for (const [name, n] of this.nodes) graph.set(name, n.src);
    const L = layout(graph, [...this.warehouses.keys()]);
    this.laidOut = true;
    this.placeWarehouses(L.warehouses);
    const els = [];
    for (const id of L.order) {
      const n = id.charCodeAt(0) === 119 /* w */ ? this.whs.get(id.slice(2)) : this.nodes.get(id.slice(2));
      const p = L.pos.get(id);
      const t = `translate(${p.x}px,${p.y}px)`;
      if (n.t !== t) {
        n.el.style.transform = t;
        n.t = t;
      }
      els.push(n.el);
    }
    const { fresh, before } = this.order(els);
    this.canvas.style.width = L.width + 'px';
    this.canvas.style.height = L.height + 'px';
    this.svg.setAttribute('width', String(L.width));
    this.svg.setAttribute('height', String(L.height));
    const newEdges = this.drawEdges(L);
    this.mountQueue = { fresh, before, next: 0, edges: newEdges };
    this.mount();
  }

  /** @param {string[]} wanted */
  placeWarehouses(wanted) {
    const keep = new Set(wanted);
    for (const [w, wn] of this.whs) {
      if (!keep.has(w)) {
        wn.el.remove();
        this.whs.delete(w);
      }
    }
    const now = Date.now();
    for (const w of wanted) {
      if (this.whs.has(w)) continue;
      const wn = makeWarehouse(w);
      if (this.query) wn.el.classList.add('dim');
      this.whs.set(w, wn);
      this.fillWh(w, now);
    }
  }

  /**
   * order puts the DOM in reading order (column by column), for the
   * keyboard and screen readers. Nodes on the page already: only what is
   * out of place moves. New nodes go in over the next frames (mount): it
   * says which, and before which placed node each goes.
   * @param {HTMLElement[]} els
   */
  order(els) {
    const list = this.list;
    const placed = [];
    const fresh = [];
    const before = []; // for each new node, the placed node it goes before
    let ref = null;
    for (let k = els.length - 1; k >= 0; k--) {
      if (els[k].parentNode === list) {
        ref = els[k];
      } else {
        fresh.push(els[k]);
        before.push(ref);
      }
    }
    for (const el of els) if (el.parentNode === list) placed.push(el);
    let i = 0;
    for (let c = list.firstElementChild; c && i < placed.length && c === placed[i]; c = c.nextElementSibling) i++;
    if (i < placed.length) list.append(...placed.slice(i));
    fresh.reverse();
    before.reverse();
    return { fresh, before };
  }

  /**
   * drawEdges keeps a path per edge, by its ends: only those that appear,
   * go or move change. New ones are returned, to go in after the new nodes.
   * @param {{edges: [string, string][], pos: Map<string, {x: number, y: number}>}} L
   */
  drawEdges(L) {
    const seen = new Set();
    const newEdges = document.createDocumentFragment();
    // Edges made by a layout whose nodes were still going in.
    if (this.mountQueue) newEdges.append(this.mountQueue.edges);
    for (const [a, b] of L.edges) {
      const key = a + '>' + b;
      seen.add(key);
      const d = edgePath(L.pos.get(a), L.pos.get(b));
      let e = this.edges.get(key);
      if (!e) {
        const el = /** @type {SVGPathElement} */ (document.createElementNS(this.svg.namespaceURI, 'path'));
        el.setAttribute('class', a.charCodeAt(0) === 119 ? 'e-wh' : 'e-st');
        el.setAttribute('data-from', a);
        el.setAttribute('data-to', b);
        this.edges.set(key, (e = { el, d: '' }));
        newEdges.append(el);
      }
      if (e.d !== d) {
        e.el.setAttribute('d', d);
        e.d = d;
      }
    }
    for (const [key, e] of this.edges) {
      if (!seen.has(key)) {
        e.el.remove();
        this.edges.delete(key);
      }
    }
    this.nEdges = L.edges.length;
    return newEdges;
  }

  // mount puts new nodes on the page, MOUNT a frame, then new edges in a
  // frame of their own: style and layout of 600 new nodes and their edges
  // in one frame would hold it for a few hundred ms on a slow machine. A
  // hidden tab, which renders no frames, takes them all at once.
  mount() {
    cancelAnimationFrame(this.mountFrame);
    clearTimeout(this.mountTimer);
    this.mountFrame = 0;
    const q = this.mountQueue;
    if (!q) return;
    // All at once: in a hidden tab (no frames to spread them over), when
    // asked (the tab came back), and when there are few.
    const all = document.hidden || q.all || q.fresh.length - q.next <= MOUNT / 2;
    if (q.next < q.fresh.length) {
      const end = all ? q.fresh.length : Math.min(q.fresh.length, q.next + MOUNT);
      for (; q.next < end; q.next++) {
        const el = q.fresh[q.next];
        if (el.parentNode === this.list) continue;
        const ref = q.before[q.next];
        this.list.insertBefore(el, ref && ref.parentNode === this.list ? ref : null);
      }
      if (!all && (q.next < q.fresh.length || q.edges.firstChild)) {
        // The timer: where frames do not run (a page just thawed, or in
        // the background), the rest still goes in.
        this.mountFrame = requestAnimationFrame(() => this.mount());
        this.mountTimer = setTimeout(() => this.mount(), 100);
        return;
      }
    }
    this.svg.append(q.edges);
    this.mountQueue = null;
    setAttr(this.canvas, 'data-edges', String(this.nEdges));
  }

  /** mountAll puts what is still to go in on the page at once. */
  mountAll() {
    if (!this.mountQueue) return;
    this.mountQueue.all = true;
    this.mount();
  }

  /**
   * find dims the Stages whose name does not have the text; it returns
   * how many match and the first (by name).
   * @param {string} query
   */
  find(query) {
    this.query = query;
    let n = 0;
    /** @type {StageNode | null} */
    let first = null;
    for (const node of this.nodes.values()) {
      const hit = !query || node.name.includes(query);
      node.el.classList.toggle('dim', !hit);
      if (hit) {
        n++;
        if (!first || node.name < first.name) first = node;
      }
    }
    for (const wn of this.whs.values()) wn.el.classList.toggle('dim', !!query);
    return { n, first };
  }

  /** tick moves "5m ago" on. */
  tick() {
    const now = Date.now();
    for (const node of this.nodes.values()) if (node.promoAt) promoText(node, now);
    for (const wn of this.whs.values()) if (wn.discAt) discText(wn, now);
  }
}

/** newer: a is the same object as b at a later (or the same) version,
 * or another object of the name. @param {Warehouse} a @param {Warehouse} b */
function newer(a, b) {
  const x = Number(a.metadata && a.metadata.resourceVersion);
  const y = Number(b.metadata && b.metadata.resourceVersion);
  if (!Number.isFinite(x) || !Number.isFinite(y)) return true;
  if (a.metadata && b.metadata && a.metadata.uid !== b.metadata.uid) return true;
  return x >= y;
}
