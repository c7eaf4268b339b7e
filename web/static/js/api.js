// The HTTP API (api/openapi.yaml) as the pages use it.

const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** validName checks a project, domain, run or action name like the API does. */
export function validName(s, max) {
  return typeof s === 'string' && s.length >= 1 && s.length <= max && NAME.test(s);
}

/** Maximum lengths of names, from the API schema. */
export const MAX = { project: 63, domain: 63, run: 30, action: 30 };

const enc = encodeURIComponent;

/** Page URLs. */
export const pages = {
  home: () => '/',
  runs: (p, d) => `/projects/${enc(p)}/domains/${enc(d)}`,
  run: (p, d, r) => `/projects/${enc(p)}/domains/${enc(d)}/runs/${enc(r)}`,
};

const BASE = '/api/v1';

/** Stream URLs. */
export const streams = {
  projects: () => `${BASE}/project-events`,
  runs: (p, d) => `${BASE}${pages.runs(p, d)}/events`,
  run: (p, d, r) => `${BASE}${pages.run(p, d, r)}/events`,
};

/** logURL is an attempt's log (plain text, with Range); events its stream. */
export function logURL(p, d, r, a, attempt, stream, events) {
  return `${BASE}${pages.run(p, d, r)}/actions/${enc(a)}/logs${events ? '/events' : ''}?attempt=${attempt}&stream=${stream}`;
}

/** ApiError is a failed request, with the problem document's detail. */
export class ApiError extends Error {
  constructor(status, title, detail) {
    super(detail || title || `HTTP ${status}`);
    this.status = status;
    this.title = title;
    this.detail = detail;
  }
}

export async function request(method, path, body) {
  let resp;
  try {
    resp = await fetch(BASE + path, {
      method,
      headers: body === undefined ? { Accept: 'application/json' } : { Accept: 'application/json', 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, 'Network error', 'The server could not be reached. Check that it is running and try again.');
  }
  const type = resp.headers.get('Content-Type') || '';
  const data = type.includes('json') ? await resp.json().catch(() => null) : null;
  if (!resp.ok) {
    // RFC 9457 problem document: detail says what went wrong, errors[] which field.
    let detail = data && data.detail;
    if (data && Array.isArray(data.errors) && data.errors.length) {
      detail = [detail, ...data.errors.map((e) => e.detail)].filter(Boolean).join(' ');
    }
    throw new ApiError(resp.status, (data && data.title) || resp.statusText, detail);
  }
  return data;
}

/** session says who the browser is logged in as (ApiError 401 when not). */
export function session() {
  return request('GET', '/session');
}

/** login opens a session with a token (the server sets the cookie). */
export function login(token) {
  return request('POST', '/session', { token });
}

/** logout ends the session. */
export function logout() {
  return request('DELETE', '/session', {});
}

/** abortAction aborts an action and its descendants; the reason is optional. */
export function abortAction(p, d, r, a, reason) {
  const body = reason ? { reason } : {};
  return request('POST', `${pages.run(p, d, r)}/actions/${enc(a)}/abort`, body);
}

/** getRun reads a run's summary (ApiError 404 when there is no such run). */
export function getRun(p, d, r) {
  return request('GET', pages.run(p, d, r));
}

/** deleteRun deletes a finished run (every action of it). */
export function deleteRun(p, d, r) {
  return request('DELETE', pages.run(p, d, r), {});
}
