// @ts-check
// The last project and domain a person looked at, kept in localStorage.

const KEY = 'taskactions.last';
const RECENT = 'taskactions.recent';

function read(key) {
  try {
    return JSON.parse(localStorage.getItem(key) || 'null');
  } catch {
    return null; // storage off, or someone else's value
  }
}

function write(key, value) {
  try {
    localStorage.setItem(key, JSON.stringify(value));
  } catch {
    // storage off or full: remembering is a convenience
  }
}

/** last is the last {project, domain}, or null. */
export function last() {
  const v = read(KEY);
  return v && typeof v.project === 'string' && typeof v.domain === 'string' ? v : null;
}

/** recent is up to five recent {project, domain}, newest first. */
export function recent() {
  const v = read(RECENT);
  return Array.isArray(v) ? v.filter((x) => x && typeof x.project === 'string' && typeof x.domain === 'string').slice(0, 5) : [];
}

/** remember records a project and domain as the last one. */
export function remember(project, domain) {
  write(KEY, { project, domain });
  const list = recent().filter((x) => x.project !== project || x.domain !== domain);
  list.unshift({ project, domain });
  write(RECENT, list.slice(0, 5));
}
