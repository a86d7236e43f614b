// A program's share of the PostgreSQL pool (db/program-share.ts): at most `limit` of its
// transactions at once, the rest served first come first served, a bounded wait, and other
// programs never waiting behind it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { ProgramShare, ProgramShareTimeout, shareProgramsOf, withinProgramShare, withProgramScope } from '../../src/db/program-share.ts';
import { isPoolExhausted } from '../../src/db/errors.ts';

describe('a program share of the pool', () => {
  it('lets `limit` turns of one program run, queues the rest in order, and never queues another program', async () => {
    const share = new ProgramShare(2, 0);
    const first = await share.acquire('p');
    const second = await share.acquire('p');
    assert.equal(share.running('p'), 2);
    const order: string[] = [];
    const third = share.acquire('p').then((release) => (order.push('third'), release));
    const fourth = share.acquire('p').then((release) => (order.push('fourth'), release));
    const other = await share.acquire('q'); // another program is not behind p's queue
    assert.equal(share.running('q'), 1);
    await sleep(5);
    assert.deepEqual(order, []);
    first();
    first(); // a second call gives nothing back twice
    (await third)();
    second();
    (await fourth)();
    assert.deepEqual(order, ['third', 'fourth']);
    assert.equal(share.running('p'), 0);
    other();
    assert.equal(share.running('q'), 0);
  });

  it('gives up a wait after waitMs with the error a starved pool gives (503)', async () => {
    const share = new ProgramShare(1, 20);
    const held = await share.acquire('p');
    await assert.rejects(share.acquire('p'), (error) => error instanceof ProgramShareTimeout && isPoolExhausted(error));
    held();
    const again = await share.acquire('p'); // the timed-out waiter left no trace in the queue
    again();
    assert.equal(share.running('p'), 0);
  });

  it('bounds only work in a program scope, and a nested transaction does not take a second turn', async () => {
    const db = {};
    shareProgramsOf(db, 2, 50); // a pool of 2: one turn per program
    let concurrent = 0;
    let highest = 0;
    const transaction = () =>
      withinProgramShare(db, async () => {
        concurrent++;
        highest = Math.max(highest, concurrent);
        await sleep(5);
        concurrent--;
      });
    await withProgramScope('p', () => Promise.all([transaction(), transaction(), transaction()]));
    assert.equal(highest, 1);
    highest = 0;
    await Promise.all([transaction(), transaction()]); // no scope: a worker's transactions
    assert.equal(highest, 2);
    const nested = await withProgramScope('p', () => withinProgramShare(db, () => withinProgramShare(db, async () => 'inner ran')));
    assert.equal(nested, 'inner ran');
  });
});
