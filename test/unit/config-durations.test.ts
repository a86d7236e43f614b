// Retry schedules in the configuration (parseDurations, src/config.ts): "5s,5m,30m,2h" in
// milliseconds, or a ConfigError that names the variable and the part it could not read. Pure
// rule: no server, no database.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, DEFAULT_MAIL_RETRY_SCHEDULE, DEFAULT_RETRY_SCHEDULE, parseDurations } from '../../src/config.ts';

const S = 1000;
const M = 60 * S;
const H = 60 * M;
const D = 24 * H;

describe('parseDurations: a list of durations', () => {
  it('reads each unit', () => {
    assert.deepEqual(parseDurations('X', '250ms,5s,5m,2h,5d'), [250, 5 * S, 5 * M, 2 * H, 5 * D]);
    assert.deepEqual(parseDurations('X', '0s'), [0]);
    assert.deepEqual(parseDurations('X', '999999999ms'), [999_999_999]);
  });

  it('keeps the order and the repeats, and allows spaces around the commas', () => {
    assert.deepEqual(parseDurations('X', '10h, 10h ,5s'), [10 * H, 10 * H, 5 * S]);
  });

  it('reads the default schedules', () => {
    assert.deepEqual(parseDurations('WEBHOOK_RETRY_SCHEDULE', DEFAULT_RETRY_SCHEDULE), [5 * S, 5 * M, 30 * M, 2 * H, 5 * H, 10 * H, 10 * H, 10 * H, 12 * H, 12 * H, 12 * H]);
    assert.deepEqual(parseDurations('MAIL_RETRY_SCHEDULE', DEFAULT_MAIL_RETRY_SCHEDULE), [30 * S, 2 * M, 10 * M, 30 * M, 2 * H, 6 * H]);
  });

  it('takes up to 50 durations', () => {
    assert.equal(parseDurations('X', Array(50).fill('1s').join(',')).length, 50);
    assert.throws(() => parseDurations('WEBHOOK_RETRY_SCHEDULE', Array(51).fill('1s').join(',')), { message: 'WEBHOOK_RETRY_SCHEDULE may list at most 50 durations' });
  });
});

describe('parseDurations: what it refuses', () => {
  it('refuses a part without a known unit, a sign, a fraction, ten digits or nothing, naming the variable and the part', () => {
    for (const part of ['5', '5sec', '5 s', '5S', '1w', '-5s', '+5s', '1.5h', '1e3ms', '1234567890ms', '', 's', '0x10s']) {
      assert.throws(
        () => parseDurations('MAIL_RETRY_SCHEDULE', `5s,${part},2h`),
        (error: unknown) => error instanceof ConfigError && error.message === `MAIL_RETRY_SCHEDULE must be comma-separated durations such as 5s,5m,2h (units ms, s, m, h, d), got "${part.trim()}"`,
        JSON.stringify(part),
      );
    }
  });

  it('refuses an empty list and a trailing comma', () => {
    assert.throws(() => parseDurations('X', ''), ConfigError);
    assert.throws(() => parseDurations('X', '5s,'), ConfigError);
  });
});
