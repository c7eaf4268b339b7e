// @ts-check
// Every URL the dashboard uses, defined once: its pages (the server
// answers each with index.html; app.js routes them) and the API's streams.
// The API's other paths are api.js's.

const enc = encodeURIComponent;

/** BASE is where the API is. */
export const BASE = '/api/v1';

/** Page URLs. */
export const pages = {
  home: () => '/',
  /** @param {string} p @param {string} d */
  runs: (p, d) => `/projects/${enc(p)}/domains/${enc(d)}`,
  /** @param {string} p @param {string} d @param {string} r */
  run: (p, d, r) => `/projects/${enc(p)}/domains/${enc(d)}/runs/${enc(r)}`,
  /** @param {string} p */
  stages: (p) => `/projects/${enc(p)}/stages`,
  /** @param {string} p @param {string} s */
  stage: (p, s) => `/projects/${enc(p)}/stages/${enc(s)}`,
  /** @param {string} p @param {string} n */
  promotion: (p, n) => `/projects/${enc(p)}/promotions/${enc(n)}`,
};

/** Stream URLs (server-sent events). */
export const streams = {
  projects: () => `${BASE}/project-events`,
  /** @param {string} p @param {string} d */
  runs: (p, d) => `${BASE}${pages.runs(p, d)}/events`,
  /** @param {string} p @param {string} d @param {string} r */
  run: (p, d, r) => `${BASE}${pages.run(p, d, r)}/events`,
  /** The project's is not under /stages/, where it would be the stream of
   * a Stage named "events". @param {string} p */
  stages: (p) => `${BASE}/projects/${enc(p)}/stage-events`,
  /** @param {string} p @param {string} s */
  stage: (p, s) => `${BASE}${pages.stage(p, s)}/events`,
  /** The project's Warehouses (beside stage-events, for the same
   * reason). @param {string} p */
  warehouses: (p) => `${BASE}/projects/${enc(p)}/warehouse-events`,
  /** @param {string} p @param {string} s */
  stagePromotions: (p, s) => `${BASE}${pages.stage(p, s)}/promotions/events`,
};

/**
 * logURL is an attempt's log (plain text, with Range); with events, its
 * stream.
 * @param {{project: string, domain: string, run: string, action: string}} id
 * @param {number} attempt
 * @param {string} stream stdout or stderr
 * @param {boolean} events
 */
export function logURL(id, attempt, stream, events) {
  return `${BASE}${pages.run(id.project, id.domain, id.run)}/actions/${enc(id.action)}/logs${events ? '/events' : ''}?attempt=${attempt}&stream=${stream}`;
}
