// @ts-check
// The HTTP API (api/openapi.yaml) as the pages use it: the one place that
// knows the base URL, how bodies are encoded, how a problem document
// becomes an error, and what a lost session means. Operations without a
// request body are sent without one (and without a Content-Type), as the
// generated SDKs send them.
import { BASE, pages } from './urls.js';

/** @typedef {import('./types.js').Session} Session */
/** @typedef {import('./types.js').Stage} Stage */
/** @typedef {import('./types.js').Promotion} Promotion */
/** @typedef {import('./types.js').Freight} Freight */
/** @typedef {import('./types.js').RunSummary} RunSummary */

const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/**
 * validName checks a project, domain, run or action name like the API does.
 * @param {unknown} s
 * @param {number} max
 */
export function validName(s, max) {
  return typeof s === 'string' && s.length >= 1 && s.length <= max && NAME.test(s);
}

/** Maximum lengths of names, from the API schema. */
export const MAX = { project: 63, domain: 63, run: 30, action: 30 };

const enc = encodeURIComponent;

/** ApiError is a failed request, with the problem document's detail. */
export class ApiError extends Error {
  /** @param {number} status @param {string} [title] @param {string} [detail] */
  constructor(status, title, detail) {
    super(detail || title || `HTTP ${status}`);
    this.status = status;
    this.title = title;
    this.detail = detail;
  }
}

/**
 * checkSession takes the page to the login when the session has ended
 * (expired, or logged out elsewhere): the page is loaded again, and
 * without a session the login takes its place.
 */
export function checkSession() {
  session().catch((e) => { if (e.status === 401) location.reload(); });
}

/**
 * request calls an operation: JSON in (when there is a body) and out.
 * @param {string} method
 * @param {string} path under BASE
 * @param {unknown} [body] none for an operation that takes none
 * @returns {Promise<any>} the decoded answer (null when it is not JSON)
 */
export async function request(method, path, body) {
  /** @type {Record<string, string>} */
  const headers = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let resp;
  try {
    resp = await fetch(BASE + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch {
    throw new ApiError(0, 'Network error', 'The server could not be reached. Check that it is running and try again.');
  }
  const type = resp.headers.get('Content-Type') || '';
  const data = type.includes('json') ? await resp.json().catch(() => null) : null;
  if (!resp.ok) {
    // RFC 9457 problem document: detail says what went wrong, errors[] which field.
    let detail = data && data.detail;
    if (data && Array.isArray(data.errors) && data.errors.length) {
      detail = [detail, ...data.errors.map((/** @type {{detail?: string}} */ e) => e.detail)].filter(Boolean).join(' ');
    }
    // A session that ended (expired, or logged out elsewhere) takes the
    // page to the login; the session operations say so themselves.
    if (resp.status === 401 && path !== '/session') checkSession();
    throw new ApiError(resp.status, (data && data.title) || resp.statusText, detail);
  }
  return data;
}

/**
 * fetchRange reads part of a plain-text resource (a log) by its URL.
 * @param {string} url
 * @param {string} range e.g. bytes=-1024
 */
export function fetchRange(url, range) {
  return fetch(url, { headers: { Range: range } });
}

// Sessions.

/** session says who the browser is logged in as (ApiError 401 when not).
 * @returns {Promise<Session>} */
export function session() {
  return request('GET', '/session');
}

/** login opens a session with a token (the server sets the cookie).
 * @param {string} token */
export function login(token) {
  return request('POST', '/session', { token });
}

/** logout ends the session. */
export function logout() {
  return request('DELETE', '/session');
}

// Runs and actions.

/** listRuns is a page of a project and domain's runs.
 * @param {string} p @param {string} d @param {URLSearchParams} query
 * @returns {Promise<{items: RunSummary[], continue?: string}>} */
export function listRuns(p, d, query) {
  return request('GET', `${pages.runs(p, d)}/runs?${query}`);
}

/** listRunActions is a page of at most limit of a run's actions, after the token.
 * @param {string} p @param {string} d @param {string} r @param {string} after @param {number} limit
 * @returns {Promise<{items: import('./types.js').ActionEvent[], continue?: string}>} */
export function listRunActions(p, d, r, after, limit) {
  return request('GET', `${pages.run(p, d, r)}/actions?${new URLSearchParams({ limit: String(limit), continue: after })}`);
}

/** getRun reads a run's summary (ApiError 404 when there is no such run).
 * @param {string} p @param {string} d @param {string} r
 * @returns {Promise<RunSummary>} */
export function getRun(p, d, r) {
  return request('GET', pages.run(p, d, r));
}

/** deleteRun deletes a finished run (every action of it).
 * @param {string} p @param {string} d @param {string} r */
export function deleteRun(p, d, r) {
  return request('DELETE', pages.run(p, d, r));
}

/** abortAction aborts an action and its descendants; the reason is
 * optional (without one, the request has no body).
 * @param {string} p @param {string} d @param {string} r @param {string} a @param {string} [reason] */
export function abortAction(p, d, r, a, reason) {
  return request('POST', `${pages.run(p, d, r)}/actions/${enc(a)}/abort`, reason ? { reason } : undefined);
}

// Kargo: Stages, Freight, Promotions.

/** getStage reads one Stage (ApiError 404 when there is none).
 * @param {string} p @param {string} s @returns {Promise<Stage>} */
export function getStage(p, s) {
  return request('GET', pages.stage(p, s));
}

/** refreshStage asks the controller to reconcile the Stage now; with wait,
 * the answer comes once it has (lastHandledRefresh caught up).
 * @param {string} p @param {string} s @param {boolean} wait @returns {Promise<Stage>} */
export function refreshStage(p, s, wait) {
  return request('POST', `${pages.stage(p, s)}/refresh${wait ? '?wait=true' : ''}`);
}

/** refreshWarehouse asks the Warehouse controller to discover now; with
 * wait, the answer comes once it has (lastHandledRefresh caught up).
 * @param {string} p @param {string} w @param {boolean} wait
 * @returns {Promise<import('./types.js').Warehouse>} */
export function refreshWarehouse(p, w, wait) {
  return request('POST', `/projects/${enc(p)}/warehouses/${enc(w)}/refresh${wait ? '?wait=true' : ''}`);
}

/** reverifyStage asks for the Stage's current Freight to be verified
 * again (ApiError 409 when it has none, or it was never verified).
 * @param {string} p @param {string} s @returns {Promise<Stage>} */
export function reverifyStage(p, s) {
  return request('POST', `${pages.stage(p, s)}/reverify`);
}

/** abortStageVerification asks for the Stage's running verification to
 * be aborted (one that has ended is left as it is; ApiError 409 as for
 * reverifyStage). @param {string} p @param {string} s @returns {Promise<Stage>} */
export function abortStageVerification(p, s) {
  return request('POST', `${pages.stage(p, s)}/abort-verification`);
}

/** deleteStage deletes a Stage. @param {string} p @param {string} s */
export function deleteStage(p, s) {
  return request('DELETE', pages.stage(p, s));
}

/** listFreight is the project's Freight, newest first; with availableTo,
 * only what can be promoted to that Stage.
 * @param {string} p @param {string} [availableTo] @returns {Promise<Freight[]>} */
export async function listFreight(p, availableTo) {
  const q = availableTo ? `?availableTo=${enc(availableTo)}` : '';
  const l = await request('GET', `/projects/${enc(p)}/freight${q}`);
  return (l && l.items) || [];
}

/** getFreight reads one piece of Freight, by name or alias.
 * @param {string} p @param {string} nameOrAlias @returns {Promise<Freight>} */
export function getFreight(p, nameOrAlias) {
  return request('GET', `/projects/${enc(p)}/freight/${enc(nameOrAlias)}`);
}

/** approveFreight approves Freight for a Stage: it is then available there.
 * @param {string} p @param {string} name @param {string} stage */
export function approveFreight(p, name, stage) {
  return request('POST', `/projects/${enc(p)}/freight/${enc(name)}/approve?stage=${enc(stage)}`);
}

/** getPromotion reads one Promotion (ApiError 404 when there is none).
 * @param {string} p @param {string} n @returns {Promise<Promotion>} */
export function getPromotion(p, n) {
  return request('GET', pages.promotion(p, n));
}

/** promote creates a Promotion of Freight (by name) to a Stage.
 * @param {string} p @param {string} s @param {string} freight @returns {Promise<Promotion>} */
export function promote(p, s, freight) {
  return request('POST', `${pages.stage(p, s)}/promotions`, { freight });
}

/** abortPromotion asks for a Promotion to be aborted.
 * @param {string} p @param {string} n */
export function abortPromotion(p, n) {
  return request('POST', `${pages.promotion(p, n)}/abort`);
}
