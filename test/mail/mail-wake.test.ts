// The mail worker wakes when its own process queues mail (after that transaction commits), not
// after every API write and not only at its poll: with a poll of a minute, a queued message still
// leaves at once. The transport stands in for the mail server (the outside world).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createMailWorker } from '../../src/modules/mail/mail-worker.ts';
import { queueMail } from '../../src/modules/mail/mail.service.ts';
import { inTransaction } from '../../src/db/transaction.ts';
import { systemClock } from '../../src/domain/clock.ts';
import { useMigratedDatabase } from '../helpers/migrated-database.ts';

const migrated = useMigratedDatabase();
const quiet = { warn() {}, error() {} };

describe('the mail worker', () => {
  it('sends mail queued by its process at once, long before its next poll, and none whose transaction rolled back', async () => {
    const db = migrated();
    const sent: string[] = [];
    const transport = { send: async (message: { to: string }) => void sent.push(message.to), close() {} };
    const worker = createMailWorker({ db, config: { mailFrom: 'Tandem <no-reply@tandem.test>', mailRetrySchedule: [1000] }, clock: systemClock, transport, log: quiet, pollMs: 60_000 });
    worker.start();
    try {
      await new Promise((resolve) => setTimeout(resolve, 200)); // its first pass found nothing: now it waits a minute
      const mail = (to: string) => ({ kind: 'password_reset' as const, to, subject: 'Reset', text: 'link', html: '<p>link</p>' });
      await assert.rejects(
        inTransaction(db, async (tx) => {
          await queueMail(tx, null, mail('rolled-back@example.com'), new Date().toISOString());
          throw new Error('the change fails');
        }),
      );
      await inTransaction(db, (tx) => queueMail(tx, null, mail('jane@example.com'), new Date().toISOString()));
      for (let i = 0; i < 100 && sent.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
      assert.deepEqual(sent, ['jane@example.com'], 'sent within 5 s of the commit (the poll is a minute away), the rolled-back one never');
    } finally {
      await worker.stop();
    }
  });
});
