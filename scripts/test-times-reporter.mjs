// A node:test reporter that records how long each test file takes, for scripts/run-tests.mjs
// (which uses it beside the spec reporter: `--test-reporter=<this file>
// --test-reporter-destination=<a file>`). It writes one JSON line per file, as the file ends:
//   {"file":"/abs/test/api/sales.test.ts","ms":12345.6,"passed":true}
// and, when a file starts, {"file":…,"started":true}, so that a leg stopped mid-run still shows
// which files had not finished. A file's time is its whole process, from start to exit (imports,
// hooks, every test): node:test reports it as a top-level test named after the file. Where a
// Node version does not, the sum of the file's top-level tests stands in, marked "summed".
import { resolve } from 'node:path';

/** Whether the event is about the test node:test makes of a whole file (process isolation). */
function isFileTest(data) {
  return data.nesting === 0 && typeof data.file === 'string' && typeof data.name === 'string' && resolve(data.name) === data.file;
}

export default async function* testTimes(source) {
  const finished = new Set();
  /** Per file: the summed durations of its top-level tests, and whether all passed. */
  const summed = new Map();
  for await (const event of source) {
    const data = event.data;
    if (!data || typeof data.file !== 'string') continue;
    if (event.type === 'test:dequeue' && isFileTest(data)) {
      yield `${JSON.stringify({ file: data.file, started: true })}\n`;
    } else if (event.type === 'test:complete' && data.nesting === 0) {
      const ms = data.details?.duration_ms ?? 0;
      const passed = data.details?.passed !== false;
      if (isFileTest(data)) {
        finished.add(data.file);
        yield `${JSON.stringify({ file: data.file, ms, passed })}\n`;
      } else {
        const sum = summed.get(data.file) ?? { ms: 0, passed: true };
        summed.set(data.file, { ms: sum.ms + ms, passed: sum.passed && passed });
      }
    }
  }
  for (const [file, { ms, passed }] of summed) {
    if (!finished.has(file)) yield `${JSON.stringify({ file, ms, passed, summed: true })}\n`;
  }
}
