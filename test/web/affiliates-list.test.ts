// The affiliate list on the dashboard (issue 21 item 1): search inside names and e-mails,
// status filter, sorting by commission (paged by keyset), the count, and the CSV of what it shows.
import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { issueToken } from '../../src/modules/tokens/token.service.ts';
import { apiClient, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { BrowserSession, uniqueEmail } from '../helpers/browser-session.ts';

let t: TestServer;
let merchant: BrowserSession;
let base: string;

before(async () => {
  t = await startTestServer({ worker: false });
  merchant = await BrowserSession.signUp(t.url);
  const program = await merchant.createProgram({ name: 'Acme', commissionRate: '10' });
  base = program.base;
  const { token } = await issueToken(t.server.database.db, { programId: program.id, name: 'site', kind: 'api_key' });
  const api = apiClient(t.url, token, program.id);
  const people = [['Jane', 'Cooper'], ['Omar', 'Haddad'], ['=cmd', 'Evil'], ['Lee', 'Coopersmith']];
  for (const [i, [firstName, lastName]] of people.entries()) {
    const a = (await api.post('/affiliates', { firstName, lastName, email: uniqueEmail(firstName!.replace('=', '').toLowerCase()), affiliateLink: `aff-${i}` })).body;
    assert.ok(a.id);
    if (i > 0) assert.equal((await api.post('/sales', { referralId: a.id, name: 'C', email: uniqueEmail('c'), totalEarned: i * 100 })).status, 201);
    if (firstName === 'Omar') assert.equal((await api.put('/affiliates', { id: a.id, status: 'inactive' })).status, 200);
  }
});
after(() => t.close());

const names = (page: string) => [...page.matchAll(/<td><a href="[^"]+\/affiliates\/[0-9a-f-]{36}">([^<]+)<\/a><\/td>/g)].map((m) => m[1]);

it('searches inside names, filters by status, sorts by commission, counts what matches', async () => {
  const coop = await merchant.page(`${base}/affiliates?q=oop`);
  assert.deepEqual(names(coop).sort(), ['Jane Cooper', 'Lee Coopersmith']);
  assert.match(coop, /<strong>2 affiliates<\/strong> match these filters/);
  assert.deepEqual(names(await merchant.page(`${base}/affiliates?status=inactive`)), ['Omar Haddad']);
  assert.deepEqual(names(await merchant.page(`${base}/affiliates?sort=commission-desc`)), ['Lee Coopersmith', '=cmd Evil', 'Omar Haddad', 'Jane Cooper']);
  assert.match(await merchant.page(`${base}/affiliates?q=nobody`), /No affiliate matches these filters/);
});

it('downloads the filtered list as formula-safe CSV', async () => {
  const csv = await merchant.get(`${base}/affiliates.csv?sort=commission-desc`);
  assert.equal(csv.status, 200);
  assert.match(csv.headers.get('content-type') ?? '', /^text\/csv/);
  const lines = csv.text.trimEnd().split('\r\n');
  assert.equal(lines[0], 'id,first_name,last_name,email,link,status,approval,commission_rate,referrals,clicks,currency,commission_earned,payout_email,payment_method,created_at');
  assert.equal(lines.length, 5);
  assert.match(lines[1]!, /,Lee,Coopersmith,.*,aff-3,active,approved,,1,0,USD,30\.00,/);
  assert.match(lines[2]!, /,'=cmd,Evil,/);
  const inactive = (await merchant.get(`${base}/affiliates.csv?status=inactive`)).text.trimEnd().split('\r\n');
  assert.equal(inactive.length, 2);
  assert.match(inactive[1]!, /,Omar,Haddad,/);
});
