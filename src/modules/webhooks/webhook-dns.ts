import { Resolver } from 'node:dns/promises';
import type { LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import type { Config } from '../../config.ts';
import { refusedAddressMessage, refusedAddressRange } from './url-guard.ts';

// DNS for webhook hosts, kept apart from the rest of the process. dns.lookup (getaddrinfo)
// runs on libuv's four shared threads, so a tenant whose host names never answer would make
// every other lookup in the process wait. Here names go to c-ares (dns.promises.Resolver,
// asynchronous sockets on the event loop, no thread) with a deadline of our own, and each
// program runs at most `lookupsPerProgram` lookups at once: more wait in that program's own
// queue, and past MAX_WAITING_LOOKUPS a lookup fails at once. One program's slow names never
// delay another program's lookups. Used by the subscribe check (when the SSRF guard is on) and
// by the sender at every connection (guard on or off).

export type WebhookDnsSettings = Pick<Config, 'webhookDnsTimeoutMs' | 'webhookDnsServers' | 'webhookDnsLookupsPerProgram'>;

/** Lookups of one program that may wait for a slot; past it a lookup fails with EBUSY. */
export const MAX_WAITING_LOOKUPS = 64;

/** Why a webhook host has no address to dial. */
export class WebhookDnsError extends Error {
  constructor(
    readonly code: 'ETIMEOUT' | 'ENOTFOUND' | 'EBUSY' | 'EPRIVATE',
    message: string,
  ) {
    super(message);
  }
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** RFC 6761: `localhost` and names under it are loopback, answered without a query. */
const LOOPBACK: readonly ResolvedAddress[] = [
  { address: '127.0.0.1', family: 4 },
  { address: '::1', family: 6 },
];

interface Lane {
  running: number;
  waiting: Array<() => void>;
}

export interface ResolveOptions {
  /** Whose lookup this is: lookups are bounded per program. */
  programId?: string | null;
  /** Skip the SSRF check of the answers (WEBHOOK_ALLOW_PRIVATE_URLS). */
  allowPrivate: boolean;
  /** Gives up a lookup still waiting for its program's slot (the send was abandoned). */
  signal?: AbortSignal;
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

export class WebhookDns {
  private readonly resolver: Resolver;
  private readonly lanes = new Map<string, Lane>();

  constructor(private readonly settings: WebhookDnsSettings) {
    // Two tries, in case a packet is lost; c-ares backs off between them, so the deadline in
    // `query` is what bounds the whole.
    this.resolver = new Resolver({ timeout: Math.ceil(settings.webhookDnsTimeoutMs / 2), tries: 2 });
    if (settings.webhookDnsServers.length > 0) this.resolver.setServers([...settings.webhookDnsServers]);
  }

  /**
   * The addresses of `host` (a name, or an address literal returned as is), IPv4 first;
   * unless `allowPrivate`, refused with EPRIVATE when any of them is not public.
   */
  async resolve(host: string, options: ResolveOptions): Promise<ResolvedAddress[]> {
    const family = isIP(host);
    const addresses = family !== 0 ? [{ address: host, family: family as 4 | 6 }] : await this.resolveName(host, options);
    if (!options.allowPrivate) {
      for (const { address } of addresses) {
        const range = refusedAddressRange(address);
        if (range !== null) throw new WebhookDnsError('EPRIVATE', refusedAddressMessage(host, address, range));
      }
    }
    return addresses;
  }

  /**
   * A `lookup` for http.request that resolves through `resolve`, so that the address checked
   * is the address dialled.
   */
  lookupFor(options: ResolveOptions): (hostname: string, lookupOptions: { all?: boolean; family?: number | string }, callback: LookupCallback) => void {
    return (hostname, lookupOptions, callback) => {
      const wanted = lookupOptions.family === 4 || lookupOptions.family === 'IPv4' ? 4 : lookupOptions.family === 6 || lookupOptions.family === 'IPv6' ? 6 : 0;
      this.resolve(hostname, options).then(
        (all) => {
          const addresses = wanted === 0 ? all : all.filter((a) => a.family === wanted);
          const first = addresses[0];
          if (!first) return callback(Object.assign(new Error(`${hostname} has no IPv${wanted} address`), { code: 'ENOTFOUND' }), []);
          if (lookupOptions.all) callback(null, addresses);
          else callback(null, first.address, first.family);
        },
        (error: unknown) => callback(error as NodeJS.ErrnoException, []),
      );
    };
  }

  private async resolveName(host: string, options: ResolveOptions): Promise<ResolvedAddress[]> {
    const name = host.toLowerCase().replace(/\.$/, '');
    if (name === 'localhost' || name.endsWith('.localhost')) return [...LOOPBACK];
    const release = await this.acquire(options.programId ?? '', options.signal);
    return this.query(name, release);
  }

  /** A and AAAA at once; whatever has answered by the deadline counts. */
  private async query(name: string, release: () => void): Promise<ResolvedAddress[]> {
    const found: ResolvedAddress[] = [];
    const codes: string[] = [];
    const ask = (family: 4 | 6) =>
      (family === 4 ? this.resolver.resolve4(name) : this.resolver.resolve6(name)).then(
        (list) => found.push(...list.map((address) => ({ address, family }))),
        (error: NodeJS.ErrnoException) => codes.push(error.code ?? 'error'),
      );
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), this.settings.webhookDnsTimeoutMs);
    });
    const outcome = await Promise.race([Promise.all([ask(4), ask(6)]).then(() => 'done' as const), deadline]);
    clearTimeout(timer);
    release();
    if (found.length > 0) return found.sort((a, b) => a.family - b.family);
    if (outcome === 'late' || codes.includes('ETIMEOUT')) {
      throw new WebhookDnsError('ETIMEOUT', `DNS did not answer for ${name} within ${this.settings.webhookDnsTimeoutMs} ms`);
    }
    throw new WebhookDnsError('ENOTFOUND', `${name} has no A or AAAA record`);
  }

  /** Waits for one of the program's lookup slots; the function returned gives it back. */
  private async acquire(programId: string, signal?: AbortSignal): Promise<() => void> {
    let lane = this.lanes.get(programId);
    if (!lane) {
      lane = { running: 0, waiting: [] };
      this.lanes.set(programId, lane);
    }
    const current = lane;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      const next = current.waiting.shift();
      if (next) return next(); // the slot passes straight to the next in line
      current.running--;
      if (current.running === 0) this.lanes.delete(programId);
    };
    if (current.running < this.settings.webhookDnsLookupsPerProgram) {
      current.running++;
      return release;
    }
    if (current.waiting.length >= MAX_WAITING_LOOKUPS) {
      throw new WebhookDnsError('EBUSY', `too many webhook DNS lookups are waiting for this program (${MAX_WAITING_LOOKUPS}); try again later`);
    }
    signal?.throwIfAborted();
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const at = current.waiting.indexOf(take);
        if (at !== -1) current.waiting.splice(at, 1);
        reject(signal!.reason);
      };
      const take = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      current.waiting.push(take);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    return release;
  }
}

const shared = new Map<string, WebhookDns>();

/**
 * The process's webhook resolver for these settings: the API's subscribe check and the
 * delivery worker share it, so a program's bound counts both.
 */
export function webhookDnsFor(settings: WebhookDnsSettings): WebhookDns {
  const key = `${settings.webhookDnsTimeoutMs}|${settings.webhookDnsLookupsPerProgram}|${settings.webhookDnsServers.join(',')}`;
  let dns = shared.get(key);
  if (!dns) {
    dns = new WebhookDns(settings);
    shared.set(key, dns);
  }
  return dns;
}
