// @ts-check
// The layout of a project's pipeline: Warehouses on the left (those the
// Stages request Freight from, and those no Stage requests from yet), each
// Stage in the column of its depth (the longest path from a Warehouse),
// rows within a column. Pure computation on names, O(V + E + V log V): no DOM, no
// reading of layout, so the page can place 600 nodes without measuring any.

/** Sizes of the grid, in CSS pixels; the page's nodes are drawn this big. */
export const GRID = {
  nodeW: 236, // a Stage node's width
  whW: 196, // a Warehouse's width (the first column)
  nodeH: 112, // a Stage node's height (its slot)
  plainH: 72, // a control-flow Stage's box, centred in its slot
  whH: 100, // a Warehouse's box, centred in its slot
  gapX: 72, // between columns: room for the edges
  gapY: 16, // between rows
  pad: 16, // around the whole graph
};

/** Node ids: a Warehouse and a Stage may share a name. */
export const whId = (name) => 'w:' + name;
export const stageId = (name) => 's:' + name;

const byName = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * layout places the graph.
 * @param {Map<string, {direct: string[], up: string[]}>} stages
 *   stage name -> the Warehouses it takes Freight from directly, and the
 *   Stages it takes Freight from
 * @param {Iterable<string>} [known] the project's Warehouses: those no
 *   Stage requests from are shown too
 * @returns {{pos: Map<string, {x: number, y: number, w: number, col: number, row: number}>,
 *   order: string[], edges: [string, string][], warehouses: string[],
 *   width: number, height: number}}
 *   node id -> position (top left of the slot); ids in column then row
 *   order (reading order); edges as [from id, to id]
 */
export function layout(stages, known = []) {
  // Warehouses, and the stage -> stage edges between Stages that exist.
  const warehouses = new Set(known);
  const indeg = new Map();
  const down = new Map(); // upstream name -> downstream names
  const ups = new Map(); // name -> existing upstream names (deduplicated)
  for (const [name, s] of stages) {
    for (const w of s.direct) warehouses.add(w);
    indeg.set(name, 0);
  }
  for (const [name, s] of stages) {
    const seen = new Set();
    for (const u of s.up) {
      if (u === name || seen.has(u) || !stages.has(u)) continue;
      seen.add(u);
      indeg.set(name, indeg.get(name) + 1);
      let d = down.get(u);
      if (!d) down.set(u, (d = []));
      d.push(name);
    }
    ups.set(name, [...seen]);
  }

  // Longest path by Kahn's algorithm: a Stage is one column right of its
  // deepest upstream Stage, column 1 at least (next to the Warehouses).
  const depth = new Map();
  const queue = [];
  for (const [name, n] of indeg) {
    if (n === 0) {
      queue.push(name);
      depth.set(name, 1);
    }
  }
  const drain = (from) => {
    for (let i = from; i < queue.length; i++) {
      const u = queue[i];
      const du = depth.get(u);
      for (const v of down.get(u) || []) {
        const n = indeg.get(v) - 1;
        if (n < 0) continue; // placed already: the edge that closes a cycle
        if ((depth.get(v) || 0) < du + 1) depth.set(v, du + 1);
        indeg.set(v, n);
        if (n === 0) queue.push(v);
      }
    }
  };
  drain(0);
  // A cycle (Kargo does not forbid one): it is broken at its first Stage by
  // name, which goes right of what already leads into it; then on as before.
  if (queue.length < stages.size) {
    const left = [...stages.keys()].filter((n) => indeg.get(n) > 0).sort(byName);
    for (const name of left) {
      if (indeg.get(name) <= 0) continue; // placed since
      indeg.set(name, 0);
      if (!depth.has(name)) depth.set(name, 1);
      const from = queue.length;
      queue.push(name);
      drain(from);
    }
  }

  // Columns: Warehouses first (when there are any).
  const shift = warehouses.size ? 0 : -1;
  const cols = [];
  const put = (c, id) => (cols[c] || (cols[c] = [])).push(id);
  const whs = [...warehouses].sort(byName);
  for (const w of whs) put(0, whId(w));
  for (const [name, d] of depth) put(d + shift, stageId(name));

  // Rows: column by column, each node level with the mean row of what
  // feeds it from the nearest column (a chain stays on one line) or below
  // the node above it,
  // whichever is lower; the order within a column follows the same mean
  // (the barycentre heuristic: few crossings, one sort per column). Once
  // the first column of Stages is placed, each Warehouse moves down to its
  // first Stage, so that its edges fan out downwards, not across others.
  const row = new Map();
  const preds = (id) => {
    const name = id.slice(2);
    const s = stages.get(name);
    const out = [];
    for (const w of s.direct) out.push(whId(w));
    for (const u of ups.get(name)) out.push(stageId(u));
    return out;
  };
  let rows = 0;
  for (let c = 0; c < cols.length; c++) {
    const col = cols[c] || (cols[c] = []);
    if (c === 0 && shift === 0) {
      col.forEach((id, i) => row.set(id, i));
      continue;
    }
    // What feeds a node from the nearest column decides its row (a Stage
    // that also takes Freight from far back keeps its chain straight).
    const want = new Map();
    for (const id of col) {
      let sum = 0;
      let n = 0;
      let near = -1;
      for (const p of preds(id)) {
        const r = row.get(p);
        if (r === undefined) continue;
        const c = p.charCodeAt(0) === 119 ? 0 : depth.get(p.slice(2)) + shift;
        if (c > near) {
          near = c;
          sum = 0;
          n = 0;
        }
        if (c === near) {
          sum += r;
          n++;
        }
      }
      want.set(id, n ? sum / n : Infinity);
    }
    col.sort((a, b) => (want.get(a) - want.get(b)) || byName(a, b));
    let next = 0;
    for (const id of col) {
      const w = want.get(id);
      const r = Math.max(next, Number.isFinite(w) ? Math.round(w) : next);
      row.set(id, r);
      next = r + 1;
    }
    rows = Math.max(rows, next);
    if (c === 1 && shift === 0) {
      const first = new Map();
      for (const id of col) {
        for (const p of preds(id)) if (p.charCodeAt(0) === 119 && !first.has(p)) first.set(p, row.get(id));
      }
      next = 0;
      for (const id of cols[0]) {
        const r = Math.max(next, first.get(id) ?? next);
        row.set(id, r);
        next = r + 1;
      }
      rows = Math.max(rows, next);
    }
  }
  if (cols.length === 1) rows = cols[0].length;

  // Columns are as wide as a Stage node, the Warehouses' narrower.
  const whCol = shift === 0;
  const colX = (c) => GRID.pad + c * (GRID.nodeW + GRID.gapX) - (whCol && c > 0 ? GRID.nodeW - GRID.whW : 0);
  const pos = new Map();
  const order = [];
  for (let c = 0; c < cols.length; c++) {
    for (const id of cols[c]) {
      const r = row.get(id);
      pos.set(id, { col: c, row: r, x: colX(c), w: whCol && c === 0 ? GRID.whW : GRID.nodeW, y: GRID.pad + r * (GRID.nodeH + GRID.gapY) });
      order.push(id);
    }
  }

  /** @type {[string, string][]} */
  const edges = [];
  for (const [name, s] of stages) {
    const to = stageId(name);
    for (const w of new Set(s.direct)) edges.push([whId(w), to]);
    for (const u of ups.get(name)) edges.push([stageId(u), to]);
  }

  const ncols = cols.length;
  return {
    pos, order, edges, warehouses: whs,
    width: ncols ? colX(ncols - 1) + GRID.nodeW + GRID.pad : 0,
    height: rows ? GRID.pad * 2 + rows * GRID.nodeH + (rows - 1) * GRID.gapY : 0,
  };
}

/**
 * edgePath is the SVG path of an edge: from the right middle of one slot
 * to the left middle of the other, square with rounded corners, turning
 * half a gap before the target. Edges that share a source or a target
 * share their vertical run, so a Warehouse feeding 200 Stages draws one
 * trunk, not 200 curves across each other.
 */
export function edgePath(from, to) {
  const x1 = from.x + from.w;
  const y1 = from.y + GRID.nodeH / 2;
  const x2 = to.x;
  const y2 = to.y + GRID.nodeH / 2;
  const dy = y2 - y1;
  if (Math.abs(dy) < 1) return `M${x1} ${y1}H${x2}`;
  const xt = x2 - GRID.gapX / 2;
  const r = Math.min(10, Math.abs(dy) / 2);
  const s = Math.sign(dy);
  return `M${x1} ${y1}H${xt - r}Q${xt} ${y1} ${xt} ${y1 + s * r}V${y2 - s * r}Q${xt} ${y2} ${xt + r} ${y2}H${x2}`;
}
