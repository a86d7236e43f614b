// One module writes each table (issue 30): a file that inserts into, updates or deletes from a
// table its folder does not own fails here, and so does a write of a counter column (what an
// affiliate or a link has earned, referred and been clicked) outside the ledger. Reads are
// free; writes go through the owner's functions. Exceptions are named below with their reason.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..');
const SRC = join(ROOT, 'src');

/** The folder that owns each table: a module (`modules/<name>`) or a floor (`http`, `db`, `web`). */
const OWNERS: Record<string, string> = {
  affiliate_counts: 'modules/affiliates',
  affiliate_links: 'modules/affiliates',
  affiliates: 'modules/affiliates',
  api_tokens: 'modules/tokens',
  attempt_counters: 'modules/throttling',
  authorization_codes: 'modules/connect',
  billing_connections: 'modules/billing',
  billing_customers: 'modules/billing',
  billing_disputes: 'modules/billing',
  billing_events: 'modules/billing',
  billing_payments: 'modules/billing',
  click_days: 'modules/ledger',
  clicks: 'modules/tracking',
  commission_entries: 'modules/ledger',
  coupons: 'modules/coupons',
  events: 'modules/events',
  idempotency_keys: 'http',
  instance_keys: 'db',
  integrations: 'modules/integrations',
  mail_outbox: 'modules/mail',
  outbox_state: 'modules/events',
  password_reset_tokens: 'modules/users',
  payouts: 'modules/payouts',
  portal_login_tokens: 'modules/portal',
  portal_sessions: 'modules/portal',
  programs: 'modules/programs',
  promotional_codes: 'modules/coupons',
  referrals: 'modules/referrals',
  sale_days: 'modules/ledger',
  sale_refunds: 'modules/sales',
  sales: 'modules/sales',
  sessions: 'web',
  unpaid_days: 'modules/ledger',
  users: 'modules/users',
  webhook_attempts: 'modules/webhooks',
  webhook_deliveries: 'modules/webhooks',
  webhook_fanout: 'modules/webhooks',
  webhooks: 'modules/webhooks',
};

/** The counter columns (CONTRACT's aggregates): only the ledger moves them. */
const COUNTERS: Record<string, string[]> = {
  affiliates: ['number_of_referred_users', 'total_commission_earned', 'number_of_clicks', 'number_of_sales', 'total_sales_amount', 'total_refunded_amount'],
  affiliate_links: ['referrals', 'sales', 'total_revenue', 'clicks'],
};

/** Writes outside the owner, each with its reason: `file table`. */
const EXCEPTIONS: Record<string, string> = {
  'src/modules/ledger/ledger.repository.ts sales':
    "a forced delete takes back what it credited: the ledger deletes a referral's or an affiliate's sales with their counters and void entries (affiliates and referrals sit below sales)",
  'src/modules/integrations/integration.repository.ts authorization_codes': 'removing an integration removes the connect codes issued for it (connect sits above integrations)',
  'src/modules/users/user.service.ts sessions': "a password change or reset signs the user out everywhere: users/ deletes the user's sessions (the web's table, read by the web's session store)",
  'src/db/copy-data.ts outbox_state': 'tandem migrate-data copies every table between databases, the outbox position with them',
};

const TABLES = Object.keys(OWNERS);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'migrations' ? [] : sourceFiles(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

/** The file's text without comments (a comment may say "update affiliates" without doing it). */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
}

interface Write {
  table: string;
  /** The statement's text from the write on: its columns. */
  statement: string;
}

/** Every write in the text: Kysely's insertInto/updateTable/deleteFrom and raw insert/update/delete. */
function writesIn(text: string): Write[] {
  const writes: Write[] = [];
  const builder = /\b(insertInto|updateTable|deleteFrom|replaceInto|mergeInto)\(\s*'([a-z_]+)(?:\s+as\s+\w+)?'/g;
  for (const match of text.matchAll(builder)) {
    const rest = text.slice(match.index);
    const end = rest.search(/\.execute\w*\(|;\n/);
    writes.push({ table: match[2]!, statement: (match[1] === 'updateTable' ? 'update ' : '') + rest.slice(0, end === -1 ? 400 : end) });
  }
  // Raw SQL: the statement's own shape (`update t set`, `insert into t (`, `delete from t where`),
  // so prose that says "update affiliates" is not taken for a write.
  const raw = /\b(insert\s+into|update|delete\s+from)\s+([a-z_]+)(?=\s*\(|\s+set\b|\s+(?:where|returning|using)\b|\s*`)/gi;
  for (const match of text.matchAll(raw)) {
    if (!TABLES.includes(match[2]!)) continue;
    const rest = text.slice(match.index);
    const end = rest.search(/\bwhere\b|`/i);
    writes.push({ table: match[2]!, statement: rest.slice(0, end === -1 ? 400 : end) });
  }
  return writes;
}

/** The owning folder of a file: `modules/<name>` or the floor under src/. */
function folderOf(file: string): string {
  const parts = relative(SRC, file).split('/');
  return parts[0] === 'modules' ? `modules/${parts[1]}` : parts[0]!;
}

describe('table owners', () => {
  const files = sourceFiles(SRC);

  it('finds the writes it checks (the scan is not blind)', () => {
    const found = new Set(files.flatMap((file) => writesIn(code(readFileSync(file, 'utf8'))).map((write) => write.table)));
    for (const table of ['sales', 'commission_entries', 'affiliates', 'affiliate_counts', 'events', 'programs', 'payouts']) assert.ok(found.has(table), `a write of ${table} is found`);
    assert.ok(writesIn("db.updateTable('affiliates').set({ total_commission_earned: 1 }).execute()")[0]!.statement.includes('total_commission_earned'));
  });

  it('each table is written only by the folder that owns it, counters only by the ledger', () => {
    const wrong: string[] = [];
    for (const file of files) {
      const name = relative(ROOT, file);
      const folder = folderOf(file);
      for (const write of writesIn(code(readFileSync(file, 'utf8')))) {
        const owner = OWNERS[write.table];
        if (owner === undefined) {
          wrong.push(`${name} writes ${write.table}, a table with no owner in this test: add it`);
          continue;
        }
        const counters = (COUNTERS[write.table] ?? []).filter((column) => /^update\b/i.test(write.statement) && new RegExp(`\\b${column}\\b\\s*[:=]`).test(write.statement));
        const expected = counters.length > 0 ? 'modules/ledger' : owner;
        // The ledger's counter statements (ledger.repository) update these tables' counters only.
        const ledgerCounters = folder === 'modules/ledger' && COUNTERS[write.table] !== undefined && /^update\b/i.test(write.statement);
        if (folder !== expected && !ledgerCounters && EXCEPTIONS[`${name} ${write.table}`] === undefined) {
          wrong.push(`${name} writes ${write.table}${counters.length > 0 ? ` (counters ${counters.join(', ')})` : ''}, owned by src/${expected}`);
        }
      }
    }
    assert.deepEqual(wrong, []);
  });

  it('names only exceptions that are still needed', () => {
    for (const key of Object.keys(EXCEPTIONS)) {
      const [file, table] = key.split(' ');
      const writes = writesIn(code(readFileSync(join(ROOT, file!), 'utf8')));
      assert.ok(writes.some((write) => write.table === table), `${key} no longer writes ${table}: drop the exception`);
    }
  });
});
