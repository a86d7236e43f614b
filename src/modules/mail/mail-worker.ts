import { wakeablePause } from '../../domain/pauses.ts';
import { onLocalChange } from '../../db/change-watch.ts';
import type { Config } from '../../config.ts';
import type { Clock } from '../../domain/clock.ts';
import type { Db } from '../../db/transaction.ts';
import { claimDueMail, MAIL_QUEUED_CHANNEL, markMailAttemptFailed, markMailSent } from './mail.repository.ts';
import type { MailTransport } from './mail-transport.ts';

// Sends the mail outbox: runs beside the webhook worker (in `tandem serve` unless WORKER=off,
// and in `tandem worker`). Messages are leased, so several workers never send one twice while
// each is alive; a worker killed mid-send leaves its lease to expire and the message is sent
// again (at least once, as SMTP itself is). A failed attempt is retried on MAIL_RETRY_SCHEDULE,
// then given up (failed_at, with the last error).

export interface MailWorker {
  start(): void;
  stop(): Promise<void>;
}

export interface MailWorkerOptions {
  db: Db;
  config: Pick<Config, 'mailFrom' | 'mailRetrySchedule'>;
  clock: Clock;
  transport: MailTransport;
  log: { warn(obj: object, msg: string): void; error(obj: object, msg: string): void };
  pollMs?: number;
}

const BATCH = 20;
/** A worker that has not finished a message in this long is presumed dead; another takes it over. */
const LEASE_MS = 120_000;

export function createMailWorker(options: MailWorkerOptions): MailWorker {
  const { db, config, clock, transport, log } = options;
  const pollMs = options.pollMs ?? 2000;
  let running = false;
  let loop: Promise<void> | null = null;
  const { pause: idle, wake } = wakeablePause();

  async function pass(): Promise<number> {
    const now = clock();
    const claimed = await claimDueMail(db, now.toISOString(), new Date(now.getTime() + LEASE_MS).toISOString(), BATCH);
    for (const mail of claimed) {
      try {
        await transport.send({ from: config.mailFrom, to: mail.to_address, subject: mail.subject, text: mail.text_body, html: mail.html_body });
        await markMailSent(db, mail.id, clock().toISOString());
      } catch (error) {
        const attempts = Number(mail.attempts) + 1;
        const delay = config.mailRetrySchedule[attempts - 1];
        const at = clock();
        const reason = error instanceof Error ? error.message : String(error);
        await markMailAttemptFailed(db, mail.id, attempts, delay === undefined ? null : new Date(at.getTime() + delay).toISOString(), reason, at.toISOString());
        log.warn({ mailId: mail.id, kind: mail.kind, attempts, error: reason, givenUp: delay === undefined }, 'e-mail not sent');
      }
    }
    return claimed.length;
  }

  async function run(): Promise<void> {
    while (running) {
      let sent = 0;
      try {
        sent = await pass();
      } catch (error) {
        log.error({ err: error }, 'mail worker pass failed');
      }
      if (sent === BATCH || !running) continue;
      // Idle: wait for the poll interval, or less when woken (the timer is then cancelled).
      await idle(pollMs);
    }
  }

  // Woken when this process queues mail (after its transaction commits); mail queued by other
  // processes waits for the poll.
  let stopHearing: (() => void) | null = null;
  return {
    start() {
      if (running) return;
      running = true;
      stopHearing = onLocalChange(MAIL_QUEUED_CHANNEL, wake);
      loop = run();
    },
    async stop() {
      running = false;
      stopHearing?.();
      wake();
      await loop;
    },
  };
}
