// @ts-check
// The login page, shown when the browser has no session. The server
// printed a one-time login link at start (make run); without it, a token
// pasted here (the admin token in <data-dir>/api-token, or one of
// --auth-tokens-file) opens a session: the server sets an HttpOnly cookie
// that every page and stream then sends. The token never goes in a URL.
import { h } from './dom.js';
import { login } from './api.js';

/** @typedef {import('./ui.js').UI} UI */

/** tokenFile is where this server keeps the admin token: index.html
 * carries it (the server knows its --data-dir). */
function tokenFile() {
  const meta = document.querySelector('meta[name="taskactions-token-file"]');
  return (meta && meta.getAttribute('content')) || '<data-dir>/api-token';
}

/** @param {HTMLElement} main @param {UI} ui @param {{expired: boolean}} o */
export function loginPage(main, ui, { expired }) {
  ui.setTitle('Log in');
  ui.setCrumbs([]);
  const input = h('input', {
    id: 'token', name: 'token', type: 'password', required: true, autocomplete: 'off',
    spellcheck: 'false', 'aria-describedby': 'token-hint',
  });
  const error = h('p', { class: 'form-error', role: 'alert', hidden: true });
  const button = h('button', { type: 'submit', class: 'btn primary', text: 'Log in' });
  // Were the form ever sent without this script, it would go as a POST
  // body (refused), never as a query string in the address bar.
  const form = h('form', { class: 'pick', id: 'login-form', method: 'post', action: '/api/v1/session', novalidate: true },
    h('div', { class: 'fields login-fields' },
      h('div', { class: 'field' }, h('label', { for: 'token', text: 'API token' }), input),
      button),
    h('p', { id: 'token-hint', class: 'hint' },
      'Open the login link the server printed at start, or paste a token: the admin token is in ',
      h('code', { id: 'token-file', text: tokenFile() }), '.'),
    error);
  const fail = (msg) => {
    error.textContent = msg;
    error.hidden = false;
    input.setAttribute('aria-invalid', 'true');
    input.focus();
  };
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const token = input.value.trim();
    if (!token) return fail('Enter a token.');
    button.disabled = true;
    try {
      await login(token);
      location.replace(location.pathname === '/login' ? '/' : location.pathname + location.hash);
    } catch (e) {
      fail(e.status === 401 ? 'That token is not valid.' : e.message);
    } finally {
      button.disabled = false;
    }
  });
  main.append(
    h('section', { class: 'panel narrow home', id: 'login' },
      h('h1', { text: 'Log in' }),
      expired ? h('p', { class: 'notice-line', role: 'status', text: 'That login link was used already or has expired.' }) : null,
      h('p', { class: 'muted', text: 'The dashboard needs a session to show runs.' }),
      form));
  input.focus();
}
