// What an endpoint's answer makes of a delivery: delivered, retried later, failed for good, or
// gone (410: the endpoint asks to be unsubscribed). A pure rule of the answer's status, the
// attempt's number, the retry schedule (WEBHOOK_RETRY_SCHEDULE) and a random draw for the
// jitter, so it is tested without a server or a database (test/unit/retry-policy.test.ts).

/** delivered; retry at `nextAttemptAt`; failed for good; or the endpoint answered 410. */
export type RetryDecision = { kind: 'delivered' } | { kind: 'retry'; nextAttemptAt: string } | { kind: 'failed' } | { kind: 'gone' };

export interface AttemptResult {
  /** The endpoint's HTTP status; null when no answer came (refused, timed out, DNS). */
  statusCode: number | null;
  /** This attempt's number, from 1. */
  attempt: number;
  /** Wait before each retry, ms: entry n - 1 follows attempt n; past the last, the delivery fails. */
  schedule: readonly number[];
  /** A draw in [0, 1) (Math.random()): moves the wait by up to ±20 %, so a burst's retries spread apart. */
  jitter: number;
  /** When the answer came. */
  now: Date;
}

export function retryOutcome({ statusCode, attempt, schedule, jitter, now }: AttemptResult): RetryDecision {
  if (statusCode !== null && statusCode >= 200 && statusCode < 300) return { kind: 'delivered' };
  if (statusCode === 410) return { kind: 'gone' };
  if (attempt > schedule.length) return { kind: 'failed' };
  const factor = 0.8 + jitter * 0.4;
  return { kind: 'retry', nextAttemptAt: new Date(now.getTime() + Math.round(schedule[attempt - 1]! * factor)).toISOString() };
}

/** Used when the schedule is empty: a failing endpoint's queue still waits a moment. */
const FIRST_RETRY_FALLBACK_MS = 5000;

/**
 * When an endpoint whose delivery just did not succeed gets its other queued deliveries: at
 * that delivery's retry time, or (it failed for good, or is gone) one first retry's wait from
 * now, so a down endpoint is probed once per retry wave instead of burning every queued attempt.
 */
export function endpointRetryAt(decision: RetryDecision, now: Date, schedule: readonly number[]): string {
  if (decision.kind === 'retry') return decision.nextAttemptAt;
  return new Date(now.getTime() + (schedule[0] ?? FIRST_RETRY_FALLBACK_MS)).toISOString();
}
