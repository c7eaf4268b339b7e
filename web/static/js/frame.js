// @ts-check
// The main thread's turns, shared by the modules that change a page as
// data comes in (the streams, the virtual list, the run page).
//
// onFrame: one queue of work for the next animation frame. A
// requestAnimationFrame asked for inside a frame's callback runs a frame
// later, so when the stream's flush (in a frame) asked the list for a
// render with its own requestAnimationFrame, a change was painted two
// frames after it came. Work queued here while the frame's work runs runs
// in that same frame.
//
// yieldTask: a pause that lets the browser paint and take input between
// slices of a long piece of work.

/** @type {Set<() => void>} */
const queue = new Set();
let raf = 0;
let timer = 0;
let running = false;

/**
 * onFrame runs cb at the next animation frame, or in this one when
 * called from its work. Asked for again before it runs, cb runs once.
 * @param {() => void} cb
 */
export function onFrame(cb) {
  queue.add(cb);
  if (running || raf) return;
  raf = requestAnimationFrame(run);
  // Frames do not run in a background tab: the timer keeps the pages
  // current there too (for a tab that comes back, and for tests).
  timer = setTimeout(run, 200);
}

/** cancelFrame takes cb out of the queue (its owner went). @param {() => void} cb */
export function cancelFrame(cb) {
  queue.delete(cb);
}

function run() {
  cancelAnimationFrame(raf);
  clearTimeout(timer);
  raf = 0;
  running = true;
  /** @type {Set<() => void>} */
  const ran = new Set();
  try {
    // A Set's iteration reaches what is added while it goes on. Work that
    // asks for itself again waits for the next frame, so a frame ends.
    for (const cb of queue) {
      if (ran.has(cb)) continue;
      queue.delete(cb);
      ran.add(cb);
      cb();
    }
  } finally {
    running = false;
    if (queue.size) {
      raf = requestAnimationFrame(run);
      timer = setTimeout(run, 200);
    }
  }
}

/** @type {{yield: () => Promise<void>} | undefined} */
const scheduler = /** @type {any} */ (globalThis).scheduler;
const channel = new MessageChannel();
/** @type {(() => void)[]} */
const waiting = [];
channel.port1.onmessage = () => {
  const go = waiting.shift();
  if (go) go();
};

/**
 * yieldTask ends the current task and resumes in a new one: input,
 * rendering and other tasks get their turn in between.
 * scheduler.yield() resumes ahead of other tasks of its kind; without it,
 * a message to ourselves (a timer would be clamped to 4 ms once nested).
 * @returns {Promise<void>}
 */
export function yieldTask() {
  if (scheduler && typeof scheduler.yield === 'function') return scheduler.yield();
  return new Promise((resolve) => {
    waiting.push(resolve);
    channel.port2.postMessage(0);
  });
}
