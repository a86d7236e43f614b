// The webhook retry policy (src/modules/webhooks/retry-policy.ts): what an endpoint's answer
// makes of a delivery — delivered, retried on the schedule with ±20 % jitter, failed after the
// last attempt, or gone on 410 — and when a failing endpoint's other deliveries go out. Pure
// rules: no server, no database.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { endpointRetryAt, retryOutcome, type AttemptResult } from '../../src/modules/webhooks/retry-policy.ts';

const now = new Date('2026-01-01T00:00:00.000Z');
const schedule = [5_000, 60_000, 600_000];
/** A draw of 0.5: the jitter's middle, so the wait is the schedule's own. */
const attempt = (overrides: Partial<AttemptResult>): AttemptResult => ({ statusCode: 500, attempt: 1, schedule, jitter: 0.5, now, ...overrides });
/** ms from `now` to a retry decision's time. */
const waitOf = (input: AttemptResult): number => {
  const decision = retryOutcome(input);
  assert.equal(decision.kind, 'retry');
  return Date.parse((decision as { nextAttemptAt: string }).nextAttemptAt) - now.getTime();
};

describe('retryOutcome: a 2xx answer is delivered', () => {
  for (const statusCode of [200, 201, 204, 299]) {
    it(`${statusCode} is delivered, on any attempt`, () => {
      assert.deepEqual(retryOutcome(attempt({ statusCode })), { kind: 'delivered' });
      assert.deepEqual(retryOutcome(attempt({ statusCode, attempt: schedule.length + 1 })), { kind: 'delivered' });
    });
  }

  it('delivered with an empty schedule too', () => {
    assert.deepEqual(retryOutcome(attempt({ statusCode: 200, schedule: [] })), { kind: 'delivered' });
  });
});

describe('retryOutcome: any other answer, or none, is retried on the schedule', () => {
  for (const statusCode of [null, 100, 199, 300, 301, 400, 404, 409, 429, 500, 503]) {
    it(`${statusCode ?? 'no answer'} is retried`, () => {
      assert.equal(retryOutcome(attempt({ statusCode })).kind, 'retry');
    });
  }

  it('attempt n waits schedule[n - 1]', () => {
    assert.equal(waitOf(attempt({ attempt: 1 })), 5_000);
    assert.equal(waitOf(attempt({ attempt: 2 })), 60_000);
    assert.equal(waitOf(attempt({ attempt: 3 })), 600_000);
  });

  it('the retry time is an ISO 8601 UTC instant after the answer', () => {
    assert.deepEqual(retryOutcome(attempt({ attempt: 2 })), { kind: 'retry', nextAttemptAt: '2026-01-01T00:01:00.000Z' });
  });
});

describe('retryOutcome: jitter moves the wait by up to ±20 %', () => {
  it('a draw of 0 waits 80 % of the step', () => {
    assert.equal(waitOf(attempt({ attempt: 2, jitter: 0 })), 48_000);
  });

  it('a draw just under 1 waits 120 % of the step at most (reached by rounding only)', () => {
    assert.equal(waitOf(attempt({ attempt: 2, jitter: 0.9999 })), 71_998);
    assert.equal(waitOf(attempt({ attempt: 2, jitter: 0.999_999 })), 72_000);
  });

  it('every draw in [0, 1) stays within [80 %, 120 %] of the step, and a larger draw never waits less', () => {
    let previous = 0;
    for (let i = 0; i < 1000; i++) {
      const wait = waitOf(attempt({ attempt: 3, jitter: i / 1000 }));
      assert.ok(wait >= 480_000 && wait <= 720_000, `draw ${i / 1000}: ${wait}`);
      assert.ok(wait >= previous);
      previous = wait;
    }
  });

  it('the wait is rounded to whole milliseconds', () => {
    // 5,000 × (0.8 + 0.123_456 × 0.4) = 4,246.9... → 4,247
    assert.equal(waitOf(attempt({ attempt: 1, jitter: 0.123_456 })), 4_247);
  });
});

describe('retryOutcome: 410 Gone', () => {
  it('is gone on the first attempt, the last, and past it', () => {
    for (const n of [1, schedule.length, schedule.length + 1]) assert.deepEqual(retryOutcome(attempt({ statusCode: 410, attempt: n })), { kind: 'gone' });
  });

  it('is gone with an empty schedule', () => {
    assert.deepEqual(retryOutcome(attempt({ statusCode: 410, schedule: [] })), { kind: 'gone' });
  });
});

describe('retryOutcome: failed after the last attempt', () => {
  it('the attempt after the schedule runs out fails, for an answer or none', () => {
    assert.deepEqual(retryOutcome(attempt({ attempt: schedule.length + 1 })), { kind: 'failed' });
    assert.deepEqual(retryOutcome(attempt({ statusCode: null, attempt: schedule.length + 1 })), { kind: 'failed' });
  });

  it('the last scheduled attempt still retries, on the last step', () => {
    assert.equal(waitOf(attempt({ attempt: schedule.length })), 600_000);
  });

  it('an empty schedule fails the first attempt', () => {
    assert.deepEqual(retryOutcome(attempt({ schedule: [] })), { kind: 'failed' });
  });
});

describe("endpointRetryAt: when a failing endpoint's other deliveries go out", () => {
  it("at the failed delivery's retry time", () => {
    assert.equal(endpointRetryAt({ kind: 'retry', nextAttemptAt: '2026-01-01T00:00:07.000Z' }, now, schedule), '2026-01-01T00:00:07.000Z');
  });

  it("failed for good or gone: one first step from now, without jitter", () => {
    assert.equal(endpointRetryAt({ kind: 'failed' }, now, schedule), '2026-01-01T00:00:05.000Z');
    assert.equal(endpointRetryAt({ kind: 'gone' }, now, [30_000]), '2026-01-01T00:00:30.000Z');
  });

  it('with an empty schedule: 5 seconds from now', () => {
    assert.equal(endpointRetryAt({ kind: 'failed' }, now, []), '2026-01-01T00:00:05.000Z');
  });
});
