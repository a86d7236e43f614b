// The affiliates a program has, kept (issue 31): the dashboard's list ("N affiliates", with and
// without the status filter) and the overview read affiliate_counts, moved by every write that
// adds, removes or changes the status of an affiliate — the API, the dashboard's forms, the
// portal's sign-up and the merchant's decision on it, plain and forced deletes — in that write's
// transaction. Another program's counts never move; concurrent sign-ups leave them exact.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { issueToken } from '../../src/modules/tokens/token.service.ts';
import { apiClient, rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { BrowserSession, uniqueEmail } from '../helpers/browser-session.ts';
import { csrfOf, WebClient } from '../helpers/web-client.ts';
import { newAffiliate, newSale } from '../helpers/fixtures.ts';
import { assertCountersMatchRows } from '../helpers/recount.ts';
import { raceNote } from '../helpers/test-database.ts';

let t: TestServer;
let merchant: BrowserSession;

interface TestProgram {
  id: string;
  base: string;
  api: ApiClient;
}

async function newProgram(name: string): Promise<TestProgram> {
  const { id, base } = await merchant.createProgram({ name });
  const { token } = await issueToken(rawDb(t), { programId: id, name: 'site', kind: 'api_key' });
  return { id, base, api: apiClient(t.url, token, id) };
}

before(async () => {
  t = await startTestServer({ worker: false });
  merchant = await BrowserSession.signUp(t.url);
});
after(() => t.close());

/** The list's "N affiliates" (no such line when nothing matches). */
async function listCount(p: TestProgram, query = ''): Promise<number> {
  const page = await merchant.page(`${p.base}/affiliates${query}`);
  const match = /<p class="totals"><strong>([\d,]+) affiliates?<\/strong>/.exec(page);
  if (match) return Number(match[1]!.replaceAll(',', ''));
  assert.match(page, /No affiliate matches these filters|No affiliates yet/, `GET affiliates${query} shows a count or says there is none`);
  return 0;
}

/** The overview's figure of affiliates. */
async function overviewCount(p: TestProgram): Promise<number> {
  const match = /data-stat="affiliates">([^<]*)</.exec(await merchant.page(p.base));
  assert.ok(match, 'the overview shows its affiliates');
  return Number(match[1]!.replaceAll(',', ''));
}

/** What the dashboard shows of the program's affiliates, every way it counts them. */
async function shown(p: TestProgram) {
  await assertCountersMatchRows(rawDb(t), p.id);
  return {
    all: await listCount(p),
    active: await listCount(p, '?status=active'),
    inactive: await listCount(p, '?status=inactive'),
    overview: await overviewCount(p),
  };
}

const expected = (active: number, inactive: number) => ({ all: active + inactive, active, inactive, overview: active + inactive });

/** A visitor applying through the portal (the program's default policy: approval). */
async function portalSignUp(slug: string, email: string): Promise<void> {
  const visitor = new WebClient(t.url);
  const page = await visitor.get(`/portal/${slug}`);
  assert.equal(page.status, 200);
  const response = await visitor.post(`/portal/${slug}/signup`, { _csrf: csrfOf(page.text), firstName: 'Portal', lastName: 'Applicant', email });
  assert.equal(response.status, 303, response.text.slice(0, 300));
  assert.equal(response.location, `/portal/${slug}?joined=pending`);
}

describe('the kept count of affiliates', () => {
  it('follows creation, sign-up, approval, rejection, (de)activation and deletes, one program at a time', async () => {
    const acme = await newProgram('Acme');
    const other = await newProgram('Other');
    assert.deepEqual(await shown(acme), expected(0, 0));

    // Created: by the API (one inactive from the start) and by the dashboard's form.
    const made = [];
    for (let i = 0; i < 4; i++) made.push(await newAffiliate(acme.api, { lastName: `Api${i}` }));
    const dormant = await newAffiliate(acme.api, { lastName: 'Dormant', status: 'INACTIVE' });
    const form = await merchant.submit(`${acme.base}/affiliates/new`, `${acme.base}/affiliates`, { firstName: 'Form', lastName: 'Made', email: uniqueEmail('form') });
    assert.equal(form.status, 303, form.text.slice(0, 300));
    for (let i = 0; i < 3; i++) await newAffiliate(other.api, { lastName: `Other${i}` });
    assert.deepEqual(await shown(acme), expected(5, 1));
    assert.deepEqual(await shown(other), expected(3, 0));

    // A refused create (the e-mail is taken) rolls its move back with it.
    assert.equal((await acme.api.post('/affiliates', { firstName: 'Twin', lastName: 'Twin', email: made[0].email })).status, 409);
    assert.deepEqual(await shown(acme), expected(5, 1));

    // Portal sign-ups wait inactive; approving activates one, rejecting leaves the other inactive.
    const slug = (await rawDb(t).selectFrom('programs').select('portal_slug').where('id', '=', acme.id).executeTakeFirstOrThrow()).portal_slug!;
    const applicants = [uniqueEmail('applicant'), uniqueEmail('applicant')];
    for (const email of applicants) await portalSignUp(slug, email);
    assert.deepEqual(await shown(acme), expected(5, 3));
    const [approved, rejected] = await Promise.all(applicants.map(async (email) => (await acme.api.get(`/affiliates?email=${encodeURIComponent(email)}`)).body));
    assert.deepEqual([approved.approval, approved.status], ['pending', 'inactive']);
    assert.equal((await acme.api.put('/affiliates', { id: approved.id, approval: 'approved' })).status, 200);
    const decided = await merchant.submit(`${acme.base}/affiliates`, `${acme.base}/affiliates/${rejected.id}/approval`, { approval: 'rejected' });
    assert.equal(decided.status, 303);
    assert.deepEqual(await shown(acme), expected(6, 2));

    // Deactivating (the dashboard's button), reactivating (the API), and changes that keep the status.
    const off = await merchant.submit(`${acme.base}/affiliates/${made[1].id}`, `${acme.base}/affiliates/${made[1].id}/status`, { status: 'inactive' });
    assert.equal(off.status, 303);
    assert.equal((await acme.api.put('/affiliates', { id: dormant.id, status: 'ACTIVE' })).status, 200);
    assert.equal((await acme.api.put('/affiliates', { id: made[2].id, status: 'active', firstName: 'Still' })).status, 200);
    assert.equal((await acme.api.put('/affiliates', { id: made[1].id, affiliateStatus: 'inactive' })).status, 200);
    assert.equal((await acme.api.put('/affiliates', { id: made[3].id, lastName: 'Renamed' })).status, 200);
    assert.deepEqual(await shown(acme), expected(6, 2));

    // Deletes: a plain one (inactive), a refused one, a forced one (active, with a sale).
    assert.equal((await acme.api.request('DELETE', `/affiliates?id=${made[1].id}`)).status, 200);
    await newSale(acme.api, { referralId: made[0].id });
    assert.equal((await acme.api.request('DELETE', `/affiliates?id=${made[0].id}`)).status, 409);
    assert.deepEqual(await shown(acme), expected(6, 1));
    assert.equal((await acme.api.request('DELETE', `/affiliates?id=${made[0].id}&force=true`)).status, 200);
    assert.deepEqual(await shown(acme), expected(5, 1));

    // A search still counts the rows it matches, with or without the status filter.
    assert.equal(await listCount(acme, '?q=applicant'), 2);
    assert.equal(await listCount(acme, '?q=applicant&status=inactive'), 1);
    assert.equal(await listCount(acme, '?q=Renamed&status=active'), 1);
    assert.equal(await listCount(acme, '?q=nobody-at-all'), 0);

    assert.deepEqual(await shown(other), expected(3, 0), "another program's counts never moved");
  });

  it(`stays exact under 20 concurrent creates and status changes of one program${raceNote}`, async () => {
    const busy = await newProgram('Busy');
    const quiet = await newProgram('Quiet');
    await newAffiliate(quiet.api);
    const first = await Promise.all(Array.from({ length: 20 }, (_, i) => newAffiliate(busy.api, { lastName: `Burst${i}` })));
    assert.deepEqual(await shown(busy), expected(20, 0));
    // Half deactivated while ten more join, some inactive from the start.
    const flips = first.slice(0, 10).map(async (a) => assert.equal((await busy.api.put('/affiliates', { id: a.id, status: 'inactive' })).status, 200));
    const joins = Array.from({ length: 10 }, (_, i) => newAffiliate(busy.api, { lastName: `Late${i}`, status: i % 2 === 0 ? 'inactive' : 'active' }));
    await Promise.all([...flips, ...joins]);
    assert.deepEqual(await shown(busy), expected(15, 15));
    // And deleted together.
    await Promise.all(first.slice(5, 15).map(async (a) => assert.equal((await busy.api.request('DELETE', `/affiliates?id=${a.id}`)).status, 200)));
    assert.deepEqual(await shown(busy), expected(10, 10));
    assert.deepEqual(await shown(quiet), expected(1, 0));
  });
});
