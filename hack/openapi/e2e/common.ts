// What the SDK suites share: the server they run against, the record of
// the operations each called and what they answered, and the check that
// every operation of the document was called.

// Node's process, without @types/node.
export const process = (globalThis as unknown as { process: Process }).process;
interface Process {
  argv: string[];
  exit(code: number): never;
  stdout: { write(s: string): boolean };
}

export interface Target {
  /** The server's base URL, such as http://127.0.0.1:8080. */
  url: string;
  /** The admin token: the only credential the clients are given. */
  token: string;
  /** Names no other test uses (projects and runs start with it). */
  prefix: string;
}

export function target(): Target {
  const [url, token, prefix] = process.argv.slice(2);
  if (!url || !token || !prefix) {
    throw new Error('usage: node main.js <server URL> <token> <name prefix>');
  }
  return { url, token, prefix };
}

/** One SDK's run: each operation it called, the statuses it answered, what failed. */
export class Suite {
  readonly calls = new Map<string, number[]>();
  readonly failures: string[] = [];

  constructor(readonly sdk: string) {}

  /** Runs one step of the suite, which calls operation op; a failure is recorded, not thrown. */
  async step(op: string, f: () => Promise<unknown>): Promise<void> {
    try {
      await f();
      if (!this.calls.has(op)) {
        this.fail(op, 'the step called nothing');
      }
    } catch (e) {
      this.fail(op, e instanceof Error ? e.message : String(e));
    }
  }

  /** Records that op answered status. */
  record(op: string, status: number | undefined): void {
    const got = this.calls.get(op) ?? [];
    got.push(status ?? 0);
    this.calls.set(op, got);
  }

  /** Records that op answered status, and fails unless it is want. */
  answered(op: string, status: number | undefined, want: number, body?: unknown): void {
    this.record(op, status);
    if (status !== want) {
      throw new Error(`HTTP ${status}, want ${want}: ${JSON.stringify(body)?.slice(0, 300)}`);
    }
  }

  fail(op: string, why: string): void {
    this.failures.push(`${op}: ${why}`);
  }

  /** Fails each operation of the document that this suite did not call. */
  cover(operations: string[]): void {
    for (const op of operations) {
      if (!this.calls.has(op)) {
        this.fail(op, 'not called: the document has an operation this suite does not call');
      }
    }
  }
}

export function check(cond: boolean, what: string): void {
  if (!cond) {
    throw new Error(what);
  }
}

/** The operationIds of the document the server serves. */
export async function operations(t: Target): Promise<string[]> {
  const r = await fetch(`${t.url}/api/v1/openapi.json`);
  check(r.ok, `GET /api/v1/openapi.json: HTTP ${r.status}`);
  const doc = (await r.json()) as { paths: { [path: string]: { [method: string]: { operationId?: string } } } };
  const ops: string[] = [];
  for (const item of Object.values(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (['get', 'put', 'post', 'delete', 'patch'].includes(method) && op.operationId) {
        ops.push(op.operationId);
      }
    }
  }
  return ops.sort();
}

/** Prints a suite's results: one line per operation. */
export function report(r: Suite, ops: string[]): void {
  for (const op of ops) {
    const failed = r.failures.filter((f) => f.startsWith(`${op}:`));
    const statuses = (r.calls.get(op) ?? []).join(',') || '-';
    process.stdout.write(`${r.sdk}\t${op}\t${failed.length ? 'FAIL' : 'ok'}\t${statuses}${failed.length ? '\t' + failed.join('; ') : ''}\n`);
  }
  for (const f of r.failures.filter((f) => !ops.some((op) => f.startsWith(`${op}:`)))) {
    process.stdout.write(`${r.sdk}\t-\tFAIL\t\t${f}\n`);
  }
}

/** Type-level equality, for the checks that an SDK types what it yields. */
export type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
export function typed<T extends true>(_: T): void {}
