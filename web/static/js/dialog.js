// @ts-check
// The abort confirmation (a modal <dialog> in index.html) and the toast.
import { ApiError } from './api.js';

const dialog = /** @type {HTMLDialogElement} */ (document.getElementById('abort-dialog'));
const form = document.getElementById('abort-form');
const title = document.getElementById('abort-title');
const desc = document.getElementById('abort-desc');
const reason = /** @type {HTMLTextAreaElement} */ (document.getElementById('abort-reason'));
const reasonLabel = /** @type {HTMLLabelElement} */ (document.querySelector('label[for="abort-reason"]'));
const error = document.getElementById('abort-error');
const confirmBtn = /** @type {HTMLButtonElement} */ (document.getElementById('abort-confirm'));
const cancelBtn = /** @type {HTMLButtonElement} */ (document.getElementById('abort-cancel'));

let current = null; // {run, done, returnFocus}

cancelBtn.addEventListener('click', () => dialog.close('cancel'));

dialog.addEventListener('cancel', (ev) => {
  // Escape: not while the request is on its way.
  if (confirmBtn.disabled) ev.preventDefault();
});

dialog.addEventListener('close', () => {
  const c = current;
  current = null;
  if (c && c.returnFocus && c.returnFocus.isConnected) c.returnFocus.focus();
});

form.addEventListener('submit', async (ev) => {
  ev.preventDefault(); // the dialog stays open until the server said yes
  if (!current) return;
  const c = current;
  busy(true);
  try {
    await c.run(reason.value.trim());
    dialog.close('confirm');
    if (c.done) c.done();
  } catch (e) {
    error.textContent = e instanceof ApiError ? `${e.message}` : `Something went wrong: ${e.message}`;
    error.hidden = false;
  } finally {
    busy(false);
  }
});

function busy(on) {
  confirmBtn.disabled = on;
  cancelBtn.disabled = on;
  reason.readOnly = on;
  confirmBtn.setAttribute('aria-busy', String(on));
}

/**
 * confirmAbort asks before an abort.
 * @param {object} o
 * @param {string} o.heading e.g. "Abort action a1?"
 * @param {string} o.text what will happen
 * @param {string} o.confirm label of the confirming button
 * @param {boolean} [o.noReason] asks for no reason (a deletion)
 * @param {(reason: string) => Promise<any>} o.run does the abort; an error keeps the dialog open and is shown
 * @param {() => void} [o.done] after a successful abort
 */
export function confirmAbort(o) {
  current = { run: o.run, done: o.done, returnFocus: document.activeElement };
  title.textContent = o.heading;
  desc.textContent = o.text;
  confirmBtn.textContent = o.confirm;
  reason.value = '';
  for (const el of [reason, reasonLabel]) el.hidden = !!o.noReason;
  error.hidden = true;
  error.textContent = '';
  busy(false);
  dialog.showModal();
  (o.noReason ? confirmBtn : reason).focus();
}

const toastEl = document.getElementById('toast');
let toastTimer = 0;

/** toast shows a short message for a few seconds. */
export function toast(message) {
  toastEl.textContent = message;
  toastEl.classList.add('show');
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => toastEl.classList.remove('show'), 4000);
}
