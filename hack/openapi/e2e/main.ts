// The TypeScript SDKs generated from api/openapi.yaml (make lint-openapi),
// run against a real server: every operation and every stream through
// openapi-fetch (with openapi-typescript's types and a plain EventSource)
// and through @hey-api/openapi-ts's SDK, each with the token and nothing
// else. test/e2e's TestTypeScriptSDKs starts the server and runs this:
//
//	node build/e2e/main.js <server URL> <token> <name prefix>
//
// It prints one line per SDK and operation, and exits 1 if any failed or
// if the document has an operation that a suite does not call.
import { operations, process, report, Suite, target } from './common';
import { openapiFetch } from './fetch';
import { heyApi } from './hey';

async function main(): Promise<number> {
  const t = target();
  const ops = await operations(t);
  const suites: Suite[] = [await openapiFetch(t), await heyApi(t)];
  let failures = 0;
  for (const s of suites) {
    s.cover(ops);
    report(s, ops);
    failures += s.failures.length;
    process.stdout.write(`${s.sdk}: ${ops.length} operations, ${s.failures.length} failures\n`);
  }
  return failures === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    process.stdout.write(`${e instanceof Error ? e.stack : e}\n`);
    process.exit(1);
  },
);
