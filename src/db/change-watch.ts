import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import pg from 'pg';
import { sql } from 'kysely';
import type SqliteDatabase from 'better-sqlite3';
import { dialectOf } from './dialect.ts';
import { afterCommit, type Tx } from './transaction.ts';

// How a process learns that another process changed something it caches (revoked a token,
// changed a program). On PostgreSQL the changing transaction sends NOTIFY on a channel and
// every process LISTENs on a connection of its own; a lost connection means notifications may
// have been missed, so the cache is dropped and not trusted until the listener is back. On
// SQLite other processes (the CLI beside the server) write the same file: the connection's
// `data_version` changes whenever another connection committed, and it is checked before the
// cache is used (at most once a millisecond).

/** The channel that says cached token answers are stale: a token was revoked or its program changed. */
export const TOKEN_CHANGE_CHANNEL = 'tandem_token_changes';

// This process's own changes are not seen by its watches (SQLite's data_version moves only for
// other connections; a NOTIFY comes back later): they are told here, after commit.
const localChanges = new EventEmitter().setMaxListeners(0);

/**
 * In the changing transaction: every process hears of the change once it commits (this one
 * through `onLocalChange`; others through the NOTIFY, which PostgreSQL delivers only on
 * commit, or SQLite's data_version).
 */
export async function announceChange(tx: Tx, channel: string): Promise<void> {
  if (dialectOf(tx) === 'postgres') await sql`select pg_notify(${channel}, '')`.execute(tx);
  announceLocalChange(tx, channel);
}

/** Tells this process only (no NOTIFY), once `tx` commits: for work its own workers pick up, such as queued mail. */
export function announceLocalChange(tx: Tx, channel: string): void {
  afterCommit(tx, () => localChanges.emit(channel));
}

/** Calls `onChange` after each change this process commits on `channel`; returns the unsubscribe. */
export function onLocalChange(channel: string, onChange: () => void): () => void {
  localChanges.on(channel, onChange);
  return () => localChanges.off(channel, onChange);
}

export interface ChangeWatch {
  /**
   * Whether the cache may be used now. Calls the watch's `onChange` first if another process
   * changed the database since the last call (SQLite); false while the listener is not
   * connected (PostgreSQL).
   */
  trustCache(): boolean;
  close(): Promise<void>;
}

/**
 * How often, at most, a SQLite watch asks for data_version: once per millisecond rather than
 * once per request (a statement each, a few µs). A change another process commits is seen by
 * requests that start a millisecond later or more.
 */
const SQLITE_CHECK_EVERY_MS = 1;

export function watchSqliteChanges(connection: SqliteDatabase.Database, onChange: () => void): ChangeWatch {
  // Prepared once: Database#pragma prepares its statement on every call, a cost paid per request here.
  const statement = connection.prepare('pragma data_version').pluck();
  const dataVersion = () => statement.get() as number;
  let seen = dataVersion();
  let checkedAt = performance.now();
  return {
    trustCache() {
      const now = performance.now();
      if (now - checkedAt < SQLITE_CHECK_EVERY_MS) return true;
      checkedAt = now;
      const version = dataVersion();
      if (version !== seen) {
        seen = version;
        onChange();
      }
      return true;
    },
    close: async () => {},
  };
}

/** Reconnect delays after a lost listener connection, ms (the last one repeats). */
const RECONNECT_MS = [100, 500, 1000, 2000, 5000];
/** How long a probe notification may take to come back before the listener is judged deaf. */
const PROBE_TIMEOUT_MS = 2000;
/** How often the listener probes itself again: a deaf one to see if it hears now, a healthy one to see that it still does. */
const REPROBE_MS = 30_000;

/**
 * `notify` sends a notification on `channel` through the application's own pool. Once LISTENing,
 * the watch sends itself a probe that way and trusts the cache only after the probe came back:
 * behind a pooler that does not carry notifications (PgBouncer in transaction mode) the probe
 * never arrives and the cache is simply not used, rather than trusted while deaf.
 */
export function listenPostgres(clientConfig: pg.ClientConfig, channel: string, onChange: () => void, notify: (payload: string) => Promise<void>): ChangeWatch {
  let client: pg.Client | null = null;
  let listening = false;
  let closed = false;
  let failures = 0;
  let timer: NodeJS.Timeout | undefined;
  let probeTimer: NodeJS.Timeout | undefined;
  let awaitedProbe: string | null = null;

  const probe = (listener: pg.Client) => {
    if (client !== listener || closed) return;
    awaitedProbe = `probe:${randomUUID()}`;
    const sent = awaitedProbe;
    notify(sent).catch(() => {});
    probeTimer = setTimeout(() => {
      if (awaitedProbe !== sent) return;
      // A listener that heard before and no longer does lost its connection without being told
      // (a silent network drop): start over. One that never heard waits and tries again.
      if (listening) lost(listener);
      else probeTimer = setTimeout(() => probe(listener), REPROBE_MS).unref();
    }, PROBE_TIMEOUT_MS).unref();
  };

  const lost = (stale: pg.Client) => {
    if (client !== stale) return;
    client = null;
    listening = false;
    awaitedProbe = null;
    clearTimeout(probeTimer);
    onChange(); // notifications may have been missed
    stale.end().catch(() => {});
    if (!closed) timer = setTimeout(connect, RECONNECT_MS[Math.min(failures++, RECONNECT_MS.length - 1)]).unref();
  };

  const connect = () => {
    // Keepalive, so a connection dropped by the network without a word is noticed by TCP too.
    const next = new pg.Client({ ...clientConfig, keepAlive: true });
    client = next;
    next.on('error', () => lost(next));
    next.on('end', () => lost(next));
    next.on('notification', (message) => {
      if (message.channel !== channel) return;
      if (awaitedProbe !== null && message.payload === awaitedProbe) {
        // The round trip works: from now on every change reaches this process.
        awaitedProbe = null;
        clearTimeout(probeTimer);
        if (!listening) onChange(); // anything changed while the listener was away is forgotten first
        listening = true;
        probeTimer = setTimeout(() => probe(next), REPROBE_MS).unref();
        return;
      }
      if (message.payload?.startsWith('probe:')) return; // another process probing itself
      onChange();
    });
    next
      .connect()
      .then(() => next.query(`listen ${channel}`))
      .then(() => {
        if (client !== next) return;
        failures = 0;
        probe(next);
      })
      .catch(() => lost(next));
  };
  connect();

  return {
    trustCache: () => listening,
    async close() {
      closed = true;
      clearTimeout(timer);
      clearTimeout(probeTimer);
      const current = client;
      client = null;
      listening = false;
      await current?.end().catch(() => {});
    },
  };
}
