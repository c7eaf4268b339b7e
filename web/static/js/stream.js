// @ts-check
// The streams (server-sent events), the one module that opens an
// EventSource.
//
// LiveCollection keeps a keyed collection in step with a server-sent event
// stream (see "SSE contract" in the design): a snapshot, `synced`, then live
// changes; after `reset`, a fresh snapshot replaces everything.
//
// A snapshot is collected aside and applied whole on `synced`, so the page
// never shows a half-built state as if it were the real one. Live changes
// are coalesced per key and handed to the view once per animation frame.
// A page of a large collection asks for a window (the run page): the
// snapshot is its first items, and the rest comes from the list operation,
// a page at a time, each handed to the view in slices, a task each (a run
// of 50,000 in one snapshot held the main thread for seconds before its
// first row; a page of 2,000 in one task, 50 to 140 ms).
import { checkSession } from './api.js';
import { cancelFrame, onFrame, yieldTask } from './frame.js';

/** @typedef {import('./types.js').StreamEvents} StreamEvents */
/** @typedef {import('./scope.js').Scope} Scope */

/** openEventSource opens a stream of the API (the session cookie goes
 * with it). @param {string} url */
export function openEventSource(url) {
  return new EventSource(url);
}

/** syncedContinue is the token a windowed snapshot's `synced` carries
 * for the rest, or "". @param {MessageEvent} ev */
function syncedContinue(ev) {
  try {
    const data = JSON.parse(ev.data);
    return typeof data.continue === 'string' ? data.continue : '';
  } catch {
    return '';
  }
}

// SLICE is how many items of a page go to the view in one task: a few
// milliseconds of the tree's work, so that input and frames are never
// kept waiting long while a large collection comes in.
const SLICE = 250;

/** version is an item's resourceVersion as a number (0 without one):
 * etcd's revisions rise across the store. @param {any} item */
function version(item) {
  return Number(item && item.resourceVersion) || 0;
}

/** Connection states, shown by the indicator. */
export const State = {
  CONNECTING: 'connecting',
  SYNCING: 'syncing',
  LIVE: 'live',
  RECONNECTING: 'reconnecting',
};

/**
 * The options of a LiveCollection of the items of event E.
 * @template {keyof StreamEvents} E
 * @typedef {object} LiveOptions
 * @property {string} url the stream
 * @property {E} event the item event name ("action", "run")
 * @property {(item: StreamEvents[E]) => string} key
 * @property {(item: StreamEvents[E]) => boolean} [deleted] whether an item event removes it
 * @property {(changes: Map<string, StreamEvents[E] | null>) => void} apply
 *   gets the changes since the last call: key -> item, or null for removed
 * @property {() => void} [onSynced] the state is complete (after each `synced`)
 * @property {number} [window] ask the stream for a first view of at most
 *   this many items; the rest comes from `rest`, page by page
 * @property {(after: string) => Promise<{items: StreamEvents[E][], continue?: string}>} [rest]
 *   the page after a token (the list operation of the stream's items)
 * @property {(state: string) => void} onState
 */

/** @template {keyof StreamEvents} E */
export class LiveCollection {
  /** @param {LiveOptions<E>} o */
  constructor(o) {
    this.o = o;
    /** @type {Map<string, StreamEvents[E]>} */
    this.items = new Map();
    /** @type {Map<string, StreamEvents[E]> | null} */
    this.staging = null; // a Map while a snapshot arrives
    /** @type {Map<string, StreamEvents[E] | null>} */
    this.pending = new Map();
    this.lastId = '';
    this.generation = 0; // a new snapshot stops the paging of the last
    this.synced = false;
    /** @type {EventSource | null} */
    this.es = null;
    /** @type {string | undefined} */
    this.state = undefined;
    this.retryTimer = 0;
    this.backoff = 1000;
    this.flushNext = () => this.flush();
    this.stopped = false;
  }

  start() {
    this.connect();
  }

  /** stop closes the stream for good, and forgets what is pending. */
  stop() {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    cancelFrame(this.flushNext);
    if (this.es) this.es.close();
  }

  connect() {
    if (this.stopped) return;
    // A new EventSource cannot send Last-Event-ID itself: the query
    // parameter carries the cursor so the server resumes or resets.
    const q = new URLSearchParams();
    if (this.o.window) q.set('window', String(this.o.window));
    if (this.lastId) q.set('lastEventId', this.lastId);
    const url = q.size ? `${this.o.url}?${q}` : this.o.url;
    const es = openEventSource(url);
    this.es = es;
    this.setState(this.synced ? State.RECONNECTING : State.CONNECTING);
    es.addEventListener('open', () => {
      // Without a cursor the server sends a plain snapshot (no reset first).
      if (!this.lastId) {
        this.generation++;
        this.staging = new Map();
      }
      this.setState(State.SYNCING);
    });
    es.addEventListener('error', () => {
      if (this.stopped) return;
      this.setState(State.RECONNECTING);
      if (es.readyState === EventSource.CLOSED) {
        // The browser gave up (an HTTP error or a non-stream answer, as
        // while the server starts): try again ourselves, a little later
        // each time. A session that ended takes the page to the login.
        clearTimeout(this.retryTimer);
        this.retryTimer = setTimeout(() => this.connect(), this.backoff);
        this.backoff = Math.min(this.backoff * 2, 15000);
        checkSession();
      }
      // CONNECTING: the browser reconnects by itself, with Last-Event-ID.
    });
    es.addEventListener(this.o.event, (ev) => this.onItem(ev));
    es.addEventListener('reset', (ev) => {
      this.track(ev);
      this.generation++;
      this.staging = new Map();
      this.setState(State.SYNCING);
    });
    es.addEventListener('synced', (ev) => {
      this.track(ev);
      this.backoff = 1000;
      const snapshot = this.staging !== null;
      if (snapshot) this.commit();
      this.synced = true;
      this.flush(snapshot);
      if (this.o.onSynced) this.o.onSynced();
      performance.mark('taskactions:synced');
      const more = snapshot ? syncedContinue(ev) : '';
      if (more) this.pageOn(more, this.generation);
      this.setState(State.LIVE);
    });
  }

  /** @param {MessageEvent} ev */
  track(ev) {
    if (ev.lastEventId) this.lastId = ev.lastEventId;
  }

  /** @param {MessageEvent} ev */
  onItem(ev) {
    this.track(ev);
    let item;
    try {
      item = JSON.parse(ev.data);
    } catch {
      return; // not ours to show; the next snapshot repairs it
    }
    const key = this.o.key(item);
    const gone = this.o.deleted ? this.o.deleted(item) : false;
    if (this.staging) {
      if (gone) this.staging.delete(key);
      else this.staging.set(key, item);
      return;
    }
    if (gone) {
      if (!this.items.has(key)) return;
      this.items.delete(key);
      this.pending.set(key, null);
    } else {
      this.items.set(key, item);
      this.pending.set(key, item);
    }
    this.schedule();
  }

  // commit replaces the state with the completed snapshot: the view gets
  // what changed, removed keys included.
  commit() {
    const next = this.staging;
    this.staging = null;
    if (!next) return;
    for (const key of this.items.keys()) {
      if (!next.has(key)) this.pending.set(key, null);
    }
    for (const [key, item] of next) this.pending.set(key, item);
    this.items = next;
  }

  schedule() {
    // One flush a frame batches a burst of events into one DOM update, and
    // what the view asks for then (the list's render) is done in the same
    // frame (onFrame), so a change is painted in the frame after it came.
    onFrame(this.flushNext);
  }

  flush(snapshot = false) {
    if (this.stopped) return;
    cancelFrame(this.flushNext);
    if (!this.pending.size) return;
    const changes = this.pending;
    this.pending = new Map();
    const t0 = performance.now();
    this.o.apply(changes);
    // A user timing per snapshot (once per connection), seen in DevTools'
    // performance panel and by the tests.
    if (snapshot) performance.measure('taskactions:snapshot', { start: t0, detail: changes.size });
  }

  // pageOn takes the rest of a windowed snapshot from the list, page by
  // page, and hands each to the view in slices of a task each; a live
  // event that came first (a higher resourceVersion) stays. A new
  // snapshot stops it.
  /** @param {string} after @param {number} generation */
  async pageOn(after, generation) {
    const rest = this.o.rest;
    if (!rest) return;
    const current = () => !this.stopped && generation === this.generation;
    /** @param {string} token */
    const ask = (token) => {
      const p = rest(token);
      p.catch(() => {}); // seen when awaited; not "unhandled" if never awaited (stopped)
      return p;
    };
    for (let next = ask(after); next;) {
      let page;
      try {
        page = await next;
      } catch {
        return; // the next snapshot (reconnect, reset) brings it all
      }
      if (!current()) return;
      // The next page is asked for at once: the server reads and sends it
      // while this one goes in.
      next = page.continue ? ask(page.continue) : null;
      const items = page.items;
      for (let at = 0; at < items.length; at += SLICE) {
        // A task for each slice: the page's parse (response.json()) ended
        // the last, and the tree's work for a whole page took 50 ms and more.
        await yieldTask();
        if (!current()) return;
        for (let j = at; j < Math.min(at + SLICE, items.length); j++) {
          const item = items[j];
          const key = this.o.key(item);
          const have = this.items.get(key);
          if (have && version(have) >= version(item)) continue;
          this.items.set(key, item);
          this.pending.set(key, item);
        }
        this.flush();
      }
      performance.mark('taskactions:page', { detail: items.length });
    }
  }

  /** @param {string} state */
  setState(state) {
    if (this.state === state) return;
    this.state = state;
    this.o.onState(state);
  }
}

/**
 * keepCurrent makes a page current again when it comes back: a tab that
 * was hidden, frozen or kept in the back-forward cache. The stream stays
 * open in the background (events are taken in, coalesced per Stage, and
 * applied by a timer since frames do not run there); on return whatever
 * is pending is applied at once, and a stream that was closed is opened
 * again from the last event id (the server resumes, or resets with a fresh
 * snapshot). Kargo's own UI closed its watch when hidden and showed stale
 * Stages after (akuity/kargo #2094, #2384). Every live page uses it.
 */
/**
 * @param {Scope} scope the page's: the listeners go with it
 * @param {LiveCollection<any>} live
 * @param {() => void} [then] after the page was made current
 */
export function keepCurrent(scope, live, then) {
  const resume = () => {
    // (Not started, as for a Stage that is not there: nothing to resume.)
    if (document.visibilityState !== 'visible' || live.stopped || !live.es) return;
    if (live.es.readyState === EventSource.CLOSED) {
      clearTimeout(live.retryTimer);
      live.connect();
    } else {
      live.flush();
    }
    if (then) then();
  };
  scope.listen(document, 'visibilitychange', resume);
  scope.listen(document, 'resume', resume); // after a freeze
  // The back-forward cache: a page kept there would hold its stream's
  // connection (a browser has six per server over HTTP/1.1, and a few
  // cached pages used them all up); it closes the stream when it goes and
  // resumes from the last event id when it comes back.
  scope.listen(window, 'pagehide', (ev) => {
    if (!ev.persisted || !live.es) return;
    clearTimeout(live.retryTimer);
    live.es.close();
  });
  scope.listen(window, 'pageshow', (ev) => { if (ev.persisted) resume(); });
}

/**
 * live makes a page's LiveCollection: stopped with the page, and made
 * current when the page comes back (keepCurrent). Start it when the page
 * is ready for its events.
 * @template {keyof StreamEvents} E
 * @param {Scope} scope
 * @param {LiveOptions<E>} o
 * @param {() => void} [then] after the page was made current
 * @returns {LiveCollection<E>}
 */
export function live(scope, o, then) {
  const c = new LiveCollection(o);
  if (scope.closed) c.stopped = true; // the page went before it was made
  scope.add(() => c.stop());
  keepCurrent(scope, c, then);
  return c;
}

/**
 * connStates combines the states of a page's streams for the header: the
 * page is live when all are.
 * @param {(state: string) => void} setConn
 * @returns {(key: string) => (state: string) => void}
 */
export function connStates(setConn) {
  /** @type {Map<string, string>} */
  const states = new Map();
  const order = ['reconnecting', 'connecting', 'syncing', 'live'];
  return (key) => (state) => {
    states.set(key, state);
    const all = [...states.values()];
    setConn(order.find((s) => all.includes(s)) || state);
  };
}
