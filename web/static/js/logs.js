// @ts-check
// LogView: an attempt's stdout or stderr, live. It shows the tail of the
// log (a ranged GET), then follows it by its event stream, whose ids are
// byte offsets, so a reconnect resumes at the exact byte. Only the last
// SHOWN_MAX bytes stay on the page while following; "Load earlier" brings
// back what came before, a range at a time.
//
// The text is a column of blocks of whole lines (the line being written
// is the last block, rewritten as it grows): appending a block lays out
// only that block, dropping the first is cheap, and blocks off screen are
// not rendered (content-visibility), so a 10 MiB log stays fast.
import { h, setText } from './dom.js';
import { fetchRange } from './api.js';
import { openEventSource } from './stream.js';
import { logURL } from './urls.js';

const TAIL = 256 << 10; // the first look: the log's last 256 KiB
const EARLIER = 512 << 10; // what "Load earlier" adds
const SHOWN_MAX = 2 << 20; // what following keeps on the page

export class LogView {
  /** @param {{project: string, domain: string, run: string, action: string}} id */
  constructor({ project, domain, run, action }) {
    this.id = { project, domain, run, action };
    this.attempt = 0; // 0: not chosen by the user, follow the latest
    this.latest = 1;
    this.stream = 'stdout';
    this.gen = 0;
    this.es = null;
    this.follow = true;

    this.attemptSel = h('select', { id: 'log-attempt', 'aria-label': 'Attempt' });
    this.attemptSel.addEventListener('change', () => { this.attempt = Number(this.attemptSel.value); this.open(); });
    this.streamSel = h('select', { id: 'log-stream', 'aria-label': 'Stream' },
      h('option', { value: 'stdout', text: 'stdout' }), h('option', { value: 'stderr', text: 'stderr' }));
    this.streamSel.addEventListener('change', () => { this.stream = this.streamSel.value; this.open(); });
    this.download = h('a', { id: 'log-download', class: 'btn small', text: 'Download' });
    this.status = h('span', { id: 'log-status', class: 'muted', role: 'status' });
    this.earlier = h('button', { type: 'button', id: 'log-earlier', class: 'btn small', hidden: true, text: 'Load earlier', onclick: () => this.loadEarlier() });
    this.followBtn = h('button', { type: 'button', id: 'log-follow', class: 'btn small', hidden: true, text: 'Follow', onclick: () => this.setFollow(true, true) });
    this.pre = h('div', { id: 'log-text', class: 'log-text', tabindex: '0', role: 'log', 'aria-label': 'Log' });
    this.autoTop = 0; // where the view was last scrolled to by following
    this.pre.addEventListener('scroll', () => {
      // Only a move up is the user's: a scroll event of following's own
      // may arrive after more text did.
      if (this.atBottom()) this.setFollow(true, false);
      else if (this.pre.scrollTop < this.autoTop - 2) this.setFollow(false, false);
    });
    this.el = h('section', { class: 'logs', 'aria-label': 'Logs' },
      h('div', { class: 'log-tools' }, this.attemptSel, this.streamSel, this.download, this.followBtn, this.status),
      this.earlier, this.pre);
  }

  /** setAttempts follows the action: a new attempt is followed unless the user picked one. */
  setAttempts(n) {
    const latest = Math.max(1, n || 0);
    if (latest === this.latest && this.attemptSel.options.length) return;
    this.latest = latest;
    this.attemptSel.replaceChildren(...Array.from({ length: latest }, (_, i) =>
      h('option', { value: String(i + 1), text: `Attempt ${i + 1}` })));
    this.attemptSel.value = String(this.attempt || latest);
    if (!this.attempt && this.shown !== latest) this.open();
  }

  /** open shows the chosen attempt and stream from its tail, then follows it. */
  async open() {
    this.close();
    const gen = ++this.gen;
    const attempt = this.attempt || this.latest;
    this.shown = attempt;
    const { action } = this.id;
    const url = logURL(this.id, attempt, this.stream, false);
    this.download.href = url;
    this.download.download = `${action}-attempt${attempt}.${this.stream}.log`;
    this.partial = h('div', { class: 'log-line' });
    this.pre.replaceChildren(this.partial);
    this.chunks = [];
    this.shownBytes = 0;
    this.setFollow(true, false);
    setText(this.status, 'Loading…');
    let resp;
    try {
      resp = await fetchRange(url, `bytes=-${TAIL}`);
    } catch {
      if (gen === this.gen) setText(this.status, 'The server could not be reached.');
      return;
    }
    if (gen !== this.gen) return;
    if (!resp.ok) {
      setText(this.status, `Log unavailable (HTTP ${resp.status}).`);
      return;
    }
    const bytes = new Uint8Array(await resp.arrayBuffer());
    if (gen !== this.gen) return;
    const range = /bytes (\d+)-\d+\/(\d+)/.exec(resp.headers.get('Content-Range') || '');
    const start = range ? Number(range[1]) : 0;
    this.end = range ? Number(range[2]) : bytes.length;
    const { text, skipped } = decodeFrom(bytes, start > 0);
    this.start = start + skipped;
    this.append(text);
    this.earlier.hidden = this.start === 0;
    this.dropped = Number(resp.headers.get('Log-Dropped-Bytes') || 0);
    this.followLive(gen, logURL(this.id, attempt, this.stream, true));
  }

  followLive(gen, url) {
    setText(this.status, 'Live');
    const es = openEventSource(`${url}&lastEventId=${this.end}`);
    this.es = es;
    es.addEventListener('log', (ev) => {
      if (gen !== this.gen) return;
      const d = JSON.parse(ev.data);
      if (d.offset !== this.end) return; // not where we are: the next reconnect resumes right
      this.end = Number(ev.lastEventId);
      this.append(d.text);
    });
    es.addEventListener('eof', (ev) => {
      es.close();
      if (gen !== this.gen) return;
      const d = JSON.parse(ev.data);
      setText(this.status, d.dropped ? `Ended · ${d.dropped} bytes dropped past the server's log limit` : 'Ended');
      this.status.dataset.state = 'ended';
    });
    es.addEventListener('reset', () => { if (gen === this.gen) this.open(); });
    es.addEventListener('open', () => { if (gen === this.gen && this.status.dataset.state !== 'ended') setText(this.status, 'Live'); });
    es.addEventListener('error', () => {
      if (gen === this.gen && es.readyState !== EventSource.CLOSED) setText(this.status, 'Reconnecting…');
    });
    delete this.status.dataset.state;
  }

  /** append adds text at the end, keeping the view at the bottom while following. */
  append(text) {
    if (!text) return;
    const all = this.partial.textContent + text;
    const cut = all.lastIndexOf('\n') + 1;
    if (cut > 0) {
      const lines = all.slice(0, cut);
      const n = utf8Length(lines);
      const node = h('div', { class: 'log-chunk', text: lines });
      this.pre.insertBefore(node, this.partial);
      this.chunks.push({ node, n });
      this.shownBytes += n;
    }
    this.partial.textContent = all.slice(cut);
    if (!this.follow) return;
    while (this.shownBytes > SHOWN_MAX && this.chunks.length > 1) {
      const c = this.chunks.shift();
      c.node.remove();
      this.shownBytes -= c.n;
      this.start += c.n;
      this.earlier.hidden = false;
    }
    this.toBottom();
  }

  toBottom() {
    this.pre.scrollTop = this.pre.scrollHeight;
    this.autoTop = this.pre.scrollTop;
  }

  async loadEarlier() {
    const gen = this.gen;
    const from = Math.max(0, this.start - EARLIER);
    const resp = await fetchRange(logURL(this.id, this.shown, this.stream, false), `bytes=${from}-${this.start - 1}`).catch(() => null);
    if (!resp || !resp.ok || gen !== this.gen) return;
    const bytes = new Uint8Array(await resp.arrayBuffer());
    if (gen !== this.gen) return;
    const { text, skipped } = decodeFrom(bytes, from > 0);
    const node = h('div', { class: 'log-chunk', text });
    const height = this.pre.scrollHeight;
    this.pre.prepend(node);
    this.chunks.unshift({ node, n: bytes.length - skipped });
    this.shownBytes += bytes.length - skipped;
    this.start = from + skipped;
    this.earlier.hidden = this.start === 0;
    // Keep the lines the user was reading where they were.
    this.pre.scrollTop += this.pre.scrollHeight - height;
  }

  atBottom() {
    return this.pre.scrollHeight - this.pre.scrollTop - this.pre.clientHeight < 4;
  }

  /** setFollow turns auto-scroll on (at the bottom) or off (the user scrolled up). */
  setFollow(on, scroll) {
    this.follow = on;
    this.followBtn.hidden = on;
    if (on && scroll) this.toBottom();
  }

  close() {
    this.gen++;
    if (this.es) this.es.close();
    this.es = null;
  }
}

const encoder = new TextEncoder();

function utf8Length(s) {
  return encoder.encode(s).length;
}

// decodeFrom decodes a range of a log that may begin inside a character
// (and, when cut, inside a line): it skips to the next line start, and
// says how many bytes it skipped, which the next "Load earlier" brings.
function decodeFrom(bytes, cut) {
  let skipped = 0;
  if (cut) {
    const nl = bytes.indexOf(10);
    skipped = nl >= 0 && nl < bytes.length - 1 ? nl + 1 : 0;
    while (skipped < bytes.length && (bytes[skipped] & 0xc0) === 0x80) skipped++;
  }
  return { text: new TextDecoder().decode(bytes.subarray(skipped)), skipped };
}
