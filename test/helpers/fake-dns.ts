import { createSocket } from 'node:dgram';
import type { AddressInfo } from 'node:net';

// A tiny authoritative DNS server on 127.0.0.1 UDP for webhook tests (point
// WEBHOOK_DNS_SERVERS at it). It answers A and AAAA from a fixed table, says NXDOMAIN for
// names it does not know, and never answers anything under `blackhole.test`: a host whose
// DNS hangs, as a hostile tenant would choose.

export interface FakeDns {
  /** "127.0.0.1:port", as WEBHOOK_DNS_SERVERS takes it. */
  server: string;
  /** Every question received, as "name type" ("good.test A"), in order. */
  queries: string[];
  close(): Promise<void>;
}

const TYPE_A = 1;
const TYPE_AAAA = 28;

/** The answers: name → A and AAAA records. */
const RECORDS: Record<string, { a?: string[]; aaaa?: string[] }> = {
  'good.test': { a: ['127.0.0.1'] },
  'public.test': { a: ['93.184.216.34'] },
  // Public-looking name, private answer only over IPv6 (NAT64 embedding 127.0.0.1).
  'nat64.test': { aaaa: ['64:ff9b::7f00:1'] },
  // One public and one private address: the guard refuses the host.
  'mixed.test': { a: ['93.184.216.34', '10.0.0.7'] },
};

function readName(message: Buffer, offset: number): { name: string; end: number } {
  const labels: string[] = [];
  let at = offset;
  for (let guard = 0; guard < 128; guard++) {
    const length = message[at];
    if (length === undefined) throw new Error('truncated name');
    if (length === 0) return { name: labels.join('.').toLowerCase(), end: at + 1 };
    labels.push(message.subarray(at + 1, at + 1 + length).toString('latin1'));
    at += 1 + length;
  }
  throw new Error('name too long');
}

function ipv6Bytes(address: string): Buffer {
  const [head = '', tail = ''] = address.split('::');
  const groups = (part: string) => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const left = groups(head);
  const right = groups(tail);
  const all = [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
  const bytes = Buffer.alloc(16);
  all.forEach((group, i) => bytes.writeUInt16BE(group, i * 2));
  return bytes;
}

function answer(query: Buffer, name: string, type: number, questionEnd: number): Buffer {
  const record = RECORDS[name];
  const data =
    type === TYPE_A ? (record?.a ?? []).map((a) => Buffer.from(a.split('.').map(Number))) : type === TYPE_AAAA ? (record?.aaaa ?? []).map(ipv6Bytes) : [];
  const header = Buffer.alloc(12);
  query.copy(header, 0, 0, 2); // the id
  // QR, opcode 0, AA, RD copied, RA; RCODE 3 (NXDOMAIN) for unknown names.
  header.writeUInt16BE(0x8400 | (query.readUInt16BE(2) & 0x0100) | 0x0080 | (record ? 0 : 3), 2);
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(data.length, 6);
  const question = query.subarray(12, questionEnd);
  const answers = data.map((rdata) => {
    const fixed = Buffer.alloc(12);
    fixed.writeUInt16BE(0xc00c, 0); // a pointer to the question's name
    fixed.writeUInt16BE(type, 2);
    fixed.writeUInt16BE(1, 4); // class IN
    fixed.writeUInt32BE(5, 6); // TTL
    fixed.writeUInt16BE(rdata.length, 10);
    return Buffer.concat([fixed, rdata]);
  });
  return Buffer.concat([header, question, ...answers]);
}

/** `port` 0 (the default) takes a free one. */
export async function startFakeDns(port = 0): Promise<FakeDns> {
  const socket = createSocket('udp4');
  const queries: string[] = [];
  socket.on('message', (message, peer) => {
    try {
      const { name, end } = readName(message, 12);
      const type = message.readUInt16BE(end);
      queries.push(`${name} ${type === TYPE_A ? 'A' : type === TYPE_AAAA ? 'AAAA' : type}`);
      if (name === 'blackhole.test' || name.endsWith('.blackhole.test')) return; // never answers
      socket.send(answer(message, name, type, end + 4), peer.port, peer.address);
    } catch {
      // not a query this server understands: no answer
    }
  });
  await new Promise<void>((resolve) => socket.bind(port, '127.0.0.1', resolve));
  return {
    server: `127.0.0.1:${(socket.address() as AddressInfo).port}`,
    queries,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
