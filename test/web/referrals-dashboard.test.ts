// Referrals on the dashboard over real HTTP (issue 21 item 1): recording one by hand with the
// API's rules and errors (checked through the JSON API), and the list's search and filters.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { issueToken } from '../../src/modules/tokens/token.service.ts';
import { apiClient, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { BrowserSession, uniqueEmail } from '../helpers/browser-session.ts';

let t: TestServer;
let merchant: BrowserSession;
let program: { id: string; base: string };
let api: ApiClient;
let jane: { id: string; email: string };

before(async () => {
  t = await startTestServer({ worker: false });
  merchant = await BrowserSession.signUp(t.url);
  program = await merchant.createProgram({ name: 'Acme', commissionRate: '20' });
  const { token } = await issueToken(t.server.database.db, { programId: program.id, name: 'site', kind: 'api_key' });
  api = apiClient(t.url, token, program.id);
  jane = (await api.post('/affiliates', { firstName: 'Jane', lastName: 'Cooper', email: uniqueEmail('jane'), affiliateLink: 'jane-c' })).body;
});
after(() => t.close());

const newReferral = (fields: Record<string, string>) => merchant.submit(`${program.base}/referrals/new`, `${program.base}/referrals/new`, fields);

describe('recording a referral by hand', () => {
  it('records it as POST /referrals does, credited to the affiliate named by link', async () => {
    const email = uniqueEmail('sam');
    const done = await newReferral({ name: 'Sam Lee', email, referredUserExternalId: 'cus_hand_1', affiliateId: 'jane-c', affiliateEmail: '', promoCode: '', plan: 'pro' });
    assert.equal(done.status, 303, done.text.slice(0, 400));
    const [referral] = (await api.get('/referrals?externalId=cus_hand_1')).body;
    assert.equal(referral.affiliateId, jane.id);
    assert.equal(referral.email, email);
    assert.equal(referral.plan, 'pro');
    assert.match(await merchant.page(done.location!), /Referral recorded\./);
  });

  it('refuses what the API refuses, at the field, and records nothing', async () => {
    const before = (await api.get('/referrals')).body.length;
    const missing = await newReferral({ name: 'No One', email: uniqueEmail('n'), referredUserExternalId: 'cus_hand_2', affiliateId: '', affiliateEmail: '', promoCode: '' });
    assert.equal(missing.status, 422);
    assert.match(missing.text, /id="f-affiliateId-error">AffiliateId, affiliateEmail or promoCode is required\./);
    const badEmail = await newReferral({ name: 'Bad', email: 'nope', referredUserExternalId: 'cus_hand_3', affiliateId: 'jane-c' });
    assert.equal(badEmail.status, 422);
    assert.match(badEmail.text, /<input id="f-email"[^>]*aria-invalid="true"/);
    const twice = await newReferral({ name: 'Sam Again', email: uniqueEmail('again'), referredUserExternalId: 'cus_hand_1', affiliateId: 'jane-c' });
    assert.equal(twice.status, 409);
    assert.equal((await api.get('/referrals')).body.length, before);
  });
});

describe('the referrals list', () => {
  it('searches inside names and e-mails, filters by status and affiliate, and counts what matches', async () => {
    for (const [name, status] of [['Ada Byron', 'active'], ['Bob Adams', 'inactive'], ['Cy Young', 'active']] as const) {
      const res = await api.post('/referrals', { name, email: uniqueEmail(name.split(' ')[0]!.toLowerCase()), referredUserExternalId: `cus_${name.replace(' ', '_')}`, affiliateId: jane.id, status });
      assert.equal(res.status, 201, JSON.stringify(res.body));
    }
    const ad = await merchant.page(`${program.base}/referrals?q=ad`);
    assert.match(ad, /Ada Byron/);
    assert.match(ad, /Bob Adams/);
    assert.doesNotMatch(ad, /Cy Young/);
    assert.match(ad, /<strong>2 referrals<\/strong> match these filters/);
    const inactive = await merchant.page(`${program.base}/referrals?status=inactive`);
    assert.match(inactive, /Bob Adams/);
    assert.doesNotMatch(inactive, /Ada Byron/);
    assert.match(await merchant.page(`${program.base}/referrals?affiliate=jane-c&q=young`), /Cy Young/);
    const badDate = await merchant.get(`${program.base}/referrals?from=2026-13-01`);
    assert.equal(badDate.status, 200);
    assert.match(badDate.text, /id="f-from-error">Use a date such as 2026-01-31\./);
  });
});
